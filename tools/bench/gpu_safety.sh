#!/usr/bin/env bash
# Output safety on the GPU path (the GPU machine; tests/cli/safety_test.cpp covers the CPU path
# everywhere): stdout redirected to a file, appended, FIFOs, links, modes, device nodes, file-size
# and descriptor limits, closed pipes and side outputs, each with the output validated.
# Usage: gpu_safety.sh BIN_DIR WORK_DIR [SIZE]   (prints PASS/FAIL lines; exit 1 on any FAIL)
set -u -o pipefail
bin=$1
work=$2
size=${3:-1G}
mkdir -p "$work"
cd "$work" || exit 2
G=$bin/gpusort
V=$bin/gpusort-validate
fails=0
check() {  # check NAME COMMAND...: PASS when the command succeeds within 120 s (a hang FAILs)
  local name=$1
  shift
  if timeout 120 "$@" > check.log 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name"; sed 's/^/    /' check.log | tail -n 5
    fails=$((fails + 1))
  fi
}

"$bin/gpusort-datagen" -t u64 --size "$size" -d uniform --seed 5 -o in.bin -q
cat in.bin > /dev/null

check "stdout > file" bash -c "'$G' in.bin > out.bin && '$V' -q in.bin out.bin"
check "stdout >> file (8-byte prefix kept)" bash -c \
  "printf 12345678 > app.bin && '$G' in.bin >> app.bin && [ \"\$(head -c 8 app.bin)\" = 12345678 ] &&
   tail -c +9 app.bin > app.tail && '$V' -q in.bin app.tail"
check "FIFO output stays a FIFO" bash -c \
  "rm -f fifo && mkfifo fifo && { cat fifo > got.bin & } && '$G' in.bin fifo && wait &&
   [ -p fifo ] && '$V' -q in.bin got.bin"
check "symbolic link followed and kept" bash -c \
  "cp in.bin real.bin && ln -sf real.bin link.bin && '$G' link.bin link.bin && [ -L link.bin ] &&
   '$V' -q in.bin real.bin"
check "hard links stay linked" bash -c \
  "cp in.bin h1.bin && ln -f h1.bin h2.bin && '$G' h1.bin h1.bin &&
   [ \"\$(stat -c %h h1.bin)\" = 2 ] && '$V' -q in.bin h2.bin"
check "mode 0600 kept" bash -c \
  "cp in.bin priv.bin && chmod 600 priv.bin && '$G' priv.bin priv.bin &&
   [ \"\$(stat -c %a priv.bin)\" = 600 ] && '$V' -q in.bin priv.bin"
check "device node written into, not replaced" bash -c \
  "rm -f null && mknod null c 1 3 && '$G' in.bin null && [ -c null ]"
check "ulimit -f on stdout: exit 2, File too large" bash -c \
  "(ulimit -f \$(( \$(stat -c %s in.bin) / 2048 )); '$G' in.bin > lim.bin 2> lim.err;
    [ \$? -eq 2 ] && grep -q 'File too large' lim.err)"
check "closed pipe ends quietly (141, nothing on stderr)" bash -c \
  "'$G' in.bin 2> pipe.err | head -c 100 > /dev/null; [ \${PIPESTATUS[0]} -eq 141 ] && [ ! -s pipe.err ]"
check "unwritable trace: exit 2, old output kept" bash -c \
  "printf old > keep.bin && ! '$G' --trace /nonexistent/t.json in.bin keep.bin &&
   [ \"\$(cat keep.bin)\" = old ]"
check "runs spilled under ulimit -n 64 (--gpu-memory 256M -S 512M)" bash -c \
  "(ulimit -n 64; '$G' --gpu-memory 256M -S 512M -T . --stats in.bin spill.bin) &&
   '$V' -q in.bin spill.bin"
check "stdin pipe to stdout pipe" bash -c "cat in.bin | '$G' - - | cat > pp.bin && '$V' -q in.bin pp.bin"
rm -f ./*.bin ./*.tail fifo null ./*.err check.log
echo "gpu_safety: $fails failed"
[ "$fails" -eq 0 ]
