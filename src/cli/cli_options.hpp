// The gpusort command line: flags (GNU sort's where it has one) into a sort request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpusort/options.hpp"

namespace gpusort::cli {

/// -c (diagnose-first) and -C (quiet): check the input's order instead of sorting it.
enum class check_mode : std::uint8_t { none, diagnose, quiet };

struct request {
  std::vector<std::string> inputs;  ///< "-" is stdin
  std::string output;               ///< "-" is stdout
  sort_options options;
  check_mode check = check_mode::none;  ///< when set, `output` is empty
  bool help = false;
  bool version = false;
  /// --no-fork: the process stays until the sort has given back all it held (cli::early_exit)
  bool no_fork = false;
};

/// Parses argv. Throws gpusort::error with a one-line reason on bad usage.
[[nodiscard]] request parse_command_line(int argc, const char* const* argv);

/// The --help text.
[[nodiscard]] std::string help_text();

}  // namespace gpusort::cli
