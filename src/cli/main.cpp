// gpusort: the command-line tool, a thin layer over gpusort::sort_file.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "cli/cli_options.hpp"
#include "cli/early_exit.hpp"
#include "core/parse_size.hpp"
#include "gpusort/error.hpp"
#include "gpusort/sort.hpp"
#include "io/signal_cleanup.hpp"

namespace {

/// Spilled runs, merge passes and io_uring rings each hold a descriptor: take every one the
/// hard limit allows, as GNU sort users never have to think about `ulimit -n`.
void raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

/// -c and -C: exit 0 when sorted, 1 at the first record out of order (named by -c), 2 on
/// trouble.
int check(const gpusort::cli::request& req) {
  using namespace gpusort;
  try {
    const check_result r = check_file(req.inputs, req.options);
    if (r.sorted()) return 0;
    if (req.check == cli::check_mode::diagnose)
      std::fprintf(stderr, "gpusort: %s: disorder: record %llu (key %s after key %s)\n",
                   r.input.c_str(), static_cast<unsigned long long>(*r.disorder), r.key.c_str(),
                   r.previous_key.c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpusort: error: out of host memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort: error: %s\n", e.what());
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpusort;
  cli::request req;
  try {
    req = cli::parse_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort: error: %s\nTry 'gpusort --help' for more information.\n",
                 e.what());
    return 2;
  }
  if (req.help) {
    std::fputs(cli::help_text().c_str(), stdout);
    return 0;
  }
  if (req.version) {
    std::printf("%s\n", version_string().c_str());
    return 0;
  }
  if (req.check != cli::check_mode::none) return check(req);
  if (req.output == "-" && ::isatty(STDOUT_FILENO)) {
    std::fprintf(stderr,
                 "gpusort: error: refusing to write binary records to a terminal; name an "
                 "output file or redirect stdout\n");
    return 2;
  }
  if (req.options.buffer_bytes != 0 && req.options.buffer_bytes < min_buffer_bytes)
    std::fprintf(stderr, "gpusort: warning: --buffer-size %s is below the minimum; using %s\n",
                 format_bytes(req.options.buffer_bytes).c_str(),
                 format_bytes(min_buffer_bytes).c_str());
  // Before any thread starts: the sort runs in a child where the process may end early.
  cli::early_exit exit_early(!req.no_fork);
  io::install_signal_cleanup();
  raise_open_file_limit();
  const auto print = [&](const sort_stats& s) {
    if (req.options.stats == stats_format::text) std::fputs(s.to_text().c_str(), stderr);
    if (req.options.stats == stats_format::json)
      std::fprintf(stderr, "%s\n", s.to_json().c_str());
    std::fflush(stderr);
  };
  try {
    if (req.no_fork) {
      print(sort_file(req.inputs, req.output, req.options));  // the time to give back included
    } else {
      static_cast<void>(sort_file(req.inputs, req.output, req.options, [&](const sort_stats& s) {
        print(s);
        exit_early.committed();
      }));
    }
    return 0;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpusort: error: out of host memory (try a smaller -S)\n");
  } catch (const error& e) {
    // `gpusort ... | head`: the reader has what it wanted; end as sort does, without a word.
    if (e.code().value() == EPIPE && req.output == "-") io::end_quietly_on_broken_pipe();
    std::fprintf(stderr, "gpusort: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort: error: %s\n", e.what());
  }
  return 2;
}
