// Nothing lost, nothing clobbered: the gpusort command against outputs that are not plain files,
// file-size and descriptor limits, signals, odd budgets and odd option values. Each test guards a
// defect found by an adversarial sweep (the table is in tests/cli/SAFETY.md). Tests that need
// root, a mount namespace or an unprivileged user skip with the reason when they cannot have it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>

#include "binary_under_test.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

namespace fs = std::filesystem;

/// The binary under test (GPUSORT_TEST_BINARY replays these tests against another build).
std::string binary() { return test::gpusort_binary(); }

struct outcome {
  int status = -1;  ///< exit status, or 128 + the signal that ended the command
  std::string err;  ///< what it printed on stderr
};

/// Runs `script` with bash, with $G the gpusort binary and the scratch dir as working directory;
/// stderr is captured. A bounded time: a hang fails instead of stalling the suite.
outcome run_script(const std::string& script, const test::scratch_dir& dir, int seconds = 60) {
  const std::string script_path = dir.file(".script.sh");
  const std::string err_path = dir.file(".stderr.txt");
  {
    std::FILE* f = std::fopen(script_path.c_str(), "w");
    std::fprintf(f, "G='%s'\ncd '%s' || exit 99\n%s\n", binary().c_str(),
                 dir.path().c_str(), script.c_str());
    std::fclose(f);
  }
  const std::string cmd = "timeout -s KILL " + std::to_string(seconds) + " bash " + script_path +
                          " 2>" + err_path;
  const int raw = std::system(cmd.c_str());
  outcome o;
  if (WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw)) o.status = 128 + WTERMSIG(raw);
  const auto bytes = test::read_file(err_path);
  o.err.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  fs::remove(script_path);
  fs::remove(err_path);
  return o;
}

/// Writes `records` random u64 keys to dir/name and returns them.
std::vector<std::byte> make_input(const test::scratch_dir& dir, const std::string& name,
                                  std::uint64_t records, std::uint64_t seed) {
  const auto data = test::random_records(records, test::make_format("u64", 8, 0), seed);
  test::write_file(dir.file(name), data);
  return data;
}

std::vector<std::byte> sorted(const std::vector<std::byte>& data) {
  return test::reference_sort(data, test::make_format("u64", 8, 0), false);
}

/// Files whose names mark them as gpusort's temporaries.
std::size_t leftover_temporaries(const test::scratch_dir& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().filename().string().find(".gpusort-") != std::string::npos) ++n;
  return n;
}

bool is_root() { return ::geteuid() == 0; }

/// True when this process may make a private mount namespace (root, unshare(1) present).
bool can_unshare_mounts() {
  return is_root() && std::system("unshare -m --fork true >/dev/null 2>&1") == 0;
}

/// Script lines for a private mount namespace in which gpusort finds no /proc, so that its
/// temporary output is named: procfs moves to .proc in the scratch directory, $P, where the
/// script still finds its processes.
const std::string private_proc =
    "mkdir .proc && mount -t proc proc .proc && umount -l /proc && P=.proc; ";

// --- 1. Standard output redirected to a file ---------------------------------------------

TEST(StdoutFile, FileSizeLimitIsAnErrorNotATruncatedOutput) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 1 << 20, test::base_seed());  // 8 MiB against a 4 MiB limit
  const outcome o = run_script("ulimit -f 4096; \"$G\" --devices none in.bin > out.bin", dir);
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("File too large"), std::string::npos) << o.err;
}

TEST(StdoutFile, RedirectedAndAppendedOutputsHoldEveryRecord) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 300007, test::base_seed() + 1);
  const outcome o = run_script(
      "\"$G\" --devices none in.bin > out.bin && printf 12345678 > app.bin && "
      "\"$G\" --devices none in.bin >> app.bin && "
      "{ printf AAAAAAAA; \"$G\" --devices none in.bin; printf ZZZZZZZZ; } > mixed.bin",
      dir);
  ASSERT_EQ(o.status, 0) << o.err;
  const auto expect = sorted(data);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), expect);
  auto app = test::read_file(dir.file("app.bin"));
  ASSERT_EQ(app.size(), 8 + expect.size());
  EXPECT_EQ(std::vector<std::byte>(app.begin() + 8, app.end()), expect);
  // Written at offsets from where the shell's position stood, which is left after the records.
  auto mixed = test::read_file(dir.file("mixed.bin"));
  ASSERT_EQ(mixed.size(), 16 + expect.size());
  EXPECT_EQ(std::vector<std::byte>(mixed.begin() + 8, mixed.end() - 8), expect);
  EXPECT_EQ(static_cast<char>(mixed.back()), 'Z');
}

