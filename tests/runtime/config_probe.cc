// A program that does what a haltpool program does first: resolve the
// configuration from the process environment, or exit. config_probe_test
// runs it with chosen environments. Prints "OK governor=<name>" on success.

#include <stdio.h>

#include "absl/strings/str_format.h"
#include "runtime/config.h"

int main() {
  const haltpool::Config config = haltpool::ConfigFromEnvironmentOrExit();
  absl::PrintF("OK governor=%s\n", config.pool.idle.governor);
  return 0;
}
