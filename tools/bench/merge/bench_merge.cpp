// Benchmark of the parallel multiway merge: K sorted runs of uniform keys merged by merge_ranks,
// timed against a parallel memcpy of the same bytes and against the loser tree alone (where
// merge_ranks takes the vector merge) in the same process. Runs and output live in
// host_buffers (huge pages where the kernel gives them, prefaulted), as the pipeline's runs do.
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/parallel_copy.hpp"
#include "core/parse_size.hpp"
#include "cpu/multiway_merge.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"
#include "gpusort/version.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"

namespace {

using gpusort::record_format;

constexpr const char* usage =
    "usage: gpusort-bench-merge [--runs K] [--count N] [--type T] [--record-size S]\n"
    "                           [--key-offset O] [--repeat R] [--threads T] [--descending]\n"
    "                           [--output-file PATH] [--parts P] [--no-loser-tree] [--csv]\n"
    "  --runs K         sorted runs to merge (default 16)\n"
    "  --count N        records in all runs together: 67108864, 64M or 2^26 (default 2^26)\n"
    "  --type T         u32, u64, i32, i64, f32, f64 or bytes:N (default u64)\n"
    "  --record-size S  bytes per record (default: the key size)\n"
    "  --key-offset O   key position inside the record (default 0)\n"
    "  --repeat R       timed repetitions; the median is reported (default 5)\n"
    "  --threads T      TBB threads (default: all cores)\n"
    "  --descending     merge in descending key order\n"
    "  --output-file P  merge into gpusort's mapped output of file P (prefaulted, never\n"
    "                   committed: P is left as it was) instead of anonymous memory\n"
    "  --parts P        cut the output into P parts, one task each (default: as merge_ranks\n"
    "                   does, cpu::merge_part_count)\n"
    "  --no-loser-tree  skip the loser-tree baseline (its CSV columns stay empty): about a\n"
    "                   third of a 64-run sweep's time\n"
    "  --csv            print one CSV line (after a header line) instead of the report\n"
    "  --version        print the version and exit\n";

struct bench_options {
  std::uint64_t runs = 16;
  std::uint64_t count = std::uint64_t{1} << 26;
  std::string type = "u64";
  std::uint32_t record_size = 0;  ///< 0: the key size
  std::uint32_t key_offset = 0;
  unsigned repeat = 5;
  unsigned threads = 0;  ///< 0: all cores
  bool descending = false;
  bool csv = false;
  std::uint64_t parts = 0;  ///< 0: as merge_ranks chooses
  bool loser_tree = true;  ///< also time the loser tree, where the vector merge took the runs
  std::string output_file;  ///< empty: the output is a host_buffer
};

std::uint64_t parse_number(std::string_view text, std::string_view what) {
  if (const std::size_t caret = text.find('^'); caret != std::string_view::npos) {
    const std::uint64_t base = parse_number(text.substr(0, caret), what);
    const std::uint64_t exponent = parse_number(text.substr(caret + 1), what);
    std::uint64_t value = 1;
    for (std::uint64_t i = 0; i < exponent; ++i) {
      GPUSORT_EXPECTS(value <= ~std::uint64_t{0} / std::max<std::uint64_t>(base, 1),
                      std::string(what) + ": " + std::string(text) + " is too large");
      value *= base;
    }
    return value;
  }
  // Plain numbers and K/M/G suffixes (powers of 1024), as for sizes elsewhere.
  return gpusort::parse_size(text, 0, what);
}

bench_options parse_options(int argc, char** argv) {
  bench_options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string_view {
      GPUSORT_EXPECTS(i + 1 < argc, std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      std::exit(0);
    } else if (arg == "--version") {
      std::cout << "gpusort-bench-merge (gpusort) " GPUSORT_VERSION "\n";
      std::exit(0);
    } else if (arg == "--runs") {
      options.runs = parse_number(value(), "--runs");
    } else if (arg == "--count") {
      options.count = parse_number(value(), "--count");
    } else if (arg == "--type") {
      options.type = value();
    } else if (arg == "--record-size") {
      options.record_size = static_cast<std::uint32_t>(parse_number(value(), "--record-size"));
    } else if (arg == "--key-offset") {
      options.key_offset = static_cast<std::uint32_t>(parse_number(value(), "--key-offset"));
    } else if (arg == "--repeat") {
      options.repeat = static_cast<unsigned>(parse_number(value(), "--repeat"));
    } else if (arg == "--threads") {
      options.threads = static_cast<unsigned>(parse_number(value(), "--threads"));
    } else if (arg == "--descending") {
      options.descending = true;
    } else if (arg == "--parts") {
      options.parts = parse_number(value(), "--parts");
      GPUSORT_EXPECTS(options.parts >= 1, "--parts must be at least 1");
    } else if (arg == "--no-loser-tree") {
      options.loser_tree = false;
    } else if (arg == "--csv") {
      options.csv = true;
    } else if (arg == "--output-file") {
      options.output_file = value();
    } else {
      gpusort::throw_error("unknown option '" + std::string(arg) + "'\n" + usage);
    }
  }
  GPUSORT_EXPECTS(options.runs >= 1, "--runs must be at least 1");
  GPUSORT_EXPECTS(options.repeat >= 1, "--repeat must be at least 1");
  return options;
}

/// A fast, well-mixed stream of 64-bit words (splitmix64): generating 2^26 keys with
/// mt19937_64 would take longer than the merge being measured.
struct splitmix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

/// Writes the normalized key `normalized` (uniform in 64 bits) into the key field of `record`.
void store_key(std::byte* record, std::uint64_t normalized, const record_format& format,
               bool descending) {
  std::byte* field = record + format.key_offset;
  if (format.type == gpusort::key_type::bytes) {
    // Big-endian prefix, zeros after it: memcmp order follows the normalized word.
    const std::uint64_t be = __builtin_bswap64(descending ? ~normalized : normalized);
    std::memset(field, 0, format.key_size);
    std::memcpy(field, &be, std::min<std::uint32_t>(format.key_size, 8));
  } else if (gpusort::detail::has_32bit_word(format.type)) {
    const auto codec = gpusort::detail::make_key_codec<std::uint32_t>(format.type, descending);
    gpusort::detail::store_word(field,
                                codec.denormalize(static_cast<std::uint32_t>(normalized >> 32)));
  } else {
    const auto codec = gpusort::detail::make_key_codec<std::uint64_t>(format.type, descending);
    gpusort::detail::store_word(field, codec.denormalize(normalized));
  }
}

/// `n` keys uniform in 64 bits, in ascending order, without a sort: the i-th smallest of n
/// uniform variables is distributed as S_i / S_(n+1), S_i the sum of i independent standard
/// exponential ones (Renyi's representation of order statistics). Sorting the keys instead
/// took most of an invocation's time (2^28 keys: seconds, against a merge of a tenth of that).
/// The sums are long doubles (64-bit mantissa): with doubles, keys would keep 53 bits, and 2^28
/// of them would tie a few times, where 64-bit keys almost never do.
std::vector<std::uint64_t> sorted_uniform_keys(std::uint64_t n, std::uint64_t seed) {
  constexpr std::uint64_t block = std::uint64_t{1} << 16;
  const std::uint64_t blocks = n / block + 1;  // the (n+1)-th spacing closes the last one
  std::vector<double> spacing(n + 1);
  std::vector<long double> block_sum(blocks);
  tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
    splitmix64 rng{seed ^ (b * 0xd1b54a32d192ed03ull)};
    const std::uint64_t end = std::min(n + 1, (b + 1) * block);
    long double sum = 0;
    for (std::uint64_t i = b * block; i < end; ++i) {
      // u in (0, 1]: -log(u) is finite.
      const double u = static_cast<double>((rng() >> 11) + 1) * 0x1p-53;
      spacing[i] = -std::log(u);
      sum += spacing[i];
    }
    block_sum[b] = sum;
  });
  // Where each block's sums start, and S_(n+1). Each element is offset + its block's partial
  // sum, summed in the same order as block_sum: the keys rise across blocks' edges too.
  std::vector<long double> offset(blocks);
  long double total = 0;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    offset[b] = total;
    total += block_sum[b];
  }
  const long double scale = 0x1p64L / total;
  constexpr long double largest = 0x1p64L - 1;  // S_i < S_(n+1) but for rounding
  std::vector<std::uint64_t> keys(n);
  tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
    const std::uint64_t end = std::min(n, (b + 1) * block);
    long double partial = 0;
    for (std::uint64_t i = b * block; i < end; ++i) {
      partial += spacing[i];
      keys[i] = static_cast<std::uint64_t>(std::min((offset[b] + partial) * scale, largest));
    }
  });
  return keys;
}