TEST(StdoutFile, FullFilesystemIsAnError) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "needs root and unshare(1) to mount a small tmpfs";
  test::scratch_dir dir;
  make_input(dir, "in.bin", 2 << 20, test::base_seed() + 2);  // 16 MiB into an 8 MiB tmpfs
  const outcome o = run_script(
      "mkdir -p mnt && unshare -m --fork sh -c 'mount -t tmpfs -o size=8m none mnt && "
      "\"$0\" --devices none in.bin > mnt/so.bin' \"$G\"",
      dir);
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("No space left"), std::string::npos) << o.err;
}

TEST(OutputSpace, WaitsForSpaceThatIsStillBeingFreed) {
  // A replaced file that another process is still freeing (release_in_background) holds space
  // the next sort needs: it waits while the free space grows instead of failing at once.
  if (!can_unshare_mounts()) GTEST_SKIP() << "needs root and unshare(1) to mount a small tmpfs";
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 1 << 20, test::base_seed() + 40);  // 8 MiB
  test::write_file(dir.file("expected.bin"), sorted(data));
  // 24 MiB: the input and a 12 MiB file held open, deleted, for a second leave 4 MiB.
  const outcome o = run_script(
      "mkdir -p mnt && unshare -m --fork sh -c 'mount -t tmpfs -o size=24m none mnt && "
      "cp in.bin mnt/in.bin && head -c 12582912 /dev/zero > mnt/held && "
      "{ exec 3<mnt/held; rm mnt/held; sleep 1; } & sleep 0.3; "
      "\"$0\" --devices none mnt/in.bin mnt/out.bin && "
      "cmp mnt/out.bin expected.bin' \"$G\"",
      dir);
  EXPECT_EQ(o.status, 0) << o.err;
}

// --- 2. Outputs that must not be replaced --------------------------------------------------

