// asio's work on a haltpool ThreadPool: AsioContext, the asio execution
// context that stands for a pool, and AsioExecutor, its executor. The two
// are one piece (as asio's thread_pool and thread_pool::executor_type are):
// the executor answers asio's context query with the context, and the
// context hands out the executor and keeps its count of outstanding work.
//
//   haltpool::AsioContext context(*pool);
//   asio::co_spawn(context.get_executor(), Session(), asio::detached);
//   asio::ip::tcp::acceptor acceptor(context.get_executor(), endpoint);
//
// The contract:
// - AsioExecutor satisfies asio 1.22's standard executor concept
//   (asio::execution::executor), so asio::post, dispatch, defer, co_spawn
//   and any_io_executor take it. Every function it is given runs on a
//   worker of the pool, through ThreadPool::Submit, except in two cases:
//   dispatch (blocking.possibly, the default) called on one of this pool's
//   workers runs the function at once, inside the call; and a function
//   given after the pool has shut down runs on the calling thread, inside
//   the call, whatever the blocking property says (no handler is lost;
//   AsioContext::handlers_run_by_caller() counts them).
// - Properties, as asio's thread_pool::executor_type has them: blocking
//   (possibly by default, never; not always), relationship (fork,
//   continuation: both queue the same way), outstanding_work (untracked by
//   default; a tracked executor counts as outstanding work while it lives),
//   allocator (the executor's allocator allocates each queued function;
//   std::allocator<void> by default), context (the AsioContext), mapping
//   (thread) and occupancy (the pool's worker count).
// - asio's I/O objects built on the executor (sockets, timers, signal sets)
//   keep asio's own reactor, run by asio's internal thread in the context;
//   their completion handlers run on the pool.
// - An exception a handler throws on a worker goes to the pool's
//   PoolOptions::on_exception, not to the code that posted it; one thrown by
//   a function run inside the call (dispatch on a worker, or after the pool
//   has shut down) leaves that call.
// - Lifetimes: the pool outlives the context, the context outlives every
//   executor and I/O object made from it. Shut down in this order: stop
//   starting work and join() the context (or otherwise be sure none of its
//   handlers can still start), destroy the I/O objects and the context, and
//   only then shut the pool down.

#ifndef HALTPOOL_RUNTIME_ASIO_ASIO_EXECUTOR_H_
#define HALTPOOL_RUNTIME_ASIO_ASIO_EXECUTOR_H_

#include <asio/execution.hpp>
#include <asio/execution_context.hpp>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "runtime/task_group.h"
#include "runtime/thread_pool.h"

namespace haltpool {

template <typename Allocator>
class BasicAsioExecutor;

// The executor AsioContext::get_executor() returns: std::allocator, blocking
// possibly, fork, untracked.
using AsioExecutor = BasicAsioExecutor<std::allocator<void>>;

namespace asio_internal {

// A function on its way to the pool, in memory from the executor's
// allocator. run(node) moves the function out, frees the node and calls
// the function; every node is run exactly once.
struct HandlerNode {
  void (*run)(HandlerNode* node);
};

template <typename Function, typename Allocator>
struct HandlerNodeOf final : HandlerNode {
  using NodeAllocator = typename std::allocator_traits<
      Allocator>::template rebind_alloc<HandlerNodeOf>;

  HandlerNodeOf(Function&& f, const Allocator& a)
      : HandlerNode{&Run}, function(std::move(f)), allocator(a) {}

  static HandlerNodeOf* Make(Function&& f, const Allocator& a) {
    NodeAllocator node_allocator(a);
    HandlerNodeOf* node =
        std::allocator_traits<NodeAllocator>::allocate(node_allocator, 1);
    try {
      return ::new (static_cast<void*>(node)) HandlerNodeOf(std::move(f), a);
    } catch (...) {
      std::allocator_traits<NodeAllocator>::deallocate(node_allocator, node, 1);
      throw;
    }
  }

  // As asio does: the node's memory is given back before the call, so the
  // function may queue the next one into it.
  static void Run(HandlerNode* base) {
    HandlerNodeOf* node = static_cast<HandlerNodeOf*>(base);
    Function f(std::move(node->function));
    NodeAllocator node_allocator(node->allocator);
    node->~HandlerNodeOf();
    std::allocator_traits<NodeAllocator>::deallocate(node_allocator, node, 1);
    f();
  }

  Function function;
  Allocator allocator;
};

}  // namespace asio_internal

// The asio execution context of one ThreadPool. asio's services (its
// reactor, the socket and timer services) live in it; the functions of its
// executors run on the pool. Not copyable or movable.
class AsioContext : public asio::execution_context {
 public:
  using executor_type = AsioExecutor;

