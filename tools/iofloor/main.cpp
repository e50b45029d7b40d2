// gpusort-iofloor: the I/O floor of a sort — read the input and write it back through gpusort's
// own I/O layer, no sorting, trying each read and write path and reporting the best.
#include <fcntl.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/tool_support.hpp"
#include "core/parse_size.hpp"
#include "gpusort/error.hpp"
#include "io/file_descriptor.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "io/signal_cleanup.hpp"
#include "io/uring.hpp"

namespace po = boost::program_options;
using namespace gpusort;

namespace {

constexpr std::size_t direct_alignment = 4096;

struct settings {
  std::string in;
  std::string out;
  unsigned repeat = 3;
  unsigned threads = 1;
  io::transfer_config transfer{};
  bool verify = false;
};

/// A page-aligned buffer that holds the whole input (aligned for O_DIRECT writes).
class aligned_buffer {
 public:
  explicit aligned_buffer(std::uint64_t bytes) : size_(bytes) {
    const std::size_t padded = (bytes + direct_alignment - 1) / direct_alignment * direct_alignment;
    if (padded == 0) return;
    data_ = static_cast<std::byte*>(std::aligned_alloc(direct_alignment, padded));
    if (data_ == nullptr) throw out_of_memory("input buffer", padded);
    // Touch every page once, in parallel, so that page faults are not timed as I/O.
    tbb::parallel_for(std::size_t{0}, padded / direct_alignment,
                      [&](std::size_t p) { data_[p * direct_alignment] = std::byte{0}; });
  }
  ~aligned_buffer() { std::free(data_); }
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  aligned_buffer(aligned_buffer&&) = delete;
  aligned_buffer& operator=(aligned_buffer&&) = delete;