TEST(OutputKinds, FifoIsWrittenThroughAndStaysAFifo) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 100003, test::base_seed() + 3);
  const outcome o = run_script(
      "mkfifo pipe && { cat pipe > got.bin & } && \"$G\" --devices none in.bin pipe && wait", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  struct stat st {};
  ASSERT_EQ(::lstat(dir.file("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(test::read_file(dir.file("got.bin")), sorted(data));
}

TEST(OutputKinds, DeviceNodesAreWrittenThroughWithTheirErrors) {
  if (!is_root()) GTEST_SKIP() << "needs root to make device nodes (mknod)";
  test::scratch_dir dir;
  make_input(dir, "in.bin", 100, test::base_seed() + 4);
  // Private copies of /dev/null and /dev/full: a regression must not damage the real ones.
  if (std::system(("mknod " + dir.file("null") + " c 1 3 && mknod " + dir.file("full") +
                   " c 1 7 && : > " + dir.file("null"))
                      .c_str()) != 0)
    GTEST_SKIP() << "device nodes cannot be made or opened here (nodev mount?)";
  const outcome to_null = run_script("\"$G\" --devices none in.bin null", dir);
  EXPECT_EQ(to_null.status, 0) << to_null.err;
  const outcome to_full = run_script("\"$G\" --devices none in.bin full", dir);
  EXPECT_EQ(to_full.status, 2);
  EXPECT_NE(to_full.err.find("No space left"), std::string::npos) << to_full.err;
  for (const char* name : {"null", "full"}) {
    struct stat st {};
    ASSERT_EQ(::lstat(dir.file(name).c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << name << " was replaced by a regular file";
  }
}

TEST(OutputKinds, SymbolicLinkKeepsPointingAtTheSortedFile) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "real.bin", 50000, test::base_seed() + 5);
  fs::create_symlink("real.bin", dir.file("link.bin"));
  const outcome o = run_script("\"$G\" --devices none link.bin link.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(fs::is_symlink(dir.file("link.bin")));
  EXPECT_EQ(test::read_file(dir.file("real.bin")), sorted(data));
}

TEST(OutputKinds, HardLinksStayLinked) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "a.bin", 50000, test::base_seed() + 6);
  fs::create_hard_link(dir.file("a.bin"), dir.file("b.bin"));
  const outcome o = run_script("\"$G\" --devices none a.bin a.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(fs::hard_link_count(dir.file("a.bin")), 2u);
  EXPECT_EQ(test::read_file(dir.file("b.bin")), sorted(data));
}

// --- 3. Mode and owner ------------------------------------------------------------------------

TEST(OutputMode, ReplacedFileKeepsItsModeAndOwner) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "f.bin", 20000, test::base_seed() + 7);
  ASSERT_EQ(::chmod(dir.file("f.bin").c_str(), 0600), 0);
  if (is_root()) {
    ASSERT_EQ(::chown(dir.file("f.bin").c_str(), 65534, 65534), 0);
  }
  const outcome o = run_script("\"$G\" --devices none f.bin f.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("f.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  if (is_root()) {
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
  }
  EXPECT_EQ(test::read_file(dir.file("f.bin")), sorted(data));
}

TEST(OutputMode, ReadOnlyOutputIsRefusedForAnUnprivilegedCaller) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "ro.bin", 1000, test::base_seed() + 8);
  ASSERT_EQ(::chmod(dir.file("ro.bin").c_str(), 0444), 0);
  std::string run_as = "\"$G\"";
  if (is_root()) {
    // root may write anything: run as nobody, who owns the file but has no write bit.
    if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "needs setpriv";
    ASSERT_EQ(::chown(dir.file("ro.bin").c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    run_as = "setpriv --reuid=65534 --regid=65534 --clear-groups \"$G\"";
  }
  const outcome o = run_script(run_as + " --devices none ro.bin ro.bin", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("Permission denied"), std::string::npos) << o.err;
  EXPECT_EQ(test::read_file(dir.file("ro.bin")), data) << "the read-only file was overwritten";
}

// --- 4, 5. Inputs with a header; side outputs ----------------------------------------------------

TEST(Inputs, NpyFileIsSortedAfterItsHeaderNotWithIt) {
  test::scratch_dir dir;
  std::string npy("\x93NUMPY\x01\x00\x76\x00", 10);
  std::string header = "{'descr': '<u8', 'fortran_order': False, 'shape': (4,), }";
  header.resize(0x76 - 1, ' ');
  npy += header + "\n";
  const std::string records = std::string(8, '\x07') + std::string(8, '\x01') +
                              std::string(8, '\x05') + std::string(8, '\x03');
  const std::string sorted_records = std::string(8, '\x01') + std::string(8, '\x03') +
                                     std::string(8, '\x05') + std::string(8, '\x07');
  {
    std::FILE* f = std::fopen(dir.file("a.npy").c_str(), "wb");
    const std::string file = npy + records;
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
  }
  const auto expected = [&] {
    const std::string s = npy + sorted_records;
    std::vector<std::byte> v(s.size());
    std::memcpy(v.data(), s.data(), s.size());
    return v;
  }();
  const outcome file = run_script("\"$G\" --devices none a.npy out.npy", dir);
  EXPECT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(test::read_file(dir.file("out.npy")), expected);
  const outcome piped = run_script("cat a.npy | \"$G\" --devices none - piped.npy", dir);
  EXPECT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(test::read_file(dir.file("piped.npy")), expected);
}

TEST(SideOutputs, UnwritableTraceFailsBeforeTheOutputIsReplaced) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 10000, test::base_seed() + 9);
  const std::vector<std::byte> old(16, std::byte{0x5a});
  test::write_file(dir.file("out.bin"), old);
  const outcome o =
      run_script("\"$G\" --devices none --trace no-such-dir/t.json in.bin out.bin", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), old) << "the old output was replaced";
  const outcome ok = run_script("\"$G\" --devices none --trace t.json in.bin out.bin", dir);
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
  EXPECT_GT(fs::file_size(dir.file("t.json")), 0u);
}

// --- 6, 9, 10. Budgets and limits -------------------------------------------------------------

