#!/usr/bin/env bash
# Sources the bash completion in a plain bash (no bash-completion) and checks what it offers:
# option names, the values of the options that have a fixed set, files and directories, the
# --opt=value forms, and that the options offered are exactly those `gpusort --help` lists.
# Usage: completion_test.sh GPUSORT_BINARY COMPLETION_FILE
set -euo pipefail
gpusort=$1
# shellcheck source=../../completion/gpusort.bash
source "$2"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpusort-completion-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
touch keys.bin keys.u32 other.bin
mkdir spill

failures=0

# complete WORD...: the completions of the last word after "gpusort WORD...", sorted, one a line.
complete_words() {
  COMP_WORDS=(gpusort "$@")
  COMP_CWORD=$#
  COMP_LINE="gpusort $*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _gpusort gpusort "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  ((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort
}

# expect "WORDS" EXPECTED...: the completions of WORDS are exactly EXPECTED.
expect() {
  local words=$1
  shift
  local got want
  # shellcheck disable=SC2086  # WORDS is a list of words; '' stands for an empty last word
  got=$(eval complete_words $words)
  want=$( ((${#} == 0)) || printf '%s\n' "$@" | LC_ALL=C sort)
  if [[ $got != "$want" ]]; then
    echo "completion_test: FAILED: gpusort $words<TAB>:" \
      "got [${got//$'\n'/ }], want [${want//$'\n'/ }]" >&2
    failures=$((failures + 1))
  fi
}

expect "--ty" --type
expect "--merge" --merge --merge-on
expect "--type ''" u32 u64 i32 i64 f32 f64 bytes:
expect "-t f" f32 f64
expect "--type = f6" f64                     # --type=f6, split at '=' by bash
expect "--type=f6" --type=f64                # the same where '=' does not split words
expect "--format g" gensort
expect "--algorithm ''" auto hrs onesweep cpu
expect "--direct-io ''" auto always never
expect "--merge-on h" host
expect "--check = ''" diagnose-first quiet silent
expect "--check = q" quiet
expect "--stats = ''" json
expect "-S ''"                               # a size: nothing to offer
expect "-T ''" spill
expect "--temporary-directory s" spill
expect "--output k" keys.bin keys.u32
expect "-r keys.b" keys.bin
expect "--check keys.u" keys.u32             # --check takes its value only after '='
expect "-- --t"                              # after --, words are files
expect "-o out.bin -- o" other.bin

# --devices: all, auto, none and the GPUs nvidia-smi lists (none here without a GPU driver).
devices=$(complete_words --devices '')
for want in all auto none; do
  grep -qx "$want" <<<"$devices" || {
    echo "completion_test: FAILED: --devices does not offer $want: [${devices//$'\n'/ }]" >&2
    failures=$((failures + 1))
  }
done

# Every option --help lists is offered, and nothing else.
help=$("$gpusort" --help)
# Option lines start "  -t, --type" or "      --devices"; descriptions start at column 30.
help_long=$(grep -oE '^(  -[a-zA-Z], |      )--[a-z][a-z-]*' <<<"$help" |
  grep -oE -- '--[a-z-]+' | LC_ALL=C sort)
help_short=$(grep -oE '^  -[a-zA-Z]\b' <<<"$help" | tr -d ' ' | LC_ALL=C sort)
offered_long=$(complete_words --)
offered_short=$(complete_words - | grep -vE -- '^--')
if [[ $help_long != "$offered_long" ]]; then
  echo "completion_test: FAILED: long options differ from --help:" >&2
  diff <(echo "$help_long") <(echo "$offered_long") >&2 || true
  failures=$((failures + 1))
fi
if [[ $help_short != "$offered_short" ]]; then
  echo "completion_test: FAILED: short options differ from --help:" >&2
  diff <(echo "$help_short") <(echo "$offered_short") >&2 || true
  failures=$((failures + 1))
fi

if ((failures > 0)); then
  echo "completion_test: $failures failure(s)" >&2
  exit 1
fi
echo "completion_test: ok ($(wc -w <<<"$offered_long") long and" \
  "$(wc -w <<<"$offered_short") short options)"
