// Ownership of a range of address space from mmap: unmapped when its owner goes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <utility>

namespace gpusort {

/// Move-only owner of `length` bytes mapped at `base` (anonymous memory, a file, or address
/// space only reserved); empty when `base` is null.
class unique_mapping {
 public:
  unique_mapping() = default;
  unique_mapping(void* base, std::size_t length) noexcept
      : base_(static_cast<std::byte*>(base)), length_(length) {}
  unique_mapping(unique_mapping&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), length_(std::exchange(other.length_, 0)) {}
  unique_mapping& operator=(unique_mapping&& other) noexcept {
    if (this != &other) {
      reset();
      base_ = std::exchange(other.base_, nullptr);
      length_ = std::exchange(other.length_, 0);
    }
    return *this;
  }
  unique_mapping(const unique_mapping&) = delete;
  unique_mapping& operator=(const unique_mapping&) = delete;
  ~unique_mapping() { reset(); }

  [[nodiscard]] std::byte* data() const noexcept { return base_; }
  [[nodiscard]] std::size_t length() const noexcept { return length_; }
  void reset() noexcept {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = nullptr;
    length_ = 0;
  }

 private:
  std::byte* base_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace gpusort