TEST(Limits, RecordsLargerThanTheMergeStagingSortInSeveralPasses) {
  test::scratch_dir dir;
  const std::uint32_t rec = 17u << 20;  // above the 16 MiB staging window of a merge pass
  const record_format f = test::make_format("bytes:10", rec, 0);
  const auto data = test::random_records(3, f, test::base_seed() + 10);
  test::write_file(dir.file("big.bin"), data);
  const outcome o = run_script("\"$G\" --devices none -S 1M -t bytes:10 --record-size " +
                                   std::to_string(rec) + " big.bin out.bin",
                               dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
}

TEST(Limits, TinyBudgetIsRaisedWithAWarning) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 1 << 20, test::base_seed() + 11);
  const outcome o = run_script("\"$G\" --devices none -S 1 in.bin out.bin", dir, 30);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("below the minimum"), std::string::npos) << o.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
}

TEST(Limits, HugeBudgetWithAShortPipeAllocatesWhatTheInputNeeds) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 100, test::base_seed() + 12);
  const outcome o = run_script("cat in.bin | \"$G\" --devices none -S 1T - out.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
}

TEST(Limits, MoreSpilledRunsThanOpenFiles) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 4 << 20, test::base_seed() + 13);  // 32 MiB
  const outcome o = run_script(
      "ulimit -n 20; \"$G\" --devices none -S 4M -T . --stats=json in.bin out.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  const auto pos = o.err.find("\"runs\":");
  ASSERT_NE(pos, std::string::npos) << o.err;
  EXPECT_GT(std::stoul(o.err.substr(pos + 7)), 20u) << "runs must outnumber the descriptors";
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
}

// --- Temporary files of spilled runs ------------------------------------------------------

/// How many entries `path` holds.
std::size_t entries(const fs::path& path) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(path), fs::directory_iterator{}));
}

// Spilled runs live in anonymous files in -T's directory: nothing of them may stay there, nor
// beside the output, whether the sort succeeds, fails while it spills, or is killed.
TEST(SpilledRuns, NoTemporaryFileOutlivesSuccessErrorOrSigterm) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 2 << 20, test::base_seed() + 17);  // 16 MiB
  fs::create_directory(dir.path() / "spill");
  const std::size_t beside = entries(dir.path());  // in.bin and spill/

  {
    SCOPED_TRACE("success");
    const outcome o =
        run_script("\"$G\" --devices none -S 4M -T spill --stats=json in.bin out.bin", dir);
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("\"spilled\":true"), std::string::npos) << o.err;
    EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
    EXPECT_EQ(entries(dir.path() / "spill"), 0u);
    fs::remove(dir.file("out.bin"));
  }
  {
    SCOPED_TRACE("error while spilling");
    // 4 MiB of file size (ulimit -f counts 512-byte blocks): the spill file hits it, the
    // output (a pipe) does not.
    const outcome o = run_script(
        "ulimit -f 8192; \"$G\" --devices none -S 4M -T spill in.bin - > /dev/null", dir);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find("File too large"), std::string::npos) << o.err;
    EXPECT_EQ(entries(dir.path() / "spill"), 0u);
    EXPECT_EQ(entries(dir.path()), beside);
  }
  {
    SCOPED_TRACE("SIGTERM");
    // Half the input through a FIFO held open, so that the sort waits for the rest with runs
    // spilled; it is killed once a descriptor of it points into spill/.
    const outcome o = run_script(
        "mkfifo feed; \"$G\" --devices none -S 4M -T spill - out.bin < feed & pid=$!\n"
        "exec 3>feed; head -c 8388608 in.bin >&3\n"
        // The sort runs in a child of $pid (cli::early_exit), which waits for it.
        "spilling() { for p in $pid $(pgrep -P $pid); do ls -l /proc/$p/fd; done 2>/dev/null |\n"
        "  grep -q /spill/; }\n"
        "for i in $(seq 200); do spilling && break; sleep 0.05; done\n"
        "spilling || { echo 'no spilled run seen' >&2; exit 97; }\n"
        "kill -TERM $pid; wait $pid; status=$?; exec 3>&-; rm feed; exit $status",
        dir);
    EXPECT_EQ(o.status, 128 + SIGTERM) << o.err;
    EXPECT_EQ(entries(dir.path() / "spill"), 0u);
    EXPECT_FALSE(fs::exists(dir.file("out.bin")));
    EXPECT_EQ(leftover_temporaries(dir), 0u);
    EXPECT_EQ(entries(dir.path()), beside);
  }
}