/// K sorted runs of uniform keys, back to back in one buffer.
struct run_data {
  gpusort::host_buffer bytes;
  std::vector<gpusort::cpu::run_view> runs;
};

run_data make_runs(const bench_options& options, const record_format& format) {
  run_data data;
  const std::uint32_t size = format.record_size;
  data.bytes = gpusort::host_buffer(options.count * size, /*prefault=*/true);
  std::uint64_t first = 0;
  for (std::uint64_t j = 0; j < options.runs; ++j) {
    const std::uint64_t n = options.count / options.runs + (j < options.count % options.runs);
    const std::vector<std::uint64_t> keys = sorted_uniform_keys(n, j << 40);
    std::byte* base = data.bytes.data() + first * size;
    tbb::parallel_for(std::uint64_t{0}, n, [&](std::uint64_t i) {
      std::byte* record = base + i * size;
      // Payload: a cheap function of the record's position, so that no byte is left untouched.
      std::uint64_t fill = (first + i) * 0x9e3779b97f4a7c15ull;
      for (std::uint32_t b = 0; b < size; b += 8)
        std::memcpy(record + b, &fill, std::min<std::uint32_t>(8, size - b));
      store_key(record, keys[i], format, options.descending);
    });
    data.runs.push_back({n == 0 ? nullptr : base, n});
    first += n;
  }
  return data;
}

