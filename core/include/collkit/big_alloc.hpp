// An allocator for the flat arrays of whole schedules. Arrays of 2 MiB and more are mapped
// directly and marked for transparent huge pages: at 10^6 ranks a schedule is gigabytes, and
// with 4 KiB pages half of the generation time went to page faults in the kernel.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace collkit {

template <typename T>
struct BigAlloc {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  BigAlloc() = default;
  template <typename U>
  BigAlloc(const BigAlloc<U>&) noexcept {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHuge) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, bytes, MADV_HUGEPAGE);  // advice only: fine if THP is off
      return static_cast<T*>(p);
    }
#endif
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= kHuge) {
      munmap(p, n * sizeof(T));
      return;
    }
#endif
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const BigAlloc<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using BigVector = std::vector<T, BigAlloc<T>>;

}  // namespace collkit
