// gpusort-peer-cubsort: the GPU sort a CUDA programmer would write with CUB — read the file,
// cudaMemcpy it to the device, cub::DeviceRadixSort::SortKeys, copy back, write. Only for
// files that fit on the GPU (two key arrays plus CUB's temporary storage).
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void check_cuda(cudaError_t status, const char* call, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "gpusort-peer-cubsort: %s failed (line %d): %s: %s\n", call, line,
               cudaGetErrorName(status), cudaGetErrorString(status));
  std::exit(2);
}

#define CHECK_CUDA(call) check_cuda((call), #call, __LINE__)

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  std::fprintf(stderr, "gpusort-peer-cubsort: %s %s: %s\n", what.c_str(), path.c_str(),
               errno != 0 ? std::strerror(errno) : "unexpected end of file");
  std::exit(2);
}

/// Device memory released on every path out of main.
struct device_buffer {
  void* ptr = nullptr;
  explicit device_buffer(std::size_t bytes) {
    if (bytes > 0) CHECK_CUDA(cudaMalloc(&ptr, bytes));
  }
  ~device_buffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

}  // namespace

int main(int argc, char** argv) {
  bool timings = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--timings") timings = true;
    else if (arg == "-h" || arg == "--help") {
      std::printf("Usage: gpusort-peer-cubsort [--timings] IN OUT\n"
                  "Sorts a file of little-endian u64 keys on the GPU: fread into pageable host\n"
                  "memory, cudaMemcpy, cub::DeviceRadixSort::SortKeys (DoubleBuffer), cudaMemcpy\n"
                  "back, fwrite. The file must fit on the GPU (about 2x its size).\n"
                  "--timings prints read, H2D, sort, D2H and write times on stderr.\n");
      return 0;
    } else files.push_back(arg);
  }
  if (files.size() != 2) {
    std::fprintf(stderr, "usage: gpusort-peer-cubsort [--timings] IN OUT\n");
    return 2;
  }

  // Start the CUDA context before timing anything, as a long-running program would have.
  CHECK_CUDA(cudaFree(nullptr));

  auto t = clock_type::now();
  errno = 0;
  std::FILE* in = std::fopen(files[0].c_str(), "rb");
  if (in == nullptr) fail("cannot open", files[0]);
  if (std::fseek(in, 0, SEEK_END) != 0) fail("cannot seek", files[0]);
  const long size = std::ftell(in);
  if (size < 0) fail("cannot size", files[0]);
  if (size % 8 != 0) {
    std::fprintf(stderr, "gpusort-peer-cubsort: %s: %ld bytes is not a whole number of u64 keys\n",
                 files[0].c_str(), size);
    return 2;
  }
  std::rewind(in);
  const std::int64_t n = size / 8;
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(n));
  if (std::fread(keys.data(), 8, keys.size(), in) != keys.size()) fail("cannot read", files[0]);
  std::fclose(in);
  const double t_read = seconds_since(t);

  const std::size_t bytes = static_cast<std::size_t>(n) * 8;
  std::size_t temp_bytes = 0;
  cub::DoubleBuffer<std::uint64_t> sizing(nullptr, nullptr);
  CHECK_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, sizing, n));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (2 * bytes + temp_bytes > free_bytes) {
    std::fprintf(stderr,
                 "gpusort-peer-cubsort: %s does not fit on the GPU: needs %zu bytes (2 x %zu + "
                 "%zu temporary), %zu free\n",
                 files[0].c_str(), 2 * bytes + temp_bytes, bytes, temp_bytes, free_bytes);
    return 2;
  }
  const device_buffer d_keys_a(bytes);
  const device_buffer d_keys_b(bytes);
  const device_buffer d_temp(temp_bytes);

  t = clock_type::now();
  CHECK_CUDA(cudaMemcpy(d_keys_a.ptr, keys.data(), bytes, cudaMemcpyHostToDevice));
  const double t_h2d = seconds_since(t);

  t = clock_type::now();
  cub::DoubleBuffer<std::uint64_t> d_keys(static_cast<std::uint64_t*>(d_keys_a.ptr),
                                          static_cast<std::uint64_t*>(d_keys_b.ptr));
  CHECK_CUDA(cub::DeviceRadixSort::SortKeys(d_temp.ptr, temp_bytes, d_keys, n));
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  const double t_sort = seconds_since(t);

  t = clock_type::now();
  CHECK_CUDA(cudaMemcpy(keys.data(), d_keys.Current(), bytes, cudaMemcpyDeviceToHost));
  const double t_d2h = seconds_since(t);

  t = clock_type::now();
  errno = 0;
  std::FILE* out = std::fopen(files[1].c_str(), "wb");
  if (out == nullptr) fail("cannot create", files[1]);
  if (std::fwrite(keys.data(), 8, keys.size(), out) != keys.size()) fail("cannot write", files[1]);
  if (std::fclose(out) != 0) fail("cannot close", files[1]);
  const double t_write = seconds_since(t);
  if (timings)
    std::fprintf(stderr,
                 "gpusort-peer-cubsort: %lld keys: read %.3f s, H2D %.3f s, sort %.3f s, "
                 "D2H %.3f s, write %.3f s\n",
                 static_cast<long long>(n), t_read, t_h2d, t_sort, t_d2h, t_write);
  return 0;
}
