# The system libraries haltpool links, as imported targets, into
# HALTPOOL_DEPENDENCIES. Used by the build and by the installed package
# (haltpoolConfig.cmake), so both find them the same way: Abseil through its
# own CMake package, liburing and hwloc through pkg-config.
include(CMakeFindDependencyMacro)
find_dependency(absl CONFIG)
find_dependency(Threads)
find_dependency(PkgConfig)
if(NOT TARGET PkgConfig::liburing)
  pkg_check_modules(liburing REQUIRED IMPORTED_TARGET liburing)
endif()
if(NOT TARGET PkgConfig::hwloc)
  pkg_check_modules(hwloc REQUIRED IMPORTED_TARGET hwloc)
endif()
set(HALTPOOL_DEPENDENCIES
  absl::any_invocable
  absl::status
  absl::statusor
  absl::strings
  absl::str_format
  absl::synchronization
  absl::time
  PkgConfig::liburing
  PkgConfig::hwloc
  Threads::Threads)
