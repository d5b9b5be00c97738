#include "arch/zero_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace haltpool::arch {
namespace {

size_t RoundUpToPages(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

ZeroPages::ZeroPages(size_t bytes)
    : bytes_(RoundUpToPages(bytes == 0 ? 1 : bytes)),
      data_(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
  if (data_ == MAP_FAILED) throw std::bad_alloc();
}

ZeroPages::~ZeroPages() { munmap(data_, bytes_); }

}  // namespace haltpool::arch
