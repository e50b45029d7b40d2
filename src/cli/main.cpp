// gpusort: the command-line tool, a thin layer over gpusort::sort_file.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <new>

#include "cli/cli_options.hpp"
#include "gpusort/sort.hpp"
#include "io/signal_cleanup.hpp"

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
  if (req.output == "-" && ::isatty(STDOUT_FILENO)) {
    std::fprintf(stderr,
                 "gpusort: error: refusing to write binary records to a terminal; name an "
                 "output file or redirect stdout\n");
    return 2;
  }
  io::install_signal_cleanup();
  try {
    const sort_stats stats = sort_file(req.inputs, req.output, req.options);
    if (req.options.stats == stats_format::text) std::fputs(stats.to_text().c_str(), stderr);
    if (req.options.stats == stats_format::json)
      std::fprintf(stderr, "%s\n", stats.to_json().c_str());
    return 0;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpusort: error: out of host memory (try a smaller -S)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort: error: %s\n", e.what());
  }
  return 2;
}
