// AsioExecutor and AsioContext: asio's post, dispatch, defer and co_spawn
// run on the pool's workers; the properties; outstanding work and join;
// many posts from many threads, none lost; the allocator; an asio timer's
// handler on the pool; and what happens once the pool has shut down.

#include "runtime/asio/asio_executor.h"

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/defer.hpp>
#include <asio/detached.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/thread_pool.h"

namespace haltpool {
namespace {

static_assert(asio::execution::is_executor<AsioExecutor>::value,
              "AsioExecutor must be an asio standard executor");
static_assert(std::is_convertible_v<AsioExecutor, asio::any_io_executor>,
              "I/O objects and awaitables take AsioExecutor");

std::unique_ptr<ThreadPool> MakePool(int workers, PoolOptions o = {}) {
  o.workers = workers;
  absl::StatusOr<std::unique_ptr<ThreadPool>> p = ThreadPool::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

// Where a function ran: the worker index, and whether that thread is one
// of the pool's workers.
struct Where {
  int worker = -2;
  bool on_pool = false;
};

TEST(AsioExecutorTest, PostDispatchDeferRunOnWorkers) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  Where posted, dispatched, deferred;
  auto here = [&pool](Where* w) {
    w->worker = ThreadPool::CurrentWorkerIndex();
    w->on_pool = pool->IsWorkerThread();
  };
  asio::post(context.get_executor(), [&] { here(&posted); });
  asio::dispatch(context.get_executor(), [&] { here(&dispatched); });
  asio::defer(context.get_executor(), [&] { here(&deferred); });
  context.join();
  for (const Where* w : {&posted, &dispatched, &deferred}) {
    EXPECT_GE(w->worker, 0);
    EXPECT_LT(w->worker, pool->size());
    EXPECT_TRUE(w->on_pool);
  }
  EXPECT_EQ(context.handlers_run_by_caller(), 0);
}

TEST(AsioExecutorTest, DispatchOnAWorkerRunsInlinePostDoesNot) {
  // One worker: a function posted from the running handler cannot start
  // before that handler returns.
  auto pool = MakePool(1);
  AsioContext context(*pool);
  std::atomic<bool> dispatch_inline{false}, post_waited{false};
  std::atomic<bool> posted_ran{false};
  asio::post(context.get_executor(), [&] {
    bool ran = false;
    const std::thread::id me = std::this_thread::get_id();
    asio::dispatch(context.get_executor(),
                   [&] { ran = std::this_thread::get_id() == me; });
    dispatch_inline = ran;
    asio::post(context.get_executor(), [&] { posted_ran = true; });
    asio::defer(context.get_executor(), [&] {});
    post_waited = !posted_ran.load();
  });
  context.join();
  EXPECT_TRUE(dispatch_inline);
  EXPECT_TRUE(post_waited);
  EXPECT_TRUE(posted_ran);
}

TEST(AsioExecutorTest, DispatchOnAnotherPoolsWorkerIsQueued) {
  auto pool = MakePool(1);
  auto other = MakePool(1);
  AsioContext context(*pool);
  std::promise<Where> where;
  TaskGroup group;
  ASSERT_TRUE(other
                  ->Submit(group,
                           [&] {
                             asio::dispatch(context.get_executor(), [&] {
                               where.set_value(
                                   {ThreadPool::CurrentWorkerIndex(),
                                    pool->IsWorkerThread()});
                             });
                           })
                  .ok());
  other->Wait(group);
  const Where w = where.get_future().get();
  EXPECT_EQ(w.worker, 0);
  EXPECT_TRUE(w.on_pool);
}

TEST(AsioExecutorTest, PropertiesAreThoseOfAsioThreadPoolExecutor) {
  namespace ex = asio::execution;
  auto pool = MakePool(2);
  AsioContext context(*pool);
  const AsioExecutor e = context.get_executor();
  EXPECT_EQ(&asio::query(e, ex::context), &context);
  EXPECT_EQ(asio::query(e, ex::blocking), ex::blocking.possibly);
  EXPECT_EQ(asio::query(e, ex::relationship), ex::relationship.fork);
  EXPECT_EQ(asio::query(e, ex::outstanding_work),
            ex::outstanding_work.untracked);
  EXPECT_EQ(asio::query(e, ex::mapping), ex::mapping.thread);
  EXPECT_EQ(asio::query(e, ex::occupancy), 2u);

  const auto never = asio::require(e, ex::blocking.never);
  EXPECT_EQ(asio::query(never, ex::blocking), ex::blocking.never);
  EXPECT_EQ(
      asio::query(asio::require(never, ex::blocking.possibly), ex::blocking),
      ex::blocking.possibly);
  const auto cont = asio::prefer(e, ex::relationship.continuation);
  EXPECT_EQ(asio::query(cont, ex::relationship), ex::relationship.continuation);
  EXPECT_EQ(
      asio::query(asio::require(cont, ex::relationship.fork), ex::relationship),
      ex::relationship.fork);
  EXPECT_FALSE(
      (asio::can_require<AsioExecutor, ex::blocking_t::always_t>::value));

  EXPECT_TRUE(e == context.get_executor());
  EXPECT_TRUE(e != never);
  AsioContext other(*pool);
  EXPECT_TRUE(e != other.get_executor());
}

TEST(AsioExecutorTest, TrackedExecutorsCountAsOutstandingWork) {
  namespace ex = asio::execution;
  auto pool = MakePool(2);
  AsioContext context(*pool);
  EXPECT_EQ(context.outstanding_work(), 0);
  {
    auto tracked =
        asio::require(context.get_executor(), ex::outstanding_work.tracked);
    EXPECT_EQ(asio::query(tracked, ex::outstanding_work),
              ex::outstanding_work.tracked);
    EXPECT_EQ(context.outstanding_work(), 1);
    auto copy = tracked;
    EXPECT_EQ(context.outstanding_work(), 2);
    auto moved = std::move(copy);
    EXPECT_EQ(context.outstanding_work(), 2);
    copy = moved;
    EXPECT_EQ(context.outstanding_work(), 3);
    auto untracked = asio::require(moved, ex::outstanding_work.untracked);
    EXPECT_EQ(context.outstanding_work(), 3);
  }
  EXPECT_EQ(context.outstanding_work(), 0);

  // join() waits for a work guard to go, then returns.
  auto guard = asio::make_work_guard(context.get_executor());
  EXPECT_EQ(context.outstanding_work(), 1);
  std::atomic<bool> released{false};
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    released = true;
    guard.reset();
  });
  context.join();
  EXPECT_TRUE(released);
  EXPECT_EQ(context.outstanding_work(), 0);
  releaser.join();
}

