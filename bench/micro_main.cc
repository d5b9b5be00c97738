#include "bench/micro_main.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"

namespace haltpool::bench {

int RunMicrobenchmarks(int argc, char** argv, void (*register_all)()) {
  // The default goes first: the flag parser lets a later flag win.
  std::string min_time =
      absl::StrCat("--benchmark_min_time=", kDefaultMinTimeS);
  std::vector<char*> args(argv, argv + argc);
  args.insert(args.begin() + 1, min_time.data());
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace haltpool::bench