// --- 11, 12, 13. Signals and missing kernel features ------------------------------------------

/// Starts gpusort in the background reading a FIFO that the script holds open, so that the
/// sort is certainly still running when `action` happens; then feeds the input. The action
/// waits until gpusort itself runs and catches signals (procfs at $P, else /proc): a
/// signal that reaches the shell's child before its exec is lost there (bash's child ignores
/// SIGQUIT until it execs), and a loaded machine can take longer than any fixed pause.
std::string with_blocked_sort(const std::string& prefix, const std::string& gpusort_args,
                              const std::string& action) {
  return "mkfifo feed; " + prefix + " \"$G\" --devices none " + gpusort_args +
         " < feed & pid=$!; exec 3>feed; name=$(basename \"$G\" | cut -c1-15); "
         "for i in $(seq 1000); do [ \"$(cat ${P:-/proc}/$pid/comm 2>/dev/null)\" = \"$name\" ] "
         "&& ! grep -q \"^SigCgt:[[:space:]]*0*$\" ${P:-/proc}/$pid/status && break; "
         "sleep 0.01; done; sleep 0.3; " + action + "; cat in.bin >&3; exec 3>&-; wait $pid";
}

TEST(Signals, HangupIgnoredAtStartStaysIgnored) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 100000, test::base_seed() + 14);
  const outcome o =
      run_script("trap '' HUP; " + with_blocked_sort("", "- out.bin", "kill -HUP $pid"), dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
}

TEST(Signals, EveryTerminatingSignalRemovesANamedTemporary) {
  if (!can_unshare_mounts())
    GTEST_SKIP() << "needs root and unshare(1): without /proc the temporary output is named";
  test::scratch_dir dir;
  make_input(dir, "in.bin", 1000, test::base_seed() + 15);
  for (const char* sig : {"USR1", "USR2", "ALRM", "TERM", "INT", "HUP", "QUIT", "VTALRM"}) {
    SCOPED_TRACE(sig);
    const outcome o = run_script(
        "unshare -m --fork bash -c '" + private_proc + "set -m; G=$0; " +
            with_blocked_sort("", "- out.bin", std::string("kill -") + sig + " $pid") +
            "' \"$G\"",
        dir);
    EXPECT_NE(o.status, 0);
    EXPECT_EQ(leftover_temporaries(dir), 0u) << "SIG" << sig << " left a temporary file";
    EXPECT_FALSE(fs::exists(dir.file("out.bin")));
  }
}

TEST(Signals, KillingTheWaitingProcessEndsTheSortingChildAndItsTemporaries) {
  // SIGKILL cannot be passed on: the child that sorts learns of it as its parent ends
  // (PR_SET_PDEATHSIG) and cleans up as for SIGTERM. Named temporaries, where the system lets
  // a private mount hide /proc, else the unnamed ones.
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 1000, test::base_seed() + 16);
  test::write_file(dir.file("out.bin"), data);  // the old output, to be kept
  // A child left running would read the input fed after the kill and replace out.bin.
  const std::string script =
      with_blocked_sort("", "- out.bin", "kill -KILL $pid; sleep 0.5") +
      "; sleep 1; exit 0";
  const outcome o = can_unshare_mounts()
                        ? run_script("unshare -m --fork bash -c '" + private_proc +
                                         "set -m; G=$0; " + script + "' \"$G\"",
                                     dir)
                        : run_script("set -m; " + script, dir);
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(leftover_temporaries(dir), 0u);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), data);
}

/// One strategy's run that a SIGTERM interrupts: the arguments that make gpusort plan it (the
/// output is out.bin) and the bytes of random input (in.bin, from /dev/urandom).
struct strategy_case {
  const char* strategy;
  const char* args;
  std::uint64_t input_bytes;
};