TEST(AsioExecutorTest, JoinWaitsForQueuedFunctions) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  context.join();  // No work: returns at once.
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    asio::post(context.get_executor(), [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      // A function queued by a function is work too.
      asio::post(context.get_executor(), [&] { ran++; });
      ran++;
    });
  }
  context.join();
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(context.outstanding_work(), 0);
}

TEST(AsioExecutorTest, ManyPostsFromManyThreadsNoneLost) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  auto pool = MakePool(2);
  AsioContext context(*pool);
  std::vector<std::atomic<uint8_t>> ran(kThreads * kPerThread);
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&, t] {
      auto e = context.get_executor();
      for (int i = 0; i < kPerThread; ++i) {
        std::atomic<uint8_t>* slot = &ran[t * kPerThread + i];
        // Alternate the three ways in; all must arrive once.
        auto f = [slot] { slot->fetch_add(1, std::memory_order_relaxed); };
        switch (i % 3) {
          case 0:
            asio::post(e, f);
            break;
          case 1:
            asio::dispatch(e, f);
            break;
          default:
            asio::defer(e, f);
        }
      }
    });
  }
  for (auto& p : posters) p.join();
  context.join();
  for (size_t i = 0; i < ran.size(); ++i) {
    ASSERT_EQ(ran[i].load(), 1) << "function " << i;
  }
}

asio::awaitable<int> AddOnPool(ThreadPool* pool, int a, int b) {
  // Hop through the pool once, then answer from a worker.
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  if (!pool->IsWorkerThread()) throw std::logic_error("not on the pool");
  co_return a + b;
}

asio::awaitable<int> Fail() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  throw std::runtime_error("the coroutine failed");
}

TEST(AsioExecutorTest, CoSpawnResultReachesTheCompletionHandler) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  std::promise<int> result;
  std::atomic<bool> handler_on_pool{false};
  asio::co_spawn(context.get_executor(), AddOnPool(pool.get(), 40, 2),
                 [&](std::exception_ptr e, int sum) {
                   handler_on_pool = pool->IsWorkerThread();
                   if (e) {
                     result.set_exception(e);
                   } else {
                     result.set_value(sum);
                   }
                 });
  EXPECT_EQ(result.get_future().get(), 42);
  context.join();
  EXPECT_TRUE(handler_on_pool);
}

TEST(AsioExecutorTest, CoSpawnExceptionReachesTheCompletionHandler) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  std::promise<std::string> message;
  asio::co_spawn(context.get_executor(), Fail(),
                 [&](std::exception_ptr e, int) {
                   try {
                     if (e) std::rethrow_exception(e);
                     message.set_value("no exception");
                   } catch (const std::runtime_error& err) {
                     message.set_value(err.what());
                   }
                 });
  EXPECT_EQ(message.get_future().get(), "the coroutine failed");
  context.join();
}

