// Prints the Markdown table of the HALTPOOL_* variables that
// docs/CONFIGURATION.md holds between its haltpool-variables markers,
// generated from the tunables table (runtime/tunables.h).
//   ./bazelw run //tools:variables_table

#include <stdio.h>

#include "runtime/tunables.h"

int main() {
  fputs(haltpool::VariablesMarkdownTable().c_str(), stdout);
  return 0;
}
