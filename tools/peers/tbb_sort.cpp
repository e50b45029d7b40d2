// gpusort-peer-tbbsort: the sort a C++ programmer would write with TBB — fread the whole file
// into a std::vector, tbb::parallel_sort it, fwrite it out. A baseline for the benchmark.
//
// Plain C stdio (fread/fwrite of the whole array at once) is what such a program typically
// uses for a binary file; it is also faster than std::ifstream::read, which this peer should
// not be handicapped by.
#include <tbb/parallel_sort.h>

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

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  std::fprintf(stderr, "gpusort-peer-tbbsort: %s %s: %s\n", what.c_str(), path.c_str(),
               errno != 0 ? std::strerror(errno) : "unexpected end of file");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  bool timings = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--timings") timings = true;
    else if (arg == "-h" || arg == "--help") {
      std::printf("Usage: gpusort-peer-tbbsort [--timings] IN OUT\n"
                  "Sorts a file of little-endian u64 keys: fread, tbb::parallel_sort, fwrite.\n"
                  "--timings prints the read, sort and write times on stderr.\n");
      return 0;
    } else files.push_back(arg);
  }
  if (files.size() != 2) {
    std::fprintf(stderr, "usage: gpusort-peer-tbbsort [--timings] IN OUT\n");
    return 2;
  }
  const auto start = clock_type::now();
  errno = 0;
  std::FILE* in = std::fopen(files[0].c_str(), "rb");
  if (in == nullptr) fail("cannot open", files[0]);
  if (std::fseek(in, 0, SEEK_END) != 0) fail("cannot seek", files[0]);
  const long size = std::ftell(in);
  if (size < 0) fail("cannot size", files[0]);
  if (size % 8 != 0) {
    std::fprintf(stderr, "gpusort-peer-tbbsort: %s: %ld bytes is not a whole number of u64 keys\n",
                 files[0].c_str(), size);
    return 2;
  }
  std::rewind(in);
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(size) / 8);
  if (std::fread(keys.data(), 8, keys.size(), in) != keys.size()) fail("cannot read", files[0]);
  std::fclose(in);
  const double t_read = seconds_since(start);

  const auto sort_start = clock_type::now();
  tbb::parallel_sort(keys.begin(), keys.end());
  const double t_sort = seconds_since(sort_start);

  const auto write_start = clock_type::now();
  errno = 0;
  std::FILE* out = std::fopen(files[1].c_str(), "wb");
  if (out == nullptr) fail("cannot create", files[1]);
  if (std::fwrite(keys.data(), 8, keys.size(), out) != keys.size()) fail("cannot write", files[1]);
  if (std::fclose(out) != 0) fail("cannot close", files[1]);
  const double t_write = seconds_since(write_start);
  if (timings)
    std::fprintf(stderr, "gpusort-peer-tbbsort: %zu keys: read %.3f s, sort %.3f s, write %.3f s\n",
                 keys.size(), t_read, t_sort, t_write);
  return 0;
}
