# The source lists of the CMake build. Bazel's BUILD files are the truth;
# tools/check-sources (run by .ci/run) fails when these lists and Bazel's differ.

# The library: every source of //:haltpool (the pool) and //:parker.
set(HALTPOOL_SOURCES
  arch/contention_signals.cc
  arch/cpuid_hypervisor.cc
  arch/cpu_features.cc
  arch/cpu_wait.cc
  arch/cycle_clock.cc
  arch/firmware_hypervisor.cc
  arch/futex.cc
  arch/hypervisor.cc
  arch/hypervisor_info.cc
  arch/kernel_cpuidle.cc
  arch/proc_stat.cc
  arch/s390_sysinfo.cc
  arch/system_files.cc
  arch/thread_affinity.cc
  arch/timer_slack.cc
  arch/wait_mechanism.cc
  arch/zero_pages.cc
  idle/calibration.cc
  idle/clock.cc
  idle/fixed_governor.cc
  idle/governor_registry.cc
  idle/haltpoll_governor.cc
  idle/idle_options.cc
  idle/idle_stats.cc
  idle/interval_pattern.cc
  idle/parker.cc
  idle/poll_backoff.cc
  idle/predictive_governor.cc
  idle/profile.cc
  runtime/config.cc
  runtime/tunables.cc
  runtime/contention_monitor.cc
  runtime/coro/async_io.cc
  runtime/coro/pool_awaiters.cc
  runtime/idle_retuner.cc
  runtime/cpu_quota.cc
  runtime/environment.cc
  runtime/idle_workers.cc
  runtime/outside_waiter.cc
  runtime/injection_queue.cc
  runtime/io/epoll_reactor.cc
  runtime/io/event_waker.cc
  runtime/io/io_backend.cc
  runtime/io/uring_reactor.cc
  runtime/pool_metrics.cc
  runtime/pool_stats.cc
  runtime/task_group.cc
  runtime/task_queue.cc
  runtime/thread_pool.cc
  runtime/timer_queue.cc
  runtime/topology.cc
  runtime/value_parse.cc
  runtime/worker_io.cc
  runtime/worker_queue.cc
)

# Its headers, installed under include/haltpool/ with their directories.
set(HALTPOOL_HEADERS
  arch/aarch64/cpu_wait.h
  arch/contention_signals.h
  arch/cpuid_hypervisor.h
  arch/cpu_features.h
  arch/cpu_wait.h
  arch/cycle_clock.h
  arch/firmware_hypervisor.h
  arch/futex.h
  arch/generic/cpu_wait.h
  arch/generic/cpuid.h
  arch/hypervisor.h
  arch/hypervisor_info.h
  arch/kernel_cpuidle.h
  arch/named_enum.h
  arch/platform.h
  arch/proc_stat.h
  arch/s390_sysinfo.h
  arch/s390x/cpu_wait.h
  arch/spin_loop.h
  arch/system_files.h
  arch/thread_affinity.h
  arch/timer_slack.h
  arch/wait_mechanism.h
  arch/x86_64/cpu_wait.h
  arch/x86_64/cpuid.h
  arch/zero_pages.h
  idle/calibration.h
  idle/clock.h
  idle/external_wait.h
  idle/fixed_governor.h
  idle/governor.h
  idle/governor_registry.h
  idle/haltpoll_governor.h
  idle/idle_loop.h
  idle/idle_options.h
  idle/idle_state.h
  idle/idle_stats.h
  idle/interval_pattern.h
  idle/parker.h
  idle/poll_gate.h
  idle/poll_backoff.h
  idle/predictive_governor.h
  idle/profile.h
  idle/protocol_step.h
  runtime/config.h
  runtime/tunables.h
  runtime/contention_monitor.h
  runtime/coro/async_io.h
  runtime/coro/pool_awaiters.h
  runtime/coro/sync_wait.h
  runtime/coro/task.h
  runtime/beside_waker.h
  runtime/idle_retuner.h
  runtime/cpu_quota.h
  runtime/environment.h
  runtime/idle_workers.h
  runtime/injection_queue.h
  runtime/io/deadline.h
  runtime/io/epoll_reactor.h
  runtime/io/event_waker.h
  runtime/io/io_backend.h
  runtime/io/io_reactor.h
  runtime/io/op_pool.h
  runtime/io/uring_reactor.h
  runtime/job.h
  runtime/outside_waiter.h
  runtime/pool_io.h
  runtime/pool_options.h
  runtime/pool_metrics.h
  runtime/pool_stats.h
  runtime/task_fn.h
  runtime/task_group.h
  runtime/task_queue.h
  runtime/thread_pool.h
  runtime/timer_queue.h
  runtime/topology.h
  runtime/value_parse.h
  runtime/worker_io.h
  runtime/worker_queue.h
)
# asio's executors on the pool, //:asio_executor: a library of its own, on
# top of haltpool, built when asio's headers are found (CMakeLists.txt).
set(HALTPOOL_ASIO_SOURCES
  runtime/asio/asio_executor.cc
)