/// True when the records are in merge order (a check that the timed merge did its work).
bool in_order(const std::byte* records, std::uint64_t count, const record_format& format,
              bool descending) {
  const std::uint32_t size = format.record_size;
  auto less = [&](const std::byte* a, const std::byte* b) {
    const std::byte* ka = a + format.key_offset;
    const std::byte* kb = b + format.key_offset;
    if (format.type == gpusort::key_type::bytes) {
      const int c = std::memcmp(ka, kb, format.key_size);
      return descending ? c > 0 : c < 0;
    }
    if (gpusort::detail::has_32bit_word(format.type)) {
      const auto codec = gpusort::detail::make_key_codec<std::uint32_t>(format.type, descending);
      return codec.normalize(gpusort::detail::load_word<std::uint32_t>(ka)) <
             codec.normalize(gpusort::detail::load_word<std::uint32_t>(kb));
    }
    const auto codec = gpusort::detail::make_key_codec<std::uint64_t>(format.type, descending);
    return codec.normalize(gpusort::detail::load_word<std::uint64_t>(ka)) <
           codec.normalize(gpusort::detail::load_word<std::uint64_t>(kb));
  };
  std::atomic<bool> ok{true};
  tbb::parallel_for(std::uint64_t{1}, std::max<std::uint64_t>(count, 1), [&](std::uint64_t i) {
    if (less(records + i * size, records + (i - 1) * size)) ok.store(false);
  });
  return ok.load();
}

