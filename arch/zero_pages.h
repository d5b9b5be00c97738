// Zero-filled memory that the kernel backs only when a page is first
// touched: an anonymous private mapping. For large rings that must start
// zeroed but are reached one page at a time, so an idle owner stays small.

#ifndef HALTPOOL_ARCH_ZERO_PAGES_H_
#define HALTPOOL_ARCH_ZERO_PAGES_H_

#include <cstddef>

namespace haltpool::arch {

class ZeroPages {
 public:
  // Maps `bytes` (rounded up to whole pages) of zeroed memory; no page is
  // resident until touched. Throws std::bad_alloc if the kernel refuses, as
  // operator new would. Not for hot paths: one mmap system call.
  explicit ZeroPages(size_t bytes);
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;
  // Unmaps. Nothing may use the memory after.
  ~ZeroPages();

  // The first byte, aligned to a page.
  void* data() const noexcept { return data_; }
  size_t size() const noexcept { return bytes_; }

 private:
  size_t bytes_;
  void* data_;
};

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_ZERO_PAGES_H_
