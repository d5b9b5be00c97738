// Counts the heap allocations a test makes while it asks: replaces the
// global operator new and delete of the one test binary whose test file
// includes this header (include it from exactly one file per binary).
//
//   g_allocations.store(0);
//   g_counting.store(true);
//   ...the code that must not allocate...
//   g_counting.store(false);
//   EXPECT_EQ(g_allocations.load(), 0u);

#ifndef HALTPOOL_TESTS_ARCH_ALLOCATION_COUNTER_H_
#define HALTPOOL_TESTS_ARCH_ALLOCATION_COUNTER_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

inline std::atomic<bool> g_counting{false};
inline std::atomic<uint64_t> g_allocations{0};

// Every allocation in the process passes through here.
void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

#endif  // HALTPOOL_TESTS_ARCH_ALLOCATION_COUNTER_H_