set(HALTPOOL_ASIO_HEADERS
  runtime/asio/asio_executor.h
)

# The test programs: every cc_test under tests/ except tests/bench/ (the
# benchmarks and their tests are built by Bazel only: they need oneTBB and
# Google Benchmark, which a server linking haltpool does not) and
# tests/torture/ (they need the library built a second time with its
# protocol steps hooked, which only the Bazel build does).
set(HALTPOOL_TESTS
  tests/arch/contention_signals_test.cc
  tests/arch/cpu_wait_test.cc
  tests/arch/cycle_clock_test.cc
  tests/arch/futex_test.cc
  tests/arch/hypervisor_test.cc
  tests/arch/proc_stat_test.cc
  tests/arch/system_files_test.cc
  tests/arch/thread_affinity_test.cc
  tests/arch/timer_slack_test.cc
  tests/arch/wait_mechanism_test.cc
  tests/arch/zero_pages_test.cc
  tests/docs/guide_variables_test.cc
  tests/docs/readme_bad_inputs_test.cc
  tests/docs/readme_profiles_test.cc
  tests/docs/variables_table_test.cc
  tests/examples/coro_hello_test.cc
  tests/examples/echo_load_test.cc
  tests/examples/echo_server_test.cc
  tests/examples/metrics_endpoint_test.cc
  tests/examples/sockperf_protocol_test.cc
  tests/examples/sockperf_server_test.cc
  tests/faults/futex_faults_test.cc
  tests/faults/worker_faults_test.cc
  tests/idle/calibration_test.cc
  tests/idle/fixed_governor_test.cc
  tests/idle/haltpoll_governor_test.cc
  tests/idle/idle_loop_test.cc
  tests/idle/idle_stats_test.cc
  tests/idle/interval_pattern_test.cc
  tests/idle/parker_test.cc
  tests/idle/parker_torture_test.cc
  tests/idle/poll_backoff_test.cc
  tests/idle/predictive_governor_test.cc
  tests/idle/profile_test.cc
  tests/io/epoll_reactor_test.cc
  tests/io/io_backend_test.cc
  tests/io/io_reactor_test.cc
  tests/io/uring_reactor_test.cc
  tests/pool/contention_monitor_test.cc
  tests/pool/coro_stress_test.cc
  tests/pool/coro_test.cc
  tests/pool/beside_waker_test.cc
  tests/pool/idle_workers_test.cc
  tests/pool/injection_queue_test.cc
  tests/pool/openmetrics_parser_test.cc
  tests/pool/outside_wait_test.cc
  tests/pool/pool_io_test.cc
  tests/pool/pool_memory_test.cc
  tests/pool/pool_metrics_test.cc
  tests/pool/pool_placement_test.cc
  tests/pool/set_idle_options_test.cc
  tests/pool/thread_pool_test.cc
  tests/pool/worker_queue_test.cc
  tests/runtime/config_probe_test.cc
  tests/runtime/config_test.cc
  tests/runtime/cpu_quota_test.cc
  tests/runtime/topology_test.cc
  tests/runtime/value_parse_test.cc
)

# The tests of //:asio_executor and examples/asio_echo: built when asio is
# found (CMakeLists.txt).
set(HALTPOOL_ASIO_TESTS
  tests/examples/asio_echo_test.cc
  tests/runtime/asio_executor_test.cc
)

# What the tests share: headers and the helper program config_probe_test runs.
set(HALTPOOL_TEST_SUPPORT
  tests/arch/allocation_counter.h
  tests/idle/child_process.h
  tests/idle/fake_clock.h
  tests/examples/server_process.h
  tests/pool/backend_test.h
  tests/idle/fake_external_wait.h
  tests/pool/openmetrics_parser.h
  tests/runtime/config_probe.cc
)

# The sources of the tests' helper libraries (every cc_library under tests/
# outside tests/torture/ that has sources), built as one static library that
# the tests needing it link.
set(HALTPOOL_TEST_LIBRARY
  tests/pool/openmetrics_parser.cc
)

# The examples: one program each.
set(HALTPOOL_EXAMPLES
  examples/coro_hello.cc
  examples/echo_server.cc
  examples/hello_pool.cc
)

# The examples that use asio: built when asio is found.
set(HALTPOOL_ASIO_EXAMPLES
  examples/asio_echo.cc
)

# The pieces the examples are made of (every cc_library in examples/BUILD),
# built as one static library that every example links.
set(HALTPOOL_EXAMPLE_LIBRARY
  examples/connection_owner.h
  examples/echo_connection.cc
  examples/echo_connection.h
  examples/metrics_endpoint.cc
  examples/metrics_endpoint.h
  examples/sockperf_protocol.cc
  examples/sockperf_protocol.h
  examples/sockperf_tcp_connection.cc
  examples/sockperf_tcp_connection.h
  examples/sockperf_udp_server.cc
  examples/sockperf_udp_server.h
)
