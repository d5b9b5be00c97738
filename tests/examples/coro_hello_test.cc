// examples/coro_hello as its users run it: the real binary, whose exit
// status says whether the coroutine's sum came back through the pool's I/O,
// and whose line on stdout says so. The path comes as the first argument
// (BUILD: args = ["$(location //examples:coro_hello)"]).

#include <stdio.h>
#include <sys/wait.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

std::string g_program;  // Set by main().

TEST(CoroHelloTest, PrintsTheSumAndExitsZero) {
  FILE* out = popen(g_program.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[256];
  while (fgets(buf, sizeof buf, out) != nullptr) text += buf;
  const int status = pclose(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_THAT(text, testing::HasSubstr("hello from a coroutine on "));
  EXPECT_THAT(text, testing::HasSubstr(": 1 + 4 + ... + 100 = 385\n"));
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: coro_hello_test PATH_TO_CORO_HELLO\n");
    return 2;
  }
  haltpool::g_program = argv[1];
  return RUN_ALL_TESTS();
}
