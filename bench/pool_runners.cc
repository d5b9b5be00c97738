#include "bench/pool_runners.h"

#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/condvar_pool.h"
#include "runtime/environment.h"
#include "runtime/thread_pool.h"
#include "tbb/global_control.h"
#include "tbb/task_arena.h"

namespace haltpool::bench {

Config WithCodeOptions(const Config& base, const PoolOptions& code,
                       const char* program) {
  Config config = base;
  if (absl::Status s = ApplyCodeOptions(code, config); !s.ok()) {
    absl::FPrintF(stderr, "%s: %s\n", program, s.message());
    exit(2);
  }
  return config;
}

PoolRunner HaltpoolRunner(Config config, int workers, const char* program) {
  PoolOptions sized;
  sized.workers = workers;
  config = WithCodeOptions(config, sized, program);
  return [config, program](const std::function<void(const SubmitFn&)>& body) {
    auto pool = ThreadPool::Create(config);
    if (!pool.ok()) {
      absl::FPrintF(stderr, "%s: %s\n", program, pool.status().message());
      exit(1);
    }
    ThreadPool* p = pool->get();
    body([p, program](Probe f) {
      if (absl::Status s = p->Submit(f); !s.ok()) {
        absl::FPrintF(stderr, "%s: Submit: %s\n", program, s.message());
        exit(1);
      }
    });
  };
}

PoolRunner CondvarPoolRunner(int workers) {
  return [workers](const std::function<void(const SubmitFn&)>& body) {
    CondvarPool pool(workers);
    body([&pool](Probe f) { pool.Submit(f); });
  };
}

PoolRunner TbbArenaRunner(int workers) {
  return [workers](const std::function<void(const SubmitFn&)>& body) {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                                workers + 1);
    tbb::task_arena arena(workers + 1);
    arena.initialize();
    body([&arena](Probe f) { arena.enqueue(f); });
  };
}

}  // namespace haltpool::bench