double process_cpu_seconds() {
  timespec ts{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    gpusort::throw_error("clock_gettime CLOCK_PROCESS_CPUTIME_ID", errno);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Median wall time and median CPU time (all threads) of `repeat` calls. The CPU time shows the
/// work done even when other processes share the cores and stretch the wall time.
struct timing {
  double wall_s;
  double cpu_s;
};

template <typename F>
timing median_times(unsigned repeat, F&& f) {
  std::vector<double> wall;
  std::vector<double> cpu;
  for (unsigned r = 0; r < repeat; ++r) {
    const double cpu_start = process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    f();
    wall.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    cpu.push_back(process_cpu_seconds() - cpu_start);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

int run(int argc, char** argv) {
  const bench_options options = parse_options(argc, argv);
  record_format format;
  gpusort::set_key_type(format, options.type);
  format.record_size = options.record_size != 0 ? options.record_size : format.key_size;
  format.key_offset = options.key_offset;
  format.validate();

  std::optional<tbb::global_control> threads;
  if (options.threads != 0)
    threads.emplace(tbb::global_control::max_allowed_parallelism, options.threads);
  const auto thread_count = static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));

  const run_data data = make_runs(options, format);
  const std::uint64_t bytes = options.count * format.record_size;
  // Prefaulted either way: no page faults in the timing. The file output is gpusort's own
  // mapped sink (whole mapping, prefaulted); it is never committed, so the file goes with it.
  std::optional<gpusort::host_buffer> out_memory;
  std::optional<gpusort::io::output_file> out_file;
  std::unique_ptr<gpusort::io::output_sink> out_sink;
  std::byte* out = nullptr;
  if (options.output_file.empty()) {
    out = out_memory.emplace(bytes, /*prefault=*/true).data();
  } else {
    out_file.emplace(options.output_file);
    out_sink = gpusort::io::make_output_sink(*out_file, bytes, gpusort::io::write_method::mmap,
                                             nullptr, /*persistent_mapping=*/true);
    out_sink->prefault(static_cast<unsigned>(thread_count), /*wait=*/true);
    out = out_sink->mapping().data();
  }
  const std::uint64_t parts = options.parts != 0
                                  ? options.parts
                                  : gpusort::cpu::merge_part_count(options.count, data.runs.size());

  if (!options.csv) {
    std::printf("gpusort-bench-merge: %llu runs, %llu records (%s, %s), %d threads, %llu parts, "
                "median of %u\n",
                static_cast<unsigned long long>(options.runs),
                static_cast<unsigned long long>(options.count), gpusort::describe(format).c_str(),
                gpusort::format_bytes(bytes).c_str(), thread_count,
                static_cast<unsigned long long>(parts), options.repeat);
  }

  const gpusort::cpu::merge_policy policy;
  const bool vector = gpusort::cpu::merges_with_vectors(format, policy);
  const timing merge_t = median_times(options.repeat, [&] {
    gpusort::cpu::merge_ranks_in_parts(data.runs, 0, options.count, out, format,
                                       options.descending, parts, policy);
  });
  GPUSORT_EXPECTS(in_order(out, options.count, format, options.descending),
                  "bench-merge: the merged output is out of order");
  // The loser tree on the same runs, where the merge above took the vector merge.
  gpusort::cpu::merge_policy scalar = policy;
  scalar.vector = false;
  const bool time_tree = vector && options.loser_tree;
  const timing tree_t = time_tree ? median_times(options.repeat, [&] {
    gpusort::cpu::merge_ranks_in_parts(data.runs, 0, options.count, out, format,
                                       options.descending, parts, scalar);
  }) : merge_t;
  GPUSORT_EXPECTS(in_order(out, options.count, format, options.descending),
                  "bench-merge: the loser tree's output is out of order");

  const timing copy_t = median_times(options.repeat, [&] {
    gpusort::detail::parallel_copy(out, data.bytes.data(), bytes);
  });

  auto line = [&](const char* name, timing t) {
    std::printf("%-7s %8.4f s  %8.1f Mrecords/s  %6.2f GB/s  (CPU %.4f s, %.1f ns/record)\n",
                name, t.wall_s, static_cast<double>(options.count) / t.wall_s / 1e6,
                static_cast<double>(bytes) / t.wall_s / 1e9, t.cpu_s,
                t.cpu_s * 1e9 / static_cast<double>(std::max<std::uint64_t>(options.count, 1)));
  };
  const double merge_gbs = static_cast<double>(bytes) / merge_t.wall_s / 1e9;
  const double copy_gbs = static_cast<double>(bytes) / copy_t.wall_s / 1e9;
  const double tree_gbs = static_cast<double>(bytes) / tree_t.wall_s / 1e9;
  const char* kernel = vector ? "vector" : "loser-tree";
  if (options.csv) {
    std::printf("type,record_size,runs,records,bytes,threads,output,merge_s,merge_gbs,memcpy_s,"
                "memcpy_gbs,merge_share_of_memcpy,merge_cpu_ns_per_record,kernel,"
                "loser_tree_s,loser_tree_gbs\n");
    std::printf("%s,%u,%llu,%llu,%llu,%d,%s,%.4f,%.2f,%.4f,%.2f,%.3f,%.1f,%s,",
                options.type.c_str(),
                format.record_size, static_cast<unsigned long long>(options.runs),
                static_cast<unsigned long long>(options.count),
                static_cast<unsigned long long>(bytes), thread_count,
                out_sink ? "file-mapping" : "memory", merge_t.wall_s, merge_gbs,
                copy_t.wall_s, copy_gbs, merge_gbs / copy_gbs,
                merge_t.cpu_s * 1e9 /
                    static_cast<double>(std::max<std::uint64_t>(options.count, 1)),
                kernel);
    if (time_tree || !vector) std::printf("%.4f,%.2f\n", tree_t.wall_s, tree_gbs);
    else std::printf(",\n");
    return 0;
  }

  // The cuts alone, as merge_ranks computes them (there they run in parallel).
  const timing select_t = median_times(options.repeat, [&] {
    for (std::uint64_t p = 0; p <= parts; ++p)
      (void)gpusort::cpu::select_cuts(data.runs, options.count / parts * p, format,
                                      options.descending);
  });

  std::printf("kernel: %s\n", kernel);
  line("merge", merge_t);
  if (time_tree) line("tree", tree_t);
  line("memcpy", copy_t);
  std::printf("merge/memcpy wall time %.2fx; select_cuts of %llu cuts, one thread: %.3f ms\n",
              merge_t.wall_s / copy_t.wall_s, static_cast<unsigned long long>(parts + 1),
              select_t.wall_s * 1e3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort-bench-merge: error: %s\n", e.what());
    return 2;
  }
}
