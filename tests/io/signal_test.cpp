// The signal handlers: a truncated input mapping becomes an error message and exit status 2,
// named temporaries vanish on every terminating signal, ignored signals stay ignored, and a
// file-size limit is an EFBIG error. Each case runs in a child process (a death test): the
// handlers are process-wide.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "gpusort/error.hpp"
#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "io/signal_cleanup.hpp"
#include "io/uring.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

std::size_t leftover_temporaries(const test::scratch_dir& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().filename().string().find(".gpusort-") != std::string::npos) ++n;
  return n;
}

TEST(SignalDeathTest, ShrunkInputMappingIsAnErrorNamingTheFile) {
  // Both mappings a sort reads: the one-run sort's whole, populated one, and the runs' one
  // (map_input, not populated), whose pages are faulted in as the sort reads them.
  for (const bool whole : {true, false}) {
    SCOPED_TRACE(whole ? "map_whole" : "map_input");
    test::scratch_dir dir;
    const std::string path = dir.file("shrinks.bin");
    test::write_file(path, std::vector<std::byte>(std::size_t{1} << 20, std::byte{3}));
    EXPECT_EXIT(
        {
          install_signal_cleanup();
          input_source input({path}, 8);
          std::optional<input_mapping> m =
              whole ? input.map_whole() : input.map_input(0, /*populate=*/false);
          if (!m || ::truncate(path.c_str(), 0) != 0) std::_Exit(10);
          volatile std::byte sink = m->bytes()[std::size_t{1} << 19];  // SIGBUS
          static_cast<void>(sink);
          std::_Exit(11);
        },
        ::testing::ExitedWithCode(2),
        "shrinks.bin: the input file shrank while it was being sorted");
  }
}

TEST(SignalDeathTest, NamedTemporaryGoesWithEveryTerminatingSignal) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                        SIGPROF, SIGXCPU, SIGPWR, SIGABRT, SIGSEGV}) {
    SCOPED_TRACE(::strsignal(sig));
    test::scratch_dir dir;
    const std::string target = dir.file("out.bin");
    EXPECT_EXIT(
        {
          install_signal_cleanup();
          output_file out(target, output_file::temp_naming::named);
          if (leftover_temporaries(dir) != 1) std::_Exit(10);
          ::raise(sig);
          std::_Exit(11);
        },
        ::testing::KilledBySignal(sig), "");
    EXPECT_EQ(leftover_temporaries(dir), 0u);
  }
}

TEST(SignalDeathTest, SignalIgnoredAtStartStaysIgnored) {
  EXPECT_EXIT(
      {
        ::signal(SIGHUP, SIG_IGN);  // nohup
        install_signal_cleanup();
        ::raise(SIGHUP);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(SignalDeathTest, FileSizeLimitIsEfbigNotSigxfsz) {
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  EXPECT_EXIT(
      {
        install_signal_cleanup();
        rlimit lim{};
        lim.rlim_cur = lim.rlim_max = 4096;
        if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) std::_Exit(10);
        output_file out(target);
        std::vector<std::byte> data(8192);
        uring ring(8);
        try {
          ring.write_exact(out.fd(), 0, data);
        } catch (const error& e) {
          std::_Exit(e.code().value() == EFBIG ? 0 : 12);
        }
        std::_Exit(11);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gpusort::io
