// Measures, for a buffer the size of the sorted runs of an out-of-core sort: first-touching it
// on every thread, registering it with cudaHostRegister (whole, and in 1 GiB parts from 1 to
// 16 threads), copying it to the device and back in 32 MiB pieces, unregistering and unmapping.
// Then, with --during: H2D copies from page-locked staging while 4 threads prefault and register
// such a buffer in blocks of 1 GiB and of 64 MiB (gpusort pins its runs while it copies
// chunks to the device).
// Usage: gpusort-bench-pinning [GiB (default 16)] [--during]
#include <cuda_runtime.h>

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

}  // namespace

int main(int argc, char** argv) {
  const std::size_t gib = std::size_t{1} << 30;
  const std::size_t parts = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 16;
  const std::size_t bytes = parts * gib;
  check(cudaFree(nullptr), "cudaFree(0)");
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
      const std::size_t slot = 4 * gib;
      check(cudaMalloc(&device, slot), "cudaMalloc");
      const std::size_t piece = std::size_t{32} << 20;
      for (const cudaMemcpyKind kind : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
        t0 = std::chrono::steady_clock::now();
        for (std::size_t off = 0; off < bytes; off += piece) {
          std::byte* host = memory.data() + off;
          std::byte* dev = static_cast<std::byte*>(device) + off % slot;
          check(kind == cudaMemcpyHostToDevice
                    ? cudaMemcpyAsync(dev, host, piece, kind, stream)
                    : cudaMemcpyAsync(host, dev, piece, kind, stream),
                "cudaMemcpyAsync");
        }
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        report(kind == cudaMemcpyHostToDevice ? "h2d-32MiB" : "d2h-32MiB", 1, seconds_since(t0));
      }
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
