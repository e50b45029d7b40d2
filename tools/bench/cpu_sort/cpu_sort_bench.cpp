// gpusort-bench-cpusort: median time of sort_records and of tbb::parallel_sort on random data.
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_arena.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "cpu/radix_sort.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"
#include "gpusort/version.hpp"

namespace po = boost::program_options;
using namespace gpusort;

namespace {

struct aligned_free {
  std::align_val_t alignment{4096};
  void operator()(std::byte* p) const { ::operator delete[](p, alignment); }
};
using buffer = std::unique_ptr<std::byte[], aligned_free>;

/// Page-aligned and touched once, so page faults are not timed; with `huge`, backed by
/// transparent huge pages where the kernel allows (fewer TLB misses in the scatters and gather).
buffer make_buffer(std::uint64_t bytes, bool huge) {
  constexpr std::uint64_t huge_page = std::uint64_t{2} << 20;
  const std::uint64_t alloc = huge ? (bytes + huge_page - 1) / huge_page * huge_page : bytes;
  const std::align_val_t alignment{huge ? huge_page : 4096};
  buffer b(static_cast<std::byte*>(::operator new[](std::max<std::uint64_t>(alloc, 1), alignment)),
           aligned_free{alignment});
  if (huge && alloc != 0 && ::madvise(b.get(), alloc, MADV_HUGEPAGE) != 0)
    std::perror("gpusort-bench-cpusort: madvise(MADV_HUGEPAGE)");
  tbb::parallel_for(std::uint64_t{0}, bytes, std::uint64_t{1} << 20,
                    [&](std::uint64_t at) {
                      std::memset(b.get() + at, 0, std::min<std::uint64_t>(bytes - at, 1 << 20));
                    });
  return b;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Random bytes: word i of the buffer is the AND of `and_words` values splitmix64(seed + i +
/// k * words) (1: uniform; more: each bit 1 with probability 2^-and_words, Thearling's
/// entropy-reduced keys).
void fill_random(std::byte* p, std::uint64_t bytes, std::uint64_t seed, unsigned and_words = 1) {
  const std::uint64_t words = bytes / 8;
  tbb::parallel_for(std::uint64_t{0}, words, std::uint64_t{1} << 16, [&](std::uint64_t w0) {
    const std::uint64_t w1 = std::min(words, w0 + (std::uint64_t{1} << 16));
    for (std::uint64_t w = w0; w < w1; ++w) {
      std::uint64_t v = ~std::uint64_t{0};
      for (unsigned k = 0; k < and_words; ++k) v &= splitmix64(seed + w + k * words);
      std::memcpy(p + w * 8, &v, 8);
    }
  });
  for (std::uint64_t b = words * 8; b < bytes; ++b)
    p[b] = static_cast<std::byte>(splitmix64(seed + b));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/// Checks that the normalized keys never decrease (numeric keys) or memcmp order (bytes keys).
bool is_sorted(const std::byte* recs, std::uint64_t n, const record_format& f, bool descending) {
  const std::byte* k = recs + f.key_offset;
  const std::uint32_t r = f.record_size;
  for (std::uint64_t i = 1; i < n; ++i) {
    const std::byte* a = k + (i - 1) * r;
    const std::byte* b = k + i * r;
    bool bad = false;
    if (f.type == key_type::bytes) {
      const int c = std::memcmp(a, b, f.key_size);
      bad = descending ? c < 0 : c > 0;
    } else if (detail::has_32bit_word(f.type)) {
      const auto codec = detail::make_key_codec<std::uint32_t>(f.type, descending);
      bad = codec.normalize(detail::load_word<std::uint32_t>(a)) >
            codec.normalize(detail::load_word<std::uint32_t>(b));
    } else {
      const auto codec = detail::make_key_codec<std::uint64_t>(f.type, descending);
      bad = codec.normalize(detail::load_word<std::uint64_t>(a)) >
            codec.normalize(detail::load_word<std::uint64_t>(b));
    }
    if (bad) return false;
  }
  return true;
}

double process_cpu_seconds() {
  timespec ts{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Wall seconds of fn(); adds the CPU seconds all threads spent (on a shared machine the wall
/// time includes time the threads waited for a core).
template <typename Fn>
double seconds(std::vector<double>& cpu, Fn&& fn) {
  const double c0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cpu.push_back(process_cpu_seconds() - c0);
  return wall;
}

int run(int argc, char** argv) {
  std::uint64_t count = std::uint64_t{1} << 26;
  std::string type = "u64";
  std::uint32_t record_size = 0;
  std::uint32_t key_offset = 0;
  int repeat = 5;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::uint64_t seed = 1;
  unsigned and_words = 1;
  po::options_description desc(
      "gpusort-bench-cpusort: times sort_records (the CPU run sorter) and tbb::parallel_sort\n"
      "on random data with the same number of threads; prints medians and the ratio.\n"
      "Options");
  desc.add_options()("help,h", "show this help")("version", "show the version and exit")(
      "count,n", po::value(&count)->default_value(count), "records to sort")(
      "type,t", po::value(&type)->default_value(type), "key type: u32 u64 i32 i64 f32 f64 bytes:N")(
      "record-size", po::value(&record_size), "bytes per record (default: the key's size)")(
      "key-offset", po::value(&key_offset)->default_value(0), "byte offset of the key")(
      "descending,r", "sort in descending order")(
      "repeat", po::value(&repeat)->default_value(repeat), "timed runs of each sorter")(
      "threads", po::value(&threads)->default_value(threads), "TBB threads for both sorters")(
      "seed", po::value(&seed)->default_value(seed), "random data seed")(
      "and-words", po::value(&and_words)->default_value(and_words),
      "each 8-byte word the AND of this many random words (1: uniform)")(
      "no-baseline", "skip tbb::parallel_sort (for profiling sort_records alone)")(
      "huge-pages", "madvise(MADV_HUGEPAGE) on every buffer (both sorters)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "gpusort-bench-cpusort (gpusort) " GPUSORT_VERSION "\n";
    return 0;
  }
  const bool descending = vm.count("descending") != 0;
  const bool huge = vm.count("huge-pages") != 0;
  GPUSORT_EXPECTS(repeat >= 1 && threads >= 1 && and_words >= 1,
                  "--repeat, --threads and --and-words must be positive");

  record_format format;
  set_key_type(format, type);
  format.record_size = record_size != 0 ? record_size : format.key_size;
  format.key_offset = key_offset;
  format.validate();

  const std::uint64_t bytes = count * format.record_size;
  tbb::task_arena arena(threads);
  std::vector<double> ours;
  std::vector<double> theirs;
  std::vector<double> ours_cpu;
  std::vector<double> theirs_cpu;
  arena.execute([&] {
    buffer original = make_buffer(bytes, huge);
    buffer data = make_buffer(bytes, huge);
    buffer scratch = make_buffer(cpu::sort_scratch_bytes(count, format), huge);
    fill_random(original.get(), bytes, seed, and_words);
    for (int r = 0; r < repeat; ++r) {
      std::memcpy(data.get(), original.get(), bytes);
      const std::byte* out = nullptr;
      ours.push_back(seconds(ours_cpu, [&] {
        out = cpu::sort_records(data.get(), scratch.get(), count, format, descending);
      }));
      if (r == 0 && !is_sorted(out, count, format, descending))
        throw_error("sort_records: output is not sorted");
    }
    if (vm.count("no-baseline")) return;
    // The baseline sorts u64 keys: the same data when --type u64, else as many random words.
    buffer keys_original = make_buffer(count * 8, huge);
    if (format.type == key_type::u64 && format.key_only())
      std::memcpy(keys_original.get(), original.get(), count * 8);
    else
      fill_random(keys_original.get(), count * 8, seed, and_words);
    original.reset();
    scratch.reset();
    if (bytes < count * 8) data = make_buffer(count * 8, huge);
    auto* keys = reinterpret_cast<std::uint64_t*>(data.get());
    for (int r = 0; r < repeat; ++r) {
      std::memcpy(keys, keys_original.get(), count * 8);
      theirs.push_back(seconds(theirs_cpu, [&] { tbb::parallel_sort(keys, keys + count); }));
    }
  });

  const double t_ours = median(ours);
  const double m = static_cast<double>(count) / 1e6;
  std::printf("records      %llu x %s (%s), %s, AND of %u word(s), %d threads, median of %d\n",
              static_cast<unsigned long long>(count), describe(format).c_str(),
              type.c_str(), descending ? "descending" : "ascending", and_words, threads, repeat);
  std::printf("sort_records        %9.4f s  %9.1f Mrecords/s  %8.1f MB/s  (cpu %.4f s)\n",
              t_ours, m / t_ours, static_cast<double>(bytes) / 1e6 / t_ours, median(ours_cpu));
  if (!theirs.empty()) {
    const double t_theirs = median(theirs);
    std::printf("tbb::parallel_sort  %9.4f s  %9.1f Mkeys/s     (cpu %.4f s; u64 keys%s)\n",
                t_theirs, m / t_theirs, median(theirs_cpu),
                format.type == key_type::u64 && format.key_only() ? ", same data" : ", random");
    std::printf("ratio (rate of sort_records / rate of tbb::parallel_sort): %.2f\n",
                t_theirs / t_ours);
  }
  std::printf("sort_records runs:");
  for (double t : ours) std::printf(" %.4f", t);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort-bench-cpusort: error: %s\n", e.what());
    return 2;
  }
}
