// gpusort-datagen: writes benchmark input files of fixed-size records with chosen key
// distributions.
#include <tbb/global_control.h>

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "common/tool_support.hpp"
#include "core/parse_size.hpp"
#include "datagen/generator.hpp"
#include "gpusort/error.hpp"
#include "io/signal_cleanup.hpp"

namespace po = boost::program_options;
using namespace gpusort;

namespace {

constexpr const char* distribution_help =
    "Distributions (--distribution):\n"
    "  uniform      uniform random key bits. For f32/f64 keys these are raw bit patterns, so\n"
    "               NaNs, infinities and -0.0 occur (about 1/256 of f32 keys are NaN);\n"
    "               --finite redraws NaNs and infinities.\n"
    "  special      uniform, but one key in four is an edge value of the key type: for floats\n"
    "               +-0.0, +-inf, quiet and signalling NaNs of both signs, denormals, +-max,\n"
    "               +-1; for integers 0, 1, 2, min, max and neighbours; for bytes:N all-zero,\n"
    "               all-0xff and near them (--finite leaves out NaNs and infinities).\n"
    "  and:Q        Thearling/Smith entropy reduction: each key is the bitwise AND of Q uniform\n"
    "               words (Q = 1..64; and:1 = uniform); each bit is set with probability 2^-Q.\n"
    "  equal        every key the same value.\n"
    "  zipf:S[:D]   Zipf ranks over a domain of D values (default min(2^32, key space)):\n"
    "               P(rank k) ~ k^-S, drawn by rejection-inversion; rank k maps to a key value\n"
    "               by a fixed random permutation of the key space, so the frequent keys are\n"
    "               scattered, not all small.\n"
    "  sorted       ascending keys, evenly spread over the key space (each key placed at random\n"
    "               in its own slot, so keys repeat only when count > key space).\n"
    "  reverse      the sorted keys in descending order.\n"
    "  nearly:F     the sorted keys after round(F * count) swaps of random disjoint pairs of\n"
    "               records (so about 2F of the records are out of place; F <= 0.5).\n"
    "  few:K        each key one of K random values (at most K distinct keys).\n"
    "Key values of sorted, reverse, nearly, few, zipf and equal follow the key type's order\n"
    "(signed, IEEE totalOrder for floats, memcmp for bytes:N); with --finite, float keys then\n"
    "stay between -max and +max.\n"
    "\n"
    "Payload (the bytes of a record outside its key): the record's index (its position in the\n"
    "generated file, from 0) as a little-endian integer in the first 8 payload bytes (before\n"
    "the key when --key-offset >= 8, else after it; fewer bytes when fewer follow the key), so\n"
    "gpusort-validate --stable can check stability; any other payload bytes are a hash of\n"
    "(seed, index). gensort-layout records (--format gensort, or bytes:10 keys in 100-byte\n"
    "records at offset 0) have gensort's binary layout: key(10) | 00 11 | record number as 32\n"
    "upper-case hex digits | 88 99 AA BB | 48 filler bytes | CC DD EE FF. The keys come from\n"
    "this tool's generator, not gensort's.\n"
    "\n"
    "The output is a function of (format, distribution, count, seed, --finite) only: the same\n"
    "bytes for any --threads and any output method.\n";

void print_usage(std::ostream& os, const po::options_description& visible) {
  os << "Usage: gpusort-datagen [OPTIONS] --count N -o FILE\n"
        "Writes N fixed-size records with keys of the chosen distribution, deterministically\n"
        "for a seed, in parallel, through gpusort's own output layer (temp file + rename).\n\n"
     << visible << "\n"
     << tools::format_help() << "\n"
     << distribution_help;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description visible("Options");
  visible.add_options()
      ("help,h", "show this help and exit")
      ("version", "show the version and exit")
      ("count,n", po::value<std::string>()->value_name("N"),
       "number of records; suffixes K M G T are powers of 1024 (1M = 1048576 records)")
      ("size", po::value<std::string>()->value_name("BYTES"),
       "alternatively, the output size in bytes (e.g. 16G); must be a whole number of records")
      ("distribution,d", po::value<std::string>()->default_value("uniform")->value_name("D"),
       "key distribution (see below)")
      ("seed", po::value<std::uint64_t>()->default_value(1)->value_name("S"),
       "random seed; the same seed gives the same bytes")
      ("finite", "f32/f64 keys: no NaN and no infinity (see below)")
      ("output,o", po::value<std::string>()->value_name("FILE"),
       "output file; - writes to standard output")
      ("threads,j", po::value<unsigned>()->default_value(0)->value_name("N"),
       "worker threads (0 = all hardware threads); does not change the output")
      ("write-method", po::value<std::string>()->default_value("auto")->value_name("M"),
       "how bytes reach the file: auto, mmap (fallocate + shared mapping) or uring")
      ("quiet,q", "print nothing on success");
  tools::add_format_options(visible);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "gpusort-datagen: " << e.what() << "\nTry 'gpusort-datagen --help'.\n";
    return 2;
  }
  if (vm.count("help")) {
    print_usage(std::cout, visible);
    return 0;
  }
  if (vm.count("version")) {
    tools::print_version("gpusort-datagen");
    return 0;
  }
  try {
    io::install_signal_cleanup();
    tools::generator_config config;
    config.format = tools::resolve_format(vm);
    config.dist = tools::parse_distribution(vm["distribution"].as<std::string>());
    config.seed = vm["seed"].as<std::uint64_t>();
    config.finite = vm.count("finite") > 0;
    GPUSORT_EXPECTS(vm.count("count") + vm.count("size") == 1,
                    "give exactly one of --count and --size");
    GPUSORT_EXPECTS(vm.count("output") == 1, "no output file (-o FILE, or -o - for stdout)");
    if (vm.count("count")) {
      config.count = parse_size(vm["count"].as<std::string>(), 0, "record count");
    } else {
      const std::uint64_t bytes = parse_size(vm["size"].as<std::string>(), 0, "size");
      GPUSORT_EXPECTS(bytes % config.format.record_size == 0,
                      "--size " + std::to_string(bytes) + " is not a multiple of the " +
                          std::to_string(config.format.record_size) + "-byte record size");
      config.count = bytes / config.format.record_size;
    }
    const std::string output = vm["output"].as<std::string>();
    const io::write_method method = io::parse_write_method(vm["write-method"].as<std::string>());

    std::optional<tbb::global_control> threads;
    if (const unsigned n = vm["threads"].as<unsigned>(); n > 0)
      threads.emplace(tbb::global_control::max_allowed_parallelism, tools::capped_threads(n));

    const auto start = std::chrono::steady_clock::now();
    tools::write_records(config, output, method);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!vm.count("quiet") && output != "-") {
      const std::uint64_t bytes = config.count * config.format.record_size;
      std::fprintf(stderr,
                   "gpusort-datagen: %s: %llu records (%s, %s, seed %llu), %s in %.3f s, "
                   "%.2f GB/s\n",
                   output.c_str(), static_cast<unsigned long long>(config.count),
                   describe(config.format).c_str(), tools::distribution_name(config.dist).c_str(),
                   static_cast<unsigned long long>(config.seed), format_bytes(bytes).c_str(),
                   seconds, seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gpusort-datagen: error: " << e.what() << "\n";
    return 2;
  }
}
