// gpusort-validate: checks that a sort's output is ordered and holds exactly the input's records.
#include <tbb/global_control.h>

#include <boost/program_options.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/tool_support.hpp"
#include "gpusort/error.hpp"
#include "validate/validator.hpp"

namespace po = boost::program_options;
using namespace gpusort;

int main(int argc, char** argv) {
  po::options_description visible("Options");
  visible.add_options()
      ("help,h", "show this help and exit")
      ("version", "show the version and exit")
      ("reverse,r", "OUT must be in descending order")
      ("stable,s",
       "equal keys must keep their input order: records must carry the index gpusort-datagen "
       "writes into the payload (key+value records, gensort records)")
      ("threads,j", po::value<unsigned>()->default_value(0)->value_name("N"),
       "worker threads (0 = all hardware threads)")
      ("quiet,q", "print nothing on success");
  tools::add_format_options(visible);
  const std::optional<po::variables_map> parsed =
      tools::parse_with_operands(argc, argv, visible, "gpusort-validate");
  if (!parsed) return 2;
  const po::variables_map& vm = *parsed;
  if (vm.count("help")) {
    std::cout
        << "Usage: gpusort-validate [OPTIONS] IN OUT\n"
           "       gpusort-validate [OPTIONS] OUT\n"
           "Checks that OUT is ordered by its keys and that it holds exactly the records of IN\n"
           "(the same count and the same multiset of whole records, compared through an\n"
           "order-independent 128-bit hash). With one file, checks the order only.\n\n"
        << visible << "\n"
        << tools::format_help()
        << "\nExit status: 0 when every check holds; 1 when one fails (each failure is printed\n"
           "with where it is: the first out-of-order pair with both keys, the record counts,\n"
           "or the differing hashes); 2 on trouble (unreadable file, bad options, IN not a\n"
           "whole number of records).\n";
    return 0;
  }
  if (vm.count("version")) {
    tools::print_version("gpusort-validate");
    return 0;
  }
  try {
    const std::vector<std::string> files =
        vm.count("files") ? vm["files"].as<std::vector<std::string>>() : std::vector<std::string>{};
    GPUSORT_EXPECTS(files.size() == 1 || files.size() == 2,
                    "expected IN OUT (or OUT alone for an order check)");
    tools::validate_options options;
    options.format = tools::resolve_format(vm);
    options.descending = vm.count("reverse") > 0;
    options.stable = vm.count("stable") > 0;
    std::optional<tbb::global_control> threads;
    if (const unsigned n = vm["threads"].as<unsigned>(); n > 0)
      threads.emplace(tbb::global_control::max_allowed_parallelism, tools::capped_threads(n));

    const std::string in = files.size() == 2 ? files[0] : std::string();
    const tools::validation v = tools::validate_files(in, files.back(), options);
    if (v.ok()) {
      if (!vm.count("quiet")) std::cout << "gpusort-validate: " << v.summary << "\n";
      return 0;
    }
    for (const std::string& problem : v.problems)
      std::cerr << "gpusort-validate: FAILED: " << problem << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gpusort-validate: error: " << e.what() << "\n";
    return 2;
  }
}