/// SIGTERM once --verbose has printed the plan, while the strategy runs: the old output stays
/// as it was, and neither a temporary output nor a spilled run is left behind. One thread (or
/// a large input, on the GPU) keeps the sort running for a good part of a second after the
/// plan, so that the signal lands inside the strategy.
void expect_sigterm_leaves_nothing(const strategy_case& c) {
  SCOPED_TRACE(c.strategy);
  test::scratch_dir dir;
  fs::create_directory(dir.path() / "spill");
  const std::string plan = std::string("plan: ") + c.strategy;
  const outcome o = run_script(
      "head -c " + std::to_string(c.input_bytes) + " /dev/urandom > in.bin\n"
      // Sorted inputs for -m: the input sorted, four times.
      "if [[ '" + c.args + "' == *' -m '* ]]; then\n"
      "  \"$G\" --devices none in.bin a.bin && cp a.bin b.bin && cp a.bin c.bin && "
      "cp a.bin d.bin || exit 96\n"
      "fi\n"
      "printf 'the old output' > out.bin\n"
      "\"$G\" --verbose -T spill " + c.args + " 2> log & pid=$!\n"
      "for i in $(seq 2000); do grep -q '" + plan + "' log && break; sleep 0.01; done\n"
      "grep -q '" + plan + "' log || { cat log >&2; kill -KILL $pid; exit 97; }\n"
      "kill -TERM $pid; wait $pid; status=$?; cat log >&2; exit $status",
      dir, 300);
  ASSERT_NE(o.status, 97) << "the plan was not " << c.strategy << ": " << o.err;
  ASSERT_NE(o.status, 0) << "the sort ended before the signal: " << o.err;
  EXPECT_EQ(o.status, 128 + SIGTERM) << o.err;
  const std::vector<std::byte> old = test::read_file(dir.file("out.bin"));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(old.data()), old.size()), "the old output");
  EXPECT_EQ(leftover_temporaries(dir), 0u);
  EXPECT_EQ(entries(dir.path() / "spill"), 0u);
}

/// Whether the gpusort binary finds a GPU to sort on.
bool gpusort_has_gpu() {
  test::scratch_dir dir;
  return run_script("head -c 4096 /dev/urandom > in.bin; \"$G\" --devices all in.bin out.bin",
                    dir)
             .status == 0;
}

TEST(Signals, SigtermDuringEachCpuStrategyLeavesTheOldOutput) {
  constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
  for (const strategy_case& c : {
           strategy_case{"cpu-one-run", "--devices none --parallel 1 in.bin out.bin", 64 * MiB},
           strategy_case{"cpu-runs", "--devices none --parallel 1 -S 85M in.bin out.bin",
                         64 * MiB},
           strategy_case{"cpu-spilled-runs", "--devices none --parallel 1 -S 16M in.bin out.bin",
                         64 * MiB},
           strategy_case{"merge-inputs",
                         "--devices none --parallel 1 -m -o out.bin a.bin b.bin c.bin d.bin",
                         32 * MiB},
       })
    expect_sigterm_leaves_nothing(c);
}

TEST(Signals, SigtermDuringEachGpuStrategyLeavesTheOldOutput) {
  if (!gpusort_has_gpu()) GTEST_SKIP() << "no GPU for gpusort";
  constexpr std::uint64_t GiB = std::uint64_t{1} << 30;
  for (const strategy_case& c : {
           strategy_case{"gpu-one-chunk", "--devices all --parallel 1 in.bin out.bin", 2 * GiB},
           strategy_case{"gpu-runs",
                         "--devices all --parallel 1 --gpu-memory 1G --merge-on host in.bin "
                         "out.bin",
                         2 * GiB},
           strategy_case{"gpu-ranges",
                         "--devices all --parallel 1 --gpu-memory 1G --merge-on gpu in.bin "
                         "out.bin",
                         2 * GiB},
           strategy_case{"gpu-partition",
                         "--devices all --parallel 1 --gpu-memory 1G -S 1G in.bin out.bin",
                         2 * GiB},
       })
    expect_sigterm_leaves_nothing(c);
}

TEST(Signals, FileSizeLimitOnANamedOutputIsReported) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 1 << 20, test::base_seed() + 16);
  const outcome o = run_script("ulimit -f 4096; \"$G\" --devices none in.bin out.bin", dir);
  EXPECT_EQ(o.status, 2) << "killed by SIGXFSZ without a word?";
  EXPECT_NE(o.err.find("File too large"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir.file("out.bin")));
}

