# haltpool's tests under ctest: each test program of cmake/sources.cmake,
# linked as Bazel links it (gtest_main unless the file has its own main),
# with the arguments its Bazel target passes.
find_package(GTest REQUIRED)

foreach(src IN LISTS HALTPOOL_TEST_SUPPORT)
  if(src MATCHES "\\.cc$")
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE haltpool)
  endif()
endforeach()

# The tests' helper libraries.
add_library(haltpool_test_library STATIC ${HALTPOOL_TEST_LIBRARY})
target_compile_options(haltpool_test_library PRIVATE -Wall -Wextra)
target_link_libraries(haltpool_test_library PUBLIC haltpool)

# The arguments of tests that read a file or run a program.
set(args_variables_table_test ${PROJECT_SOURCE_DIR}/docs/CONFIGURATION.md)
set(args_readme_bad_inputs_test ${PROJECT_SOURCE_DIR}/docs/CONFIGURATION.md)
set(args_readme_profiles_test ${PROJECT_SOURCE_DIR}/docs/CONFIGURATION.md)
set(args_hypervisor_test ${PROJECT_SOURCE_DIR}/tests/arch/testdata)
set(args_guide_variables_test ${PROJECT_SOURCE_DIR}/docs/USING.md)
set(args_config_probe_test $<TARGET_FILE:config_probe>)
set(args_coro_hello_test $<TARGET_FILE:coro_hello>)
set(args_echo_load_test $<TARGET_FILE:echo_server>)
set(args_echo_server_test $<TARGET_FILE:echo_server>)
set(args_sockperf_server_test $<TARGET_FILE:echo_server>)
set(args_metrics_endpoint_test $<TARGET_FILE:echo_server>)
set(args_asio_echo_test $<TARGET_FILE:asio_echo>)

# Tests of examples/ pieces link their library as well.
set(libs_sockperf_protocol_test haltpool_examples)
set(libs_sockperf_server_test haltpool_examples)
set(libs_openmetrics_parser_test haltpool_test_library)
set(libs_pool_metrics_test haltpool_test_library)
set(libs_metrics_endpoint_test haltpool_examples haltpool_test_library)
set(libs_asio_executor_test haltpool_asio_executor)

# The asio tests need asio (CMakeLists.txt found it or left them out).
if(HALTPOOL_ASIO_INCLUDE_DIR)
  list(APPEND HALTPOOL_TESTS ${HALTPOOL_ASIO_TESTS})
endif()

foreach(src IN LISTS HALTPOOL_TESTS)
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  file(STRINGS ${src} own_main REGEX "^int main\\(")
  if(own_main)
    target_link_libraries(${name} PRIVATE haltpool ${libs_${name}}
                          GTest::gmock GTest::gtest)
  else()
    target_link_libraries(${name} PRIVATE haltpool ${libs_${name}}
                          GTest::gmock GTest::gtest_main)
  endif()
  add_test(NAME ${name} COMMAND ${name} ${args_${name}})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600)
endforeach()

# A minute of load on every CPU: alone, as Bazel's "exclusive" tag runs it,
# so that it skews the timing of no other test.
set_tests_properties(echo_load_test PROPERTIES RUN_SERIAL TRUE)
