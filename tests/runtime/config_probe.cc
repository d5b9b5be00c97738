// A program that does what a haltpool program does first: resolve the
// configuration from the process environment, or exit. config_probe_test
// runs it with chosen environments. Prints "OK governor=<name>" on success.

#include <stdio.h>

#include "runtime/config.h"

int main() {
  const haltpool::Config config = haltpool::ConfigFromEnvironmentOrExit();
  printf("OK governor=%s\n", config.pool.idle.governor.c_str());
  return 0;
}