  [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
};

/// Runs fn(i, begin, length) on `threads` threads over [0, bytes), cut at `granule` multiples.
void on_threads(unsigned threads, std::uint64_t bytes, std::uint64_t granule,
                const std::function<void(unsigned, std::uint64_t, std::uint64_t)>& fn) {
  const std::uint64_t granules = (bytes + granule - 1) / granule;
  const std::uint64_t per = (granules + threads - 1) / threads;
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (unsigned t = 0; t < threads; ++t) {
    const std::uint64_t begin = std::min(bytes, t * per * granule);
    const std::uint64_t end = std::min(bytes, (t + 1) * per * granule);
    if (begin >= end) break;
    pool.emplace_back([&, t, begin, end] {
      try {
        fn(t, begin, end - begin);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// --- read paths --------------------------------------------------------------------------

using read_fn = std::function<void(const io::file_descriptor&, std::span<std::byte>)>;

struct read_variant {
  std::string name;
  std::string what;
  read_fn run;
};

std::vector<read_variant> read_variants(const settings& s) {
  std::vector<read_variant> v;
  v.push_back({"uring-inline", "one ring; page-cache hits complete inline in this thread",
               [cfg = s.transfer](const io::file_descriptor& fd, std::span<std::byte> dst) {
                 io::transfer_config c = cfg;
                 c.force_async = false;
                 io::uring ring(64);
                 ring.read_exact(fd, 0, dst, c);
               }});
  v.push_back({"uring-async", "one ring, IOSQE_ASYNC: copies run in the kernel's worker pool",
               [cfg = s.transfer](const io::file_descriptor& fd, std::span<std::byte> dst) {
                 io::transfer_config c = cfg;
                 c.force_async = true;
                 io::uring ring(64);
                 ring.read_exact(fd, 0, dst, c);
               }});
  v.push_back({"uring-threads", std::to_string(s.threads) + " threads, a ring each, inline",
               [cfg = s.transfer, n = s.threads](const io::file_descriptor& fd,
                                                 std::span<std::byte> dst) {
                 io::transfer_config c = cfg;
                 c.force_async = false;
                 on_threads(n, dst.size(), c.block_bytes,
                            [&](unsigned, std::uint64_t begin, std::uint64_t len) {
                              io::uring ring(64);
                              ring.read_exact(fd, begin, dst.subspan(begin, len), c);
                            });
               }});
  return v;
}

// --- write paths -------------------------------------------------------------------------

using write_fn = std::function<void(io::output_file&, std::span<const std::byte>)>;

struct write_variant {
  std::string name;
  std::string what;
  write_fn run;
};

void preallocate(const io::output_file& out, std::uint64_t bytes) {
  if (bytes == 0) return;
  const int ret = ::posix_fallocate(out.fd().get(), 0, static_cast<off_t>(bytes));
  if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
    throw_error("cannot allocate " + std::to_string(bytes) + " bytes for " + out.target(), ret);
}

/// The output reopened with O_DIRECT through /proc/self/fd (it is an unnamed O_TMPFILE).
io::file_descriptor reopen_direct(const io::output_file& out) {
  const std::string proc = "/proc/self/fd/" + std::to_string(out.fd().get());
  const int fd = ::open(proc.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) throw_error("cannot reopen the output of " + out.target() + " with O_DIRECT", errno);
  return io::file_descriptor(fd, out.target() + " (O_DIRECT)");
}

/// O_DIRECT writes of the aligned head on `threads` rings; the unaligned tail buffered.
void write_direct(io::output_file& out, std::span<const std::byte> src, unsigned threads,
                  io::transfer_config cfg) {
  preallocate(out, src.size());
  const std::uint64_t head = src.size() / direct_alignment * direct_alignment;
  cfg.force_async = false;  // O_DIRECT requests are asynchronous in io_uring already
  {
    const io::file_descriptor direct = reopen_direct(out);
    on_threads(threads, head, cfg.block_bytes,
               [&](unsigned, std::uint64_t begin, std::uint64_t len) {
                 io::uring ring(64);
                 ring.write_exact(direct, begin, src.subspan(begin, len), cfg);
               });
  }
  if (head < src.size()) {
    io::uring ring(8);
    ring.write_exact(out.fd(), head, src.subspan(head), cfg);
  }
}

std::vector<write_variant> write_variants(const settings& s) {
  std::vector<write_variant> v;
  v.push_back({"uring-sink", "gpusort's uring sink: a writer thread, one ring (IOSQE_ASYNC)",
               [](io::output_file& out, std::span<const std::byte> src) {
                 auto sink = io::make_output_sink(out, src.size(), io::write_method::uring);
                 sink->write(0, src);
                 sink->finish();
               }});
  v.push_back({"mmap-sink", "gpusort's mmap sink: fallocate + shared mapping + parallel stores",
               [](io::output_file& out, std::span<const std::byte> src) {
                 auto sink = io::make_output_sink(out, src.size(), io::write_method::mmap);
                 sink->write(0, src);
                 sink->finish();
               }});
  v.push_back({"uring-inline", "fallocate + one ring, requests completed inline",
               [cfg = s.transfer](io::output_file& out, std::span<const std::byte> src) {
                 preallocate(out, src.size());
                 io::transfer_config c = cfg;
                 c.force_async = false;
                 io::uring ring(64);
                 ring.write_exact(out.fd(), 0, src, c);
               }});
  v.push_back({"uring-async", "fallocate + one ring, IOSQE_ASYNC",
               [cfg = s.transfer](io::output_file& out, std::span<const std::byte> src) {
                 preallocate(out, src.size());
                 io::transfer_config c = cfg;
                 c.force_async = true;
                 io::uring ring(64);
                 ring.write_exact(out.fd(), 0, src, c);
               }});
  v.push_back({"uring-threads",
               "fallocate + " + std::to_string(s.threads) + " threads, a ring each, inline",
               [cfg = s.transfer, n = s.threads](io::output_file& out,
                                                 std::span<const std::byte> src) {
                 preallocate(out, src.size());
                 io::transfer_config c = cfg;
                 c.force_async = false;
                 on_threads(n, src.size(), c.block_bytes,
                            [&](unsigned, std::uint64_t begin, std::uint64_t len) {
                              io::uring ring(64);
                              ring.write_exact(out.fd(), begin, src.subspan(begin, len), c);
                            });
               }});
  v.push_back({"direct", "O_DIRECT, fallocate, one ring",
               [cfg = s.transfer](io::output_file& out, std::span<const std::byte> src) {
                 write_direct(out, src, 1, cfg);
               }});
  v.push_back({"direct-threads",
               "O_DIRECT, fallocate, " + std::to_string(s.threads) + " threads, a ring each",
               [cfg = s.transfer, n = s.threads](io::output_file& out,
                                                 std::span<const std::byte> src) {
                 write_direct(out, src, n, cfg);
               }});
  return v;
}

// --- measuring ---------------------------------------------------------------------------

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct result {
  std::string phase;  // read, write or floor
  std::string name;
  std::string what;
  std::vector<double> runs;
  std::string skipped;  // why the variant could not run, if it could not
  [[nodiscard]] double seconds() const { return median(runs); }
};

double rate(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

/// Times one write into `out`: create the temp file, write, rename over the target. The old
/// target is removed first, untimed, so that freeing its pages is not charged to the write.
double timed_write(const settings& s, const write_fn& fn, std::span<const std::byte> src) {
  if (::unlink(s.out.c_str()) != 0 && errno != ENOENT) throw_error("cannot remove " + s.out, errno);
  const auto start = clock_type::now();
  io::output_file out(s.out);
  fn(out, src);
  out.commit(/*fsync=*/false, src.size());
  return seconds_since(start);
}

double timed_read(const settings& s, const read_fn& fn, std::span<std::byte> dst) {
  const auto start = clock_type::now();
  const io::file_descriptor fd = io::file_descriptor::open(s.in, O_RDONLY);
  fn(fd, dst);
  return seconds_since(start);
}

void verify_copy(const settings& s, std::span<const std::byte> expected) {
  const io::file_descriptor fd = io::file_descriptor::open(s.out, O_RDONLY);
  GPUSORT_EXPECTS(fd.size() == expected.size(),
                  "verify: " + s.out + " has " + std::to_string(fd.size()) + " bytes, expected " +
                      std::to_string(expected.size()));
  std::vector<std::byte> chunk(std::size_t{8} << 20);
  io::uring ring(16);
  for (std::uint64_t off = 0; off < expected.size(); off += chunk.size()) {
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>(chunk.size(), expected.size() - off));
    ring.read_exact(fd, off, std::span(chunk).first(n), s.transfer);
    GPUSORT_EXPECTS(std::memcmp(chunk.data(), expected.data() + off, n) == 0,
                    "verify: " + s.out + " differs from " + s.in + " near byte " +
                        std::to_string(off));
  }
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description visible("Options");
  visible.add_options()
      ("help,h", "show this help and exit")
      ("version", "show the version and exit")
      ("repeat,R", po::value<unsigned>()->default_value(3)->value_name("R"),
       "runs per variant; the median is reported")
      ("threads,j", po::value<unsigned>()->default_value(0)->value_name("N"),
       "threads for the threaded paths and the mmap sink (0 = all hardware threads)")
      ("block-size", po::value<std::string>()->default_value("8M")->value_name("BYTES"),
       "bytes per io_uring request")
      ("queue-depth", po::value<unsigned>()->default_value(16)->value_name("N"),
       "io_uring requests in flight per ring")
      ("read", po::value<std::string>()->value_name("NAMES"),
       "comma-separated read variants to try (default all)")
      ("write", po::value<std::string>()->value_name("NAMES"),
       "comma-separated write variants to try (default all)")
      ("json", "print the results as JSON on stdout instead of a table")
      ("verify", "after the last run, check that OUT equals IN byte for byte");
  const std::optional<po::variables_map> parsed =
      tools::parse_with_operands(argc, argv, visible, "gpusort-iofloor");
  if (!parsed) return 2;
  const po::variables_map& vm = *parsed;
  if (vm.count("help")) {
    std::cout
        << "Usage: gpusort-iofloor [OPTIONS] IN OUT\n"
           "Measures the I/O floor of sorting IN into OUT: reads IN into memory and writes it to\n"
           "OUT with gpusort's own I/O layer and no sorting, trying each path, and reports each\n"
           "path's median time and rate, the best read + write combination, and that\n"
           "combination measured end to end (the floor). Every write goes to a temp file that is\n"
           "renamed over OUT, as gpusort does; the previous OUT is removed first, untimed.\n"
           "Keep IN in the page cache (read it once) to measure the cached floor.\n\n"
           "Read variants:  uring-inline, uring-async (IOSQE_ASYNC), uring-threads\n"
           "Write variants: uring-sink, mmap-sink (gpusort's two sinks), uring-inline,\n"
           "                uring-async, uring-threads, direct, direct-threads (O_DIRECT)\n\n"
        << visible;
    return 0;
  }
  if (vm.count("version")) {
    tools::print_version("gpusort-iofloor");
    return 0;
  }
  try {
    io::install_signal_cleanup();
    const std::vector<std::string> files =
        vm.count("files") ? vm["files"].as<std::vector<std::string>>() : std::vector<std::string>{};
    GPUSORT_EXPECTS(files.size() == 2, "expected IN OUT");
    settings s;
    s.in = files[0];
    s.out = files[1];
    s.repeat = std::max(1u, vm["repeat"].as<unsigned>());
    s.threads = vm["threads"].as<unsigned>();
    if (s.threads == 0) s.threads = std::max(1u, std::thread::hardware_concurrency());
    s.transfer.block_bytes = static_cast<std::size_t>(
        parse_size(vm["block-size"].as<std::string>(), 0, "block size"));
    s.transfer.queue_depth = vm["queue-depth"].as<unsigned>();
    GPUSORT_EXPECTS(s.transfer.block_bytes >= direct_alignment &&
                        s.transfer.block_bytes % direct_alignment == 0,
                    "--block-size must be a multiple of 4096");
    s.verify = vm.count("verify") > 0;
    const bool json = vm.count("json") > 0;
    const tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                          s.threads);

    auto selected = [&](const char* option, const std::string& name) {
      if (!vm.count(option)) return true;
      const std::string list = "," + vm[option].as<std::string>() + ",";
      return list.find("," + name + ",") != std::string::npos;
    };

    std::uint64_t bytes = 0;
    {
      const io::file_descriptor fd = io::file_descriptor::open(s.in, O_RDONLY);
      GPUSORT_EXPECTS(fd.is_regular(), "cannot measure " + s.in + ": not a regular file");
      bytes = fd.size();
    }
    const aligned_buffer buffer(bytes);

    std::vector<result> results;
    std::optional<std::size_t> best_read;
    std::optional<std::size_t> best_write;
    for (const read_variant& rv : read_variants(s)) {
      if (!selected("read", rv.name)) continue;
      result r{"read", rv.name, rv.what, {}, {}};
      for (unsigned i = 0; i < s.repeat; ++i)
        r.runs.push_back(timed_read(s, rv.run, buffer.span()));
      results.push_back(r);
      if (!best_read || r.seconds() < results[*best_read].seconds()) best_read = results.size() - 1;
    }
    GPUSORT_EXPECTS(best_read.has_value(), "no read variant selected");
    for (const write_variant& wv : write_variants(s)) {
      if (!selected("write", wv.name)) continue;
      result r{"write", wv.name, wv.what, {}, {}};
      try {
        for (unsigned i = 0; i < s.repeat; ++i)
          r.runs.push_back(timed_write(s, wv.run, buffer.span()));
      } catch (const error& e) {
        // A path the filesystem does not offer (O_DIRECT on tmpfs) is reported, not fatal.
        r.runs.clear();
        r.skipped = e.what();
      }
      results.push_back(r);
      if (r.skipped.empty() && (!best_write || r.seconds() < results[*best_write].seconds()))
        best_write = results.size() - 1;
    }
    GPUSORT_EXPECTS(best_write.has_value(), "no write variant could run");

    // The best combination, measured end to end: what a sort that costs nothing would take.
    const result& rb = results[*best_read];
    const result& wb = results[*best_write];
    const read_fn best_read_fn = [&] {
      for (const read_variant& rv : read_variants(s))
        if (rv.name == rb.name) return rv.run;
      return read_fn{};
    }();
    const write_fn best_write_fn = [&] {
      for (const write_variant& wv : write_variants(s))
        if (wv.name == wb.name) return wv.run;
      return write_fn{};
    }();
    result floor{"floor", rb.name + " + " + wb.name, "best read, then best write", {}, {}};
    for (unsigned i = 0; i < s.repeat; ++i) {
      if (::unlink(s.out.c_str()) != 0 && errno != ENOENT)
        throw_error("cannot remove " + s.out, errno);
      const auto start = clock_type::now();
      {
        const io::file_descriptor fd = io::file_descriptor::open(s.in, O_RDONLY);
        best_read_fn(fd, buffer.span());
      }
      io::output_file out(s.out);
      best_write_fn(out, buffer.span());
      out.commit(false, buffer.span().size());
      floor.runs.push_back(seconds_since(start));
    }
    if (s.verify) verify_copy(s, buffer.span());

    const double sum = rb.seconds() + wb.seconds();
    if (json) {
      using ordered = nlohmann::ordered_json;
      ordered variants = ordered::array();
      for (const result& r : results) {
        ordered v = {{"phase", r.phase}, {"name", r.name}, {"what", r.what}};
        if (!r.skipped.empty()) {
          v["skipped"] = r.skipped;
        } else {
          v["median_s"] = r.seconds();
          v["gb_per_s"] = rate(bytes, r.seconds());
          v["runs_s"] = r.runs;
        }
        variants.push_back(std::move(v));
      }
      const ordered o = {
          {"input", s.in},
          {"output", s.out},
          {"bytes", bytes},
          {"repeat", s.repeat},
          {"threads", s.threads},
          {"block_bytes", s.transfer.block_bytes},
          {"queue_depth", s.transfer.queue_depth},
          {"variants", std::move(variants)},
          {"best",
           {{"read", rb.name},
            {"write", wb.name},
            {"read_s", rb.seconds()},
            {"write_s", wb.seconds()},
            {"sum_s", sum},
            {"gb_per_s", rate(bytes, sum)}}},
          {"floor",
           {{"median_s", floor.seconds()},
            {"gb_per_s", rate(bytes, floor.seconds())},
            {"runs_s", floor.runs}}}};
      std::cout << o.dump(2, ' ', false, ordered::error_handler_t::replace) << "\n";
    } else {
      std::printf("gpusort-iofloor: %s -> %s, %s, median of %u runs, %u threads, %s requests, "
                  "queue depth %u\n\n",
                  s.in.c_str(), s.out.c_str(), format_bytes(bytes).c_str(), s.repeat, s.threads,
                  format_bytes(s.transfer.block_bytes).c_str(), s.transfer.queue_depth);
      std::printf("%-6s %-16s %10s %8s  %s\n", "phase", "variant", "median s", "GB/s", "path");
      for (const result& r : results) {
        if (!r.skipped.empty()) {
          std::printf("%-6s %-16s %10s %8s  skipped: %s\n", r.phase.c_str(), r.name.c_str(), "-",
                      "-", r.skipped.c_str());
          continue;
        }
        std::printf("%-6s %-16s %10.4f %8.2f  %s\n", r.phase.c_str(), r.name.c_str(),
                    r.seconds(), rate(bytes, r.seconds()), r.what.c_str());
      }
      std::printf("\nbest:  read %s (%.4f s) + write %s (%.4f s) = %.4f s, %.2f GB/s\n",
                  rb.name.c_str(), rb.seconds(), wb.name.c_str(), wb.seconds(), sum,
                  rate(bytes, sum));
      std::printf("floor: %s measured end to end: %.4f s, %.2f GB/s\n", floor.name.c_str(),
                  floor.seconds(), rate(bytes, floor.seconds()));
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gpusort-iofloor: error: " << e.what() << "\n";
    return 2;
  }
}
