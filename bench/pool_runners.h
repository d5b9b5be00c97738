// The pools bench/tradeoff and bench/pool_latency submit probes to, each
// set up the same way in both: haltpool's ThreadPool, a mutex +
// condition-variable pool, and oneTBB's task_arena, each with `workers`
// worker threads.

#ifndef HALTPOOL_BENCH_POOL_RUNNERS_H_
#define HALTPOOL_BENCH_POOL_RUNNERS_H_

#include <functional>

#include "bench/wake_harness.h"
#include "runtime/config.h"

namespace haltpool::bench {

// Starts a pool, calls its argument with a submit function for it, and
// shuts the pool down when the call returns.
using PoolRunner =
    std::function<void(const std::function<void(const SubmitFn&)>&)>;

// `base` with the fields `code` sets applied as code (ApplyCodeOptions), so
// the display names them; a bad combination ends the process with a message
// naming `program`.
Config WithCodeOptions(const Config& base, const PoolOptions& code,
                       const char* program);

// haltpool's ThreadPool of `workers` under `config` (already resolved
// against the environment and the profile; the benchmark may have changed
// its governor since), used as it is. A pool that cannot start or a Submit
// that fails ends the process with a message naming `program`.
PoolRunner HaltpoolRunner(Config config, int workers, const char* program);

// bench/condvar_pool.h's pool of `workers` threads.
PoolRunner CondvarPoolRunner(int workers);

// A oneTBB task_arena with `workers` worker threads (the arena keeps a
// slot for a master thread, which the submitter never takes, and oneTBB
// allows only as many threads as CPUs unless told otherwise); tasks are
// enqueue()d.
PoolRunner TbbArenaRunner(int workers);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_POOL_RUNNERS_H_