  // A context whose executors run their functions on `pool`, which must
  // outlive it.
  explicit AsioContext(ThreadPool& pool) noexcept : pool_(pool) {}

  // Shuts asio's services down (their pending operations are destroyed,
  // not run, as at the end of an io_context), waits for this context's
  // functions already queued on the pool to finish (running other tasks
  // meanwhile when on a worker), then destroys the services. Call join()
  // first for an orderly end.
  ~AsioContext();

  AsioContext(const AsioContext&) = delete;
  AsioContext& operator=(const AsioContext&) = delete;

  // An executor on this context: blocking.possibly, relationship.fork,
  // outstanding_work.untracked, std::allocator. Any thread.
  executor_type get_executor() noexcept;

  ThreadPool& pool() const noexcept { return pool_; }

  // Blocks until outstanding_work() is zero, as asio's
  // thread_pool::join() waits for its work to run out: every function
  // given to an executor of this context has finished and no tracked
  // executor is left (co_spawn holds one for each coroutine, each pending
  // asynchronous operation one). Returns at once if there was no work.
  // Not from a handler of this context (it would wait for itself); any
  // other thread.
  void join();

  // Functions given to this context's executors and not finished yet, plus
  // the tracked executors alive. Any thread.
  int64_t outstanding_work() const noexcept {
    return outstanding_.load(std::memory_order_acquire);
  }

  // Functions run on the thread that gave them because the pool had shut
  // down and refused them. Any thread.
  int64_t handlers_run_by_caller() const noexcept {
    return run_by_caller_.load(std::memory_order_relaxed);
  }

 private:
  template <typename Allocator>
  friend class BasicAsioExecutor;

  // One more unit of outstanding work. Any thread; noexcept, no lock.
  void WorkStarted() noexcept {
    outstanding_.fetch_add(1, std::memory_order_relaxed);
  }
  // One less; the last one wakes join() under its lock, so a joiner never
  // returns (and destroys the context) before this call is done with it.
  void WorkFinished() noexcept;
  // Ends one unit of outstanding work at the end of its scope.
  class WorkDone;
  // Queues `node` on the pool, counted as outstanding work until it has
  // run; runs it here if the pool refuses it (shut down).
  void Post(asio_internal::HandlerNode* node);

  ThreadPool& pool_;
  TaskGroup handlers_;  // The functions queued on the pool.
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int64_t> run_by_caller_{0};
  std::mutex mu_;                    // Orders the last WorkFinished and join.
  std::condition_variable no_work_;  // Signalled when outstanding_ hits 0.
};

// An executor whose functions run on an AsioContext's pool (see the file
// comment for the contract). Cheap to copy: a pointer, the allocator and a
// few bits; copying a tracked one counts one more unit of work. Equal when
// context, allocator and properties are equal.
template <typename Allocator>
class BasicAsioExecutor {
 public:
  BasicAsioExecutor(const BasicAsioExecutor& other) noexcept
      : context_(other.context_),
        allocator_(other.allocator_),
        bits_(other.bits_) {
    if (tracked()) context_->WorkStarted();
  }

  BasicAsioExecutor(BasicAsioExecutor&& other) noexcept
      : context_(other.context_),
        allocator_(std::move(other.allocator_)),
        bits_(other.bits_) {
    if (tracked()) other.context_ = nullptr;
  }

  ~BasicAsioExecutor() {
    if (tracked() && context_ != nullptr) context_->WorkFinished();
  }

  BasicAsioExecutor& operator=(const BasicAsioExecutor& other) noexcept {
    if (this != &other) {
      BasicAsioExecutor copy(other);
      *this = std::move(copy);
    }
    return *this;
  }

  BasicAsioExecutor& operator=(BasicAsioExecutor&& other) noexcept {
    if (this != &other) {
      if (tracked() && context_ != nullptr) context_->WorkFinished();
      context_ = other.context_;
      allocator_ = std::move(other.allocator_);
      bits_ = other.bits_;
      if (tracked()) other.context_ = nullptr;
    }
    return *this;
  }

