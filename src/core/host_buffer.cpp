// Anonymous mappings for chunk, scratch and run memory.
#include "core/host_buffer.hpp"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>

#include "gpusort/error.hpp"

namespace gpusort {

namespace {

/// Asks for the pages of [p, p + bytes) on `node` while it has them (best effort: an unknown
/// node or a kernel without NUMA leaves the default policy).
void prefer_node(void* p, std::size_t bytes, int node) noexcept {
  constexpr int mask_bits = 64;
  if (node < 0 || node >= mask_bits) return;
  const unsigned long mask = 1UL << node;
  ::syscall(SYS_mbind, p, bytes, MPOL_PREFERRED, &mask, mask_bits + 1, 0U);
}

}  // namespace

host_buffer::host_buffer(std::size_t bytes, bool prefault, int numa_node) : size_(bytes) {
  if (bytes == 0) return;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (bytes + page - 1) / page * page;
  // Buffers of a huge page or more start on a huge-page boundary, so that every page of them
  // can be a huge page: map one huge page more than needed and give back the ends.
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t slack = mapped >= huge ? huge : 0;
  void* p = ::mmap(nullptr, mapped + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED) throw out_of_memory("cannot allocate " + std::to_string(bytes) +
                                               " bytes of host memory", bytes);
  if (slack != 0) {
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (start + huge - 1) & ~std::uintptr_t{huge - 1};
    const std::size_t head = aligned - start;
    if (head != 0) ::munmap(p, head);
    if (slack - head != 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), slack - head);
    p = reinterpret_cast<void*>(aligned);
  }
  // Huge pages cut the page-fault and TLB cost of streaming over gigabytes; advisory only.
  ::madvise(p, mapped, MADV_HUGEPAGE);
  prefer_node(p, mapped, numa_node);  // before any page is touched
  mapping_ = unique_mapping(p, mapped);
  std::byte* data = mapping_.data();
  if (prefault) {
    constexpr std::size_t grain = std::size_t{2} << 20;
    tbb::parallel_for(std::size_t{0}, (mapped + grain - 1) / grain, [&](std::size_t b) {
      const std::size_t end = std::min(mapped, (b + 1) * grain);
      for (std::size_t i = b * grain; i < end; i += page) data[i] = std::byte{0};
    });
  }
}

void host_buffer::discard(std::size_t offset, std::size_t bytes) noexcept {
  // Buffers of a huge page or more start on one.
  constexpr std::size_t huge = discard_grain;
  const std::size_t end = std::min(offset + bytes, size_) / huge * huge;
  const std::size_t begin = (offset + huge - 1) / huge * huge;
  if (begin < end && ::madvise(data() + begin, end - begin, MADV_DONTNEED) == 0)
    discarded_ += end - begin;
}

}  // namespace gpusort
