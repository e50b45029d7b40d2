// Measures, for a buffer the size of the sorted runs of an out-of-core sort: first-touching it
// on every thread, registering it with cudaHostRegister (whole, and in 1 GiB parts from 1 to
// 16 threads), copying it to the device and back in 32 MiB pieces, unregistering and unmapping.
// Then, with --during: H2D copies from page-locked staging while 4 threads prefault and register
// such a buffer in blocks of 1 GiB and of 64 MiB (gpusort pins its runs while it copies
// chunks to the device).
// With --contention FILE: what stalls those copies in gpusort's range sort, which page-locks
// its runs while the output (FILE, created and removed) is faulted in: the copies' rate, their
// slowest and how many took over 4 ms, beside each combination of the range sort's activities
// (page-locking runs as gpu::register_host_memory does, from this context or a second one;
// faulting a shared file mapping in; D2H copies on a second stream).
// With --file-mapping IN OUT: whether a file's page cache can be page-locked through a shared
// mapping and copied from (IN, read-only) or into (OUT, created and removed) by the device
// directly, and how fast: registering in 64 MiB blocks on 4-16 threads, 32 MiB copies, and
// the copies of IN each issued as soon as its block is registered.
// Usage: gpusort-bench-pinning [GiB (default 16)] [--during | --contention FILE |
//                               --file-mapping IN OUT]
#include <cuda.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/host_buffer.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// GB/s of 32 MiB H2D copies from page-locked staging while `threads` threads prefault and
/// register `bytes` in blocks of `block` bytes (no registration when block is 0); prints the
/// copy rate and how long the registration took.
void copies_during_registration(std::size_t bytes, std::size_t block, unsigned threads) {
  const std::size_t piece = std::size_t{32} << 20;
  const std::size_t staging_bytes = 8 * piece;
  void* staging = nullptr;
  check(cudaMallocHost(&staging, staging_bytes), "cudaMallocHost");
  std::memset(staging, 1, staging_bytes);
  void* device = nullptr;
  check(cudaMalloc(&device, staging_bytes), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  gpusort::host_buffer memory(bytes, /*prefault=*/false);
  std::atomic<bool> done{false};
  std::atomic<std::size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  double register_s = 0;
  std::vector<std::thread> pool;
  if (block != 0) {
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (std::size_t off = next.fetch_add(block); off < bytes; off = next.fetch_add(block)) {
          const std::size_t n = std::min(block, bytes - off);
          for (std::size_t b = 0; b < n; b += 4096) memory.data()[off + b] = std::byte{0};
          check(cudaHostRegister(memory.data() + off, n, cudaHostRegisterPortable), "register");
        }
      });
  }
  std::thread waiter([&] {
    for (std::thread& th : pool) th.join();
    register_s = seconds_since(t0);
    done = true;
  });
  std::size_t copied = 0;
  // Copies for as long as the registration runs (1 s without one).
  while (block != 0 ? !done.load() : seconds_since(t0) < 1.0) {
    for (std::size_t i = 0; i < 8; ++i)
      check(cudaMemcpyAsync(static_cast<std::byte*>(device) + i * piece,
                            static_cast<std::byte*>(staging) + i * piece, piece,
                            cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    copied += staging_bytes;
  }
  const double copy_s = seconds_since(t0);
  waiter.join();
  std::printf("h2d-during-register-%zuMiB-blocks,%u,%zu,%.3f,%.2f\n", block >> 20, threads,
              bytes >> 30, register_s, static_cast<double>(copied) / copy_s / 1e9);
  std::fflush(stdout);
  for (std::size_t off = 0; block != 0 && off < bytes; off += block)
    check(cudaHostUnregister(memory.data() + off), "cudaHostUnregister");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check(cudaFree(device), "cudaFree");
  check(cudaFreeHost(staging), "cudaFreeHost");
}

void check(CUresult e, const char* what) {
  if (e != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(e, &name);
    std::fprintf(stderr, "%s: %s\n", what, name != nullptr ? name : "?");
    std::exit(1);
  }
}

/// A new file of `bytes` at `path` (replacing any), mapped shared and writable; exits on
/// failure. `fd` receives its descriptor.
std::byte* map_new_file(const char* path, std::size_t bytes, int& fd) {
  fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::perror(path);
    std::exit(1);
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return static_cast<std::byte*>(map);
}

struct contention_case {
  const char* name;
  bool pin;          ///< 13 runs of bytes/13 touched and registered on 4 threads
  bool second_ctx;   ///< ... registered from a context of their own
  bool prefault;     ///< 8 threads fault in a shared mapping of FILE, 64 MiB at a time
  bool d2h;          ///< D2H copies on a second stream meanwhile
};

/// H2D copies of 32 MiB from page-locked staging, one at a time, while the case's activities
/// run (or for 1 s without any); prints one CSV line.
void contention(const contention_case& c, std::size_t bytes, const char* path, CUcontext second) {
  const std::size_t piece = std::size_t{32} << 20;
  void* staging = nullptr;
  void* back = nullptr;
  check(cudaMallocHost(&staging, piece), "cudaMallocHost");
  check(cudaMallocHost(&back, piece), "cudaMallocHost");
  std::memset(staging, 1, piece);
  void* device = nullptr;
  check(cudaMalloc(&device, 2 * piece), "cudaMalloc");
  cudaStream_t stream;
  cudaStream_t stream_back;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  check(cudaStreamCreate(&stream_back), "cudaStreamCreate");

  const std::size_t runs = 13;
  const std::size_t run_bytes = bytes / runs / 4096 * 4096;
  std::vector<gpusort::host_buffer> run_memory(runs);
  std::atomic<std::size_t> next_run{0};
  std::atomic<int> active{0};   // threads of every activity still at work
  std::atomic<int> pinners{0};  // of the page-locking
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  double pin_s = 0;
  double prefault_s = 0;
  if (c.pin) {
    for (int t = 0; t < 4; ++t) {
      ++active;
      ++pinners;
      pool.emplace_back([&] {
        if (c.second_ctx) check(cuCtxSetCurrent(second), "cuCtxSetCurrent");
        for (std::size_t r = next_run++; r < runs; r = next_run++) {
          run_memory[r] = gpusort::host_buffer(run_bytes, /*prefault=*/true);
          check(cudaHostRegister(run_memory[r].data(), run_bytes, cudaHostRegisterPortable),
                "cudaHostRegister");
        }
        if (--pinners == 0) pin_s = seconds_since(t0);
        --active;
      });
    }
  }
  int fd = -1;
  std::byte* map = nullptr;
  if (c.prefault) {
    map = map_new_file(path, bytes, fd);
    std::atomic<std::size_t> next{0};
    const std::size_t window = std::size_t{64} << 20;
    std::atomic<int> faulting{8};
    for (int t = 0; t < 8; ++t) {
      ++active;
      pool.emplace_back([&, window] {
        for (std::size_t off = next.fetch_add(window); off < bytes && !stop;
             off = next.fetch_add(window))
          ::madvise(map + off, std::min(window, bytes - off), MADV_POPULATE_WRITE);
        if (--faulting == 0) prefault_s = seconds_since(t0);
        --active;
      });
    }
  }
  std::thread backward;
  if (c.d2h) {
    backward = std::thread([&] {
      while (!stop) {
        check(cudaMemcpyAsync(back, static_cast<std::byte*>(device) + piece, piece,
                              cudaMemcpyDeviceToHost, stream_back), "cudaMemcpyAsync");
        check(cudaStreamSynchronize(stream_back), "cudaStreamSynchronize");
      }
    });
  }
  std::size_t copies = 0;
  std::size_t slow = 0;
  double slowest = 0;
  double slow_s = 0;
  while (active > 0 || (!c.pin && !c.prefault && seconds_since(t0) < 1.0)) {
    const auto a = std::chrono::steady_clock::now();
    check(cudaMemcpyAsync(device, staging, piece, cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const double d = seconds_since(a);
    ++copies;
    slowest = std::max(slowest, d);
    if (d > 0.004) {
      ++slow;
      slow_s += d;
    }
  }
  const double copy_s = seconds_since(t0);
  stop = true;
  for (std::thread& t : pool) t.join();
  if (backward.joinable()) backward.join();
  std::printf("%s,%.3f,%.3f,%.3f,%.2f,%zu,%.1f,%.3f\n", c.name, copy_s, pin_s, prefault_s,
              static_cast<double>(copies * piece) / copy_s / 1e9, slow, slowest * 1e3, slow_s);
  std::fflush(stdout);
  if (c.second_ctx) check(cuCtxSetCurrent(second), "cuCtxSetCurrent");
  for (gpusort::host_buffer& m : run_memory)
    if (m.data() != nullptr) check(cudaHostUnregister(m.data()), "cudaHostUnregister");
  if (c.second_ctx) check(cudaSetDevice(0), "cudaSetDevice");  // the primary context again
  run_memory.clear();
  if (map != nullptr) ::munmap(map, bytes);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(path);
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check(cudaStreamDestroy(stream_back), "cudaStreamDestroy");
  check(cudaFree(device), "cudaFree");
  check(cudaFreeHost(staging), "cudaFreeHost");
  check(cudaFreeHost(back), "cudaFreeHost");
}

/// Registers `bytes` at `base` in 64 MiB blocks on `threads` threads with `flags`; returns the
/// seconds it took, or a negative number (after printing why) where a registration failed.
double register_blocks(std::byte* base, std::size_t bytes, unsigned threads, unsigned flags,
                       const char* what) {
  const std::size_t block = std::size_t{64} << 20;
  std::atomic<std::size_t> next{0};
  std::atomic<int> failed{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t off = next.fetch_add(block); off < bytes; off = next.fetch_add(block)) {
        const cudaError_t e = cudaHostRegister(base + off, std::min(block, bytes - off), flags);
        if (e != cudaSuccess) {
          if (failed.fetch_add(1) == 0)
            std::printf("%s: cudaHostRegister at %zu: %s\n", what, off, cudaGetErrorString(e));
          return;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  const double s = seconds_since(t0);
  if (failed.load() != 0) {
    // Unregister what did register, so that the next case starts clean.
    for (std::size_t off = 0; off < bytes; off += block)
      static_cast<void>(cudaHostUnregister(base + off));
    static_cast<void>(cudaGetLastError());
    return -1;
  }
  return s;
}

void unregister_blocks(std::byte* base, std::size_t bytes) {
  const std::size_t block = std::size_t{64} << 20;
  for (std::size_t off = 0; off < bytes; off += block)
    check(cudaHostUnregister(base + off), "cudaHostUnregister");
}

/// 32 MiB copies between `host` and a 4 GiB device slot, one stream; seconds.
double copy_pieces(std::byte* host, std::size_t bytes, cudaMemcpyKind kind, void* device,
                   cudaStream_t stream) {
  const std::size_t piece = std::size_t{32} << 20;
  const std::size_t slot = std::size_t{4} << 30;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t off = 0; off < bytes; off += piece) {
    std::byte* dev = static_cast<std::byte*>(device) + off % slot;
    const std::size_t n = std::min(piece, bytes - off);
    check(kind == cudaMemcpyHostToDevice ? cudaMemcpyAsync(dev, host + off, n, kind, stream)
                                         : cudaMemcpyAsync(host + off, dev, n, kind, stream),
          "cudaMemcpyAsync");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return seconds_since(t0);
}

void file_mapping(const char* in_path, const char* out_path) {
  const int in = ::open(in_path, O_RDONLY);
  if (in < 0) {
    std::perror(in_path);
    std::exit(1);
  }
  const auto bytes = static_cast<std::size_t>(::lseek(in, 0, SEEK_END));
  auto* src = static_cast<std::byte*>(::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, in, 0));
  if (src == MAP_FAILED) {
    std::perror("mmap IN");
    std::exit(1);
  }
  void* device = nullptr;
  check(cudaMalloc(&device, std::size_t{4} << 30), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const double gb = static_cast<double>(bytes) / 1e9;
  auto report = [&](const char* what, unsigned threads, double s) {
    std::printf("%s,%u,%.3f,%.3f,%.2f\n", what, threads, gb, s, s > 0 ? gb / s : 0.0);
    std::fflush(stdout);
  };
  std::printf("case,threads,GB,seconds,GB/s\n");
  const unsigned read_only = cudaHostRegisterPortable | cudaHostRegisterReadOnly;
  for (const unsigned threads : {4u, 8u, 16u, 4u}) {
    const double s = register_blocks(src, bytes, threads, read_only, "in, read-only");
    report("register-in-read-only", threads, s);
    if (s < 0) break;
    report("h2d-from-in", 1, copy_pieces(src, bytes, cudaMemcpyHostToDevice, device, stream));
    const auto t0 = std::chrono::steady_clock::now();
    unregister_blocks(src, bytes);
    report("unregister-in", 1, seconds_since(t0));
  }
  // The use gpusort would make of it: a block copied as soon as it is registered (on 8
  // threads, in order), unregistered once copied.
  for (int round = 0; round < 3; ++round) {
    const std::size_t block = std::size_t{64} << 20;
    const std::size_t blocks = (bytes + block - 1) / block;
    std::vector<std::atomic<int>> ready(blocks);
    std::atomic<std::size_t> next{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < 8; ++t)
      pool.emplace_back([&] {
        for (std::size_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1)) {
          check(cudaHostRegister(src + b * block, std::min(block, bytes - b * block), read_only),
                "cudaHostRegister (pipelined)");
          ready[b].store(1, std::memory_order_release);
        }
      });
    std::size_t slow = 0;
    double slowest = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
      while (ready[b].load(std::memory_order_acquire) == 0) std::this_thread::yield();
      const auto c0 = std::chrono::steady_clock::now();
      const std::size_t n = std::min(block, bytes - b * block);
      check(cudaMemcpyAsync(static_cast<std::byte*>(device) + (b * block) % (std::size_t{4} << 30),
                            src + b * block, n, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync (pipelined)");
      const double issue = seconds_since(c0);
      if (issue > 0.004) ++slow;
      slowest = std::max(slowest, issue);
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    report("pipelined-register-h2d", 8, seconds_since(t0));
    std::printf("pipelined: %zu copies took over 4 ms to issue, the slowest %.1f ms\n", slow,
                slowest * 1e3);
    for (std::thread& th : pool) th.join();
    unregister_blocks(src, bytes);
  }
  // A writable shared mapping of a new file: the output's page cache.
  int out = -1;
  std::byte* dst = map_new_file(out_path, bytes, out);
  auto t0 = std::chrono::steady_clock::now();
  if (::madvise(dst, bytes, MADV_POPULATE_WRITE) != 0) std::perror("MADV_POPULATE_WRITE");
  report("prefault-out", 1, seconds_since(t0));
  const double s = register_blocks(dst, bytes, 8, cudaHostRegisterPortable, "out, writable");
  report("register-out-writable", 8, s);
  if (s >= 0) {
    report("d2h-into-out", 1, copy_pieces(dst, bytes, cudaMemcpyDeviceToHost, device, stream));
    unregister_blocks(dst, bytes);
  }
  ::munmap(dst, bytes);
  ::close(out);
  ::unlink(out_path);
  ::munmap(src, bytes);
  ::close(in);
  check(cudaFree(device), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t gib = std::size_t{1} << 30;
  const std::size_t parts = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 16;
  const std::size_t bytes = parts * gib;
  check(cudaFree(nullptr), "cudaFree(0)");
  if (argc > 4 && std::strcmp(argv[2], "--file-mapping") == 0) {
    file_mapping(argv[3], argv[4]);
    return 0;
  }
  if (argc > 3 && std::strcmp(argv[2], "--contention") == 0) {
    // A second context on the same device: if the copies wait on a lock of the context that
    // registers, registering from another one lets them run.
    CUcontext primary = nullptr;
    check(cuCtxGetCurrent(&primary), "cuCtxGetCurrent");
    CUdevice dev = 0;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext second = nullptr;
    check(cuCtxCreate(&second, nullptr, 0, dev), "cuCtxCreate");
    check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
    std::printf("case,seconds,pin_s,prefault_s,h2d_GB/s,copies_over_4ms,slowest_ms,slow_s\n");
    const contention_case cases[] = {
        {"none", false, false, false, false},
        {"pin", true, false, false, false},
        {"prefault", false, false, true, false},
        {"pin+prefault", true, false, true, false},
        {"pin+d2h", true, false, false, true},
        {"pin+prefault+d2h", true, false, true, true},
        {"pin2ctx", true, true, false, false},
        {"pin2ctx+prefault+d2h", true, true, true, true},
        {"prefault+d2h", false, false, true, true},
    };
    for (int round = 0; round < 2; ++round)
      for (const contention_case& c : cases) contention(c, bytes, argv[3], second);
    check(cuCtxDestroy(second), "cuCtxDestroy");
    return 0;
  }
  std::printf("case,threads,GiB,seconds,GB/s\n");
  if (argc > 2 && std::strcmp(argv[2], "--during") == 0) {
    // seconds: the registration's; GB/s: the copies' meanwhile.
    for (const std::size_t block : {std::size_t{0}, gib, std::size_t{64} << 20, gib,
                                    std::size_t{64} << 20, std::size_t{8} << 20})
      copies_during_registration(bytes, block, 4);
    return 0;
  }
  auto report = [&](const char* what, unsigned threads, double s) {
    std::printf("%s,%u,%zu,%.3f,%.2f\n", what, threads, parts, s,
                static_cast<double>(bytes) / s / 1e9);
    std::fflush(stdout);
  };
  for (const unsigned threads : {1u, 4u, 8u, 16u}) {
    auto t0 = std::chrono::steady_clock::now();
    gpusort::host_buffer memory(bytes, /*prefault=*/true);
    report("touch", std::thread::hardware_concurrency(), seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t p = t; p < parts; p += threads)
          check(cudaHostRegister(memory.data() + p * gib, gib, cudaHostRegisterPortable),
                "cudaHostRegister");
      });
    for (std::thread& th : pool) th.join();
    report("register-1GiB-parts", threads, seconds_since(t0));
    if (threads == 16) {
      cudaStream_t stream;
      check(cudaStreamCreate(&stream), "cudaStreamCreate");
      void* device = nullptr;
      check(cudaMalloc(&device, 4 * gib), "cudaMalloc");
      for (const cudaMemcpyKind kind : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost})
        report(kind == cudaMemcpyHostToDevice ? "h2d-32MiB" : "d2h-32MiB", 1,
               copy_pieces(memory.data(), bytes, kind, device, stream));
      check(cudaFree(device), "cudaFree");
      check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    }
    t0 = std::chrono::steady_clock::now();
    for (std::size_t p = 0; p < parts; ++p)
      check(cudaHostUnregister(memory.data() + p * gib), "cudaHostUnregister");
    report("unregister", 1, seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    memory = gpusort::host_buffer{};
    report("unmap", 1, seconds_since(t0));
  }
  // Registering untouched memory: the driver faults every page itself.
  auto t0 = std::chrono::steady_clock::now();
  {
    gpusort::host_buffer memory(bytes / 4, false);
    check(cudaHostRegister(memory.data(), bytes / 4, cudaHostRegisterPortable), "register");
    std::printf("register-untouched,1,%zu,%.3f,%.2f\n", parts / 4, seconds_since(t0),
                static_cast<double>(bytes / 4) / seconds_since(t0) / 1e9);
    check(cudaHostUnregister(memory.data()), "unregister");
  }
  return 0;
}
