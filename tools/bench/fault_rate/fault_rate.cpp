// The output side of gpusort's page-cache path, alone: a file of SIZE GiB is sized (ftruncate,
// or fallocate where asked), mapped shared, and faulted in with MADV_POPULATE_WRITE in 64 MiB
// windows that THREADS threads claim in turn, as mapped_sink's prefault does. Then the same
// threads store into the faulted pages (a second pass), for the rate a writer sees once the
// prefault is done. Each case's file is removed, its dirty pages with it, before the next.
// Usage: gpusort-bench-faults DIR GiB THREADS... (prints one CSV line per case)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t window = std::size_t{64} << 20;

[[noreturn]] void fail(const std::string& what) {
  std::perror(what.c_str());
  std::exit(1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs `work(offset, length)` over [0, bytes) in windows that `threads` threads claim in turn;
/// returns the seconds it took.
template <class Work>
double over_windows(std::size_t bytes, unsigned threads, Work work) {
  std::atomic<std::size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t at = next.fetch_add(window); at < bytes; at = next.fetch_add(window))
        work(at, std::min(window, bytes - at));
    });
  for (std::thread& t : pool) t.join();
  return seconds_since(t0);
}

void one_case(const std::string& dir, std::size_t bytes, unsigned threads, bool allocate) {
  const std::string path = dir + "/gpusort-bench-faults.bin";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("open " + path);
  const auto t0 = std::chrono::steady_clock::now();
  if (allocate) {
    if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) fail("fallocate " + path);
  } else if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    fail("ftruncate " + path);
  }
  const double size_s = seconds_since(t0);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail("mmap " + path);
  auto* base = static_cast<char*>(p);
  const double fault_s = over_windows(bytes, threads, [&](std::size_t at, std::size_t n) {
    if (::madvise(base + at, n, MADV_POPULATE_WRITE) != 0) fail("madvise");
  });
  const double store_s = over_windows(bytes, threads, [&](std::size_t at, std::size_t n) {
    std::memset(base + at, 1, n);
  });
  ::munmap(p, bytes);
  ::close(fd);
  ::unlink(path.c_str());
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("%s,%zu,%u,%.3f,%.3f,%.2f,%.3f,%.2f\n", allocate ? "fallocate" : "ftruncate",
              bytes >> 30, threads, size_s, fault_s, gb / fault_s, store_s, gb / store_s);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s DIR GiB THREADS...\n", argv[0]);
    return 2;
  }
  const std::size_t bytes = std::strtoull(argv[2], nullptr, 10) << 30;
  std::printf("sized_by,gib,threads,size_s,fault_s,fault_gb_s,store_s,store_gb_s\n");
  for (int i = 3; i < argc; ++i) {
    const auto threads = static_cast<unsigned>(std::strtoul(argv[i], nullptr, 10));
    one_case(argv[1], bytes, threads, false);
    one_case(argv[1], bytes, threads, true);
  }
}