  // require/prefer: a copy with the property changed (asio::require,
  // asio::prefer call these).
  BasicAsioExecutor require(asio::execution::blocking_t::possibly_t) const {
    return With(bits_ & ~kBlockingNever);
  }
  BasicAsioExecutor require(asio::execution::blocking_t::never_t) const {
    return With(bits_ | kBlockingNever);
  }
  BasicAsioExecutor require(asio::execution::relationship_t::fork_t) const {
    return With(bits_ & ~kContinuation);
  }
  BasicAsioExecutor require(
      asio::execution::relationship_t::continuation_t) const {
    return With(bits_ | kContinuation);
  }
  BasicAsioExecutor require(
      asio::execution::outstanding_work_t::tracked_t) const {
    return With(bits_ | kTracked);
  }
  BasicAsioExecutor require(
      asio::execution::outstanding_work_t::untracked_t) const {
    return With(bits_ & ~kTracked);
  }
  template <typename OtherAllocator>
  BasicAsioExecutor<OtherAllocator> require(
      asio::execution::allocator_t<OtherAllocator> a) const {
    return BasicAsioExecutor<OtherAllocator>(context_, a.value(), bits_);
  }
  BasicAsioExecutor<std::allocator<void>> require(
      asio::execution::allocator_t<void>) const {
    return BasicAsioExecutor<std::allocator<void>>(
        context_, std::allocator<void>(), bits_);
  }

  // query: the properties' values (asio::query calls these).
  static constexpr asio::execution::mapping_t query(
      asio::execution::mapping_t) noexcept {
    return asio::execution::mapping.thread;
  }
  AsioContext& query(asio::execution::context_t) const noexcept {
    return *context_;
  }
  asio::execution::blocking_t query(
      asio::execution::blocking_t) const noexcept {
    return (bits_ & kBlockingNever)
               ? asio::execution::blocking_t(asio::execution::blocking.never)
               : asio::execution::blocking_t(
                     asio::execution::blocking.possibly);
  }
  asio::execution::relationship_t query(
      asio::execution::relationship_t) const noexcept {
    return (bits_ & kContinuation)
               ? asio::execution::relationship_t(
                     asio::execution::relationship.continuation)
               : asio::execution::relationship_t(
                     asio::execution::relationship.fork);
  }
  asio::execution::outstanding_work_t query(
      asio::execution::outstanding_work_t) const noexcept {
    return tracked() ? asio::execution::outstanding_work_t(
                           asio::execution::outstanding_work.tracked)
                     : asio::execution::outstanding_work_t(
                           asio::execution::outstanding_work.untracked);
  }
  template <typename OtherAllocator>
  Allocator query(asio::execution::allocator_t<OtherAllocator>) const noexcept {
    return allocator_;
  }
  Allocator query(asio::execution::allocator_t<void>) const noexcept {
    return allocator_;
  }
  std::size_t query(asio::execution::occupancy_t) const noexcept {
    return static_cast<std::size_t>(context_->pool().size());
  }

  // True on one of the pool's workers, where dispatch runs inline.
  bool running_in_this_thread() const noexcept {
    return context_->pool().IsWorkerThread();
  }

  // Runs `f` (an invocable taking nothing) on the pool: at once, inside
  // this call, if the executor is blocking.possibly and the caller is one
  // of the pool's workers; otherwise queued with ThreadPool::Submit in
  // memory from the allocator, counted as outstanding work until it has
  // run. If the pool has shut down, runs `f` here. Any thread.
  template <typename Function>
  void execute(Function&& f) const {
    using F = std::decay_t<Function>;
    if ((bits_ & kBlockingNever) == 0 && running_in_this_thread()) {
      F local(std::forward<Function>(f));
      local();
      return;
    }
    F moved(std::forward<Function>(f));
    context_->Post(asio_internal::HandlerNodeOf<F, Allocator>::Make(
        std::move(moved), allocator_));
  }

  friend bool operator==(const BasicAsioExecutor& a,
                         const BasicAsioExecutor& b) noexcept {
    return a.context_ == b.context_ && a.allocator_ == b.allocator_ &&
           a.bits_ == b.bits_;
  }
  friend bool operator!=(const BasicAsioExecutor& a,
                         const BasicAsioExecutor& b) noexcept {
    return !(a == b);
  }

 private:
  friend class AsioContext;
  template <typename OtherAllocator>
  friend class BasicAsioExecutor;

  static constexpr unsigned kBlockingNever = 1;
  static constexpr unsigned kContinuation = 2;
  static constexpr unsigned kTracked = 4;

  BasicAsioExecutor(AsioContext* context, const Allocator& allocator,
                    unsigned bits) noexcept
      : context_(context), allocator_(allocator), bits_(bits) {
    if (tracked()) context_->WorkStarted();
  }

  bool tracked() const noexcept { return (bits_ & kTracked) != 0; }

  BasicAsioExecutor With(unsigned bits) const noexcept {
    return BasicAsioExecutor(context_, allocator_, bits);
  }

  AsioContext* context_;  // Null only in a moved-from tracked executor.
  Allocator allocator_;
  unsigned bits_;
};

inline AsioContext::executor_type AsioContext::get_executor() noexcept {
  return executor_type(this, std::allocator<void>(), 0);
}

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_ASIO_ASIO_EXECUTOR_H_