TEST(AsioExecutorTest, TimerHandlerRunsOnThePool) {
  // asio's reactor runs on asio's own thread; the handler comes to the pool.
  auto pool = MakePool(2);
  AsioContext context(*pool);
  Where where;
  {
    asio::steady_timer timer(context.get_executor(),
                             std::chrono::milliseconds(5));
    timer.async_wait([&](const asio::error_code& ec) {
      EXPECT_FALSE(ec) << ec.message();
      where = {ThreadPool::CurrentWorkerIndex(), pool->IsWorkerThread()};
    });
    context.join();  // The pending wait is outstanding work.
  }
  EXPECT_GE(where.worker, 0);
  EXPECT_TRUE(where.on_pool);
}

// std::allocator that counts what goes through it.
template <typename T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(std::atomic<int>* count) : count(count) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) : count(other.count) {}
  T* allocate(size_t n) {
    count->fetch_add(1);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    count->fetch_sub(1);
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const CountingAllocator<U>& o) const {
    return count == o.count;
  }
  template <typename U>
  bool operator!=(const CountingAllocator<U>& o) const {
    return count != o.count;
  }
  std::atomic<int>* count;
};

TEST(AsioExecutorTest, QueuedFunctionsLiveInTheExecutorsAllocator) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  std::atomic<int> live{0};
  auto e =
      asio::require(context.get_executor(),
                    asio::execution::allocator(CountingAllocator<void>(&live)));
  EXPECT_EQ(asio::query(e, asio::execution::allocator).count, &live);
  std::atomic<int> live_while_running{-1};
  asio::execution::execute(asio::require(e, asio::execution::blocking.never),
                           [&] { live_while_running = live.load(); });
  context.join();
  // The node was freed before the function ran, as asio does.
  EXPECT_EQ(live_while_running.load(), 0);
  EXPECT_EQ(live.load(), 0);
  // Back to std::allocator.
  auto plain = asio::require(e, asio::execution::allocator);
  EXPECT_TRUE(plain == context.get_executor());
}

TEST(AsioExecutorTest, HandlerExceptionGoesToThePoolsOnException) {
  std::promise<std::string> caught;
  PoolOptions o;
  o.on_exception = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& err) {
      caught.set_value(err.what());
    }
  };
  auto pool = MakePool(1, o);
  AsioContext context(*pool);
  asio::post(context.get_executor(),
             [] { throw std::runtime_error("handler threw"); });
  EXPECT_EQ(caught.get_future().get(), "handler threw");
  context.join();  // The function counts as finished all the same.
}

TEST(AsioExecutorTest, AfterPoolShutdownFunctionsRunOnTheCaller) {
  auto pool = MakePool(2);
  AsioContext context(*pool);
  pool->Shutdown();
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id posted_on, deferred_on, dispatched_on;
  asio::post(context.get_executor(),
             [&] { posted_on = std::this_thread::get_id(); });
  asio::defer(context.get_executor(),
              [&] { deferred_on = std::this_thread::get_id(); });
  asio::dispatch(context.get_executor(),
                 [&] { dispatched_on = std::this_thread::get_id(); });
  EXPECT_EQ(posted_on, me);
  EXPECT_EQ(deferred_on, me);
  EXPECT_EQ(dispatched_on, me);
  EXPECT_EQ(context.handlers_run_by_caller(), 3);
  EXPECT_EQ(context.outstanding_work(), 0);
  context.join();
}

asio::awaitable<int> SleepAnHour(std::shared_ptr<int> token,
                                 std::atomic<bool>* woke) {
  asio::steady_timer timer(co_await asio::this_coro::executor,
                           std::chrono::hours(1));
  co_await timer.async_wait(asio::use_awaitable);
  *woke = true;
  co_return *token;
}

TEST(AsioExecutorTest, DestroyingTheContextDestroysPendingCoroutines) {
  // As at the end of an io_context: a coroutine still waiting when the
  // context goes is destroyed, not resumed, and its frame released.
  auto pool = MakePool(1);
  auto token = std::make_shared<int>(7);
  std::atomic<bool> woke{false};
  {
    AsioContext context(*pool);
    asio::co_spawn(context.get_executor(), SleepAnHour(token, &woke),
                   asio::detached);
    // The one worker takes the coroutine's start before this function, and
    // the coroutine suspends in that task: once it has run, it waits.
    std::promise<void> after_start;
    asio::post(context.get_executor(), [&] { after_start.set_value(); });
    after_start.get_future().get();
    EXPECT_EQ(token.use_count(), 2);
    EXPECT_GT(context.outstanding_work(), 0);
  }
  EXPECT_FALSE(woke);
  EXPECT_EQ(token.use_count(), 1);
}

}  // namespace
}  // namespace haltpool