TEST(KernelFeatures, SortsWithoutProc) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "needs root and unshare(1) to unmount /proc";
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 100000, test::base_seed() + 17);
  const outcome o = run_script(
      "unshare -m --fork sh -c 'umount -l /proc && \"$0\" --devices none in.bin out.bin' \"$G\"",
      dir);
#ifdef __SANITIZE_ADDRESS__
  // Under scripts/sanitize.sh: ASan reads its options from /proc/self/environ, so nothing turns
  // off the leak check, and LeakSanitizer dies at exit without /proc/PID/task, after gpusort
  // has committed its output. The output and the temporaries below are still checked.
  if (o.status == 1 &&
      o.err.find("LeakSanitizer has encountered a fatal error") != std::string::npos)
    std::cerr << "note: LeakSanitizer cannot run without /proc; exit status not checked\n";
  else
    ASSERT_EQ(o.status, 0) << o.err;
#else
  ASSERT_EQ(o.status, 0) << o.err;
#endif
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
  EXPECT_EQ(leftover_temporaries(dir), 0u);
}

// --- Small things ---------------------------------------------------------------------------

TEST(Usage, ThreadCountsAreCappedAndNegativesRejected) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 100000, test::base_seed() + 18);
  const outcome many = run_script("\"$G\" --devices none --parallel 100000 in.bin out.bin", dir);
  ASSERT_EQ(many.status, 0) << many.err;
  EXPECT_EQ(many.err, "") << "no TBB warning, no blank line";
  EXPECT_EQ(test::read_file(dir.file("out.bin")), sorted(data));
  for (const char* bad : {"-1", "0", "x", "4294967296"}) {
    const outcome o =
        run_script(std::string("\"$G\" --devices none --parallel ") + bad + " in.bin o.bin", dir);
    EXPECT_EQ(o.status, 2) << bad;
    EXPECT_NE(o.err.find("--parallel"), std::string::npos) << o.err;
  }
}

TEST(Usage, NegativeOffsetsAndSizesAreRejected) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 10, test::base_seed() + 19);
  for (const char* args : {"--key-offset -1", "--record-size -8", "--record-size 99999999999"}) {
    const outcome o = run_script(std::string("\"$G\" --devices none ") + args + " in.bin o.bin",
                                 dir);
    EXPECT_EQ(o.status, 2) << args;
    EXPECT_NE(o.err.find("invalid --"), std::string::npos) << o.err;
  }
}

TEST(Usage, RepeatedOptionsAreAcceptedAndTheLastCounts) {
  test::scratch_dir dir;
  const auto data = make_input(dir, "in.bin", 1000, test::base_seed() + 20);
  const outcome o = run_script("\"$G\" --devices none -r -r -t u32 -t u64 in.bin out.bin", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")),
            test::reference_sort(data, test::make_format("u64", 8, 0), true));
}

TEST(Usage, OnesweepWithoutDevicesIsAContradiction) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 10, test::base_seed() + 21);
  const outcome o = run_script("\"$G\" --devices none --algorithm onesweep in.bin o.bin", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--devices none"), std::string::npos) << o.err;
}

TEST(Usage, HrsWithoutDevicesIsAContradiction) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 10, test::base_seed() + 23);
  const outcome o = run_script("\"$G\" --devices none --algorithm hrs in.bin o.bin", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--algorithm hrs"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--devices none"), std::string::npos) << o.err;
}

TEST(Usage, ClosedPipeEndsQuietlyLikeSort) {
  test::scratch_dir dir;
  make_input(dir, "in.bin", 1 << 20, test::base_seed() + 22);
  const outcome o = run_script(
      "\"$G\" --devices none in.bin | head -c 100 > /dev/null; exit ${PIPESTATUS[0]}", dir);
  EXPECT_EQ(o.status, 128 + SIGPIPE) << o.err;
  EXPECT_EQ(o.err, "");
  // With SIGPIPE ignored by the caller, the broken pipe is reported, as sort reports it.
  const outcome ignored = run_script(
      "trap '' PIPE; \"$G\" --devices none in.bin | head -c 100 > /dev/null; "
      "exit ${PIPESTATUS[0]}",
      dir);
  EXPECT_EQ(ignored.status, 2);
  EXPECT_NE(ignored.err.find("Broken pipe"), std::string::npos) << ignored.err;
}

}  // namespace
}  // namespace gpusort
