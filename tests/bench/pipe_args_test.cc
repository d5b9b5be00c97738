#include "bench/pipe_args.h"

#include <vector>

#include "gtest/gtest.h"

namespace haltpool::bench {
namespace {

absl::StatusOr<PipeArgs> Parse(std::vector<const char*> argv) {
  return ParsePipeArgs(static_cast<int>(argv.size()), argv.data());
}

TEST(PipeArgs, DefaultsArePerfs) {
  absl::StatusOr<PipeArgs> a = Parse({});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->loops, 1000000);
  EXPECT_FALSE(a->threaded);
  EXPECT_EQ(a->transport, Transport::kPipe);
  EXPECT_EQ(a->gap_us, 0);
  EXPECT_EQ(a->stats, StatsFormat::kNone);
}

TEST(PipeArgs, ShortLongAndEqualsForms) {
  absl::StatusOr<PipeArgs> a = Parse(
      {"-l", "5", "-T", "--transport=parker", "--gap-us", "7", "--stats=json"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->loops, 5);
  EXPECT_TRUE(a->threaded);
  EXPECT_EQ(a->transport, Transport::kParker);
  EXPECT_EQ(a->gap_us, 7);
  EXPECT_EQ(a->stats, StatsFormat::kJson);
  a = Parse({"--loop=9", "--threaded", "--stats"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->loops, 9);
  EXPECT_EQ(a->stats, StatsFormat::kText);
}

TEST(PipeArgs, BadOptionsNameTheProblem) {
  struct Case {
    std::vector<const char*> argv;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--bogus"}, "unknown option `--bogus'"},
           {{"-l"}, "option `-l' requires a value"},
           {{"-l", "abc"}, "expects a whole number from 1"},
           {{"-l", "0"}, "got '0'"},
           {{"-l", "-5"}, "got '-5'"},
           {{"--loop=99999999999999999999"}, "got '99999999999999999999'"},
           {{"--transport=tcp"}, "expects pipe or parker, got 'tcp'"},
           {{"--gap-us=-1"}, "option `--gap-us' expects"},
           {{"--stats=xml"}, "expects text or json"},
       }) {
    absl::StatusOr<PipeArgs> a = Parse(c.argv);
    ASSERT_FALSE(a.ok()) << c.argv[0];
    EXPECT_NE(a.status().message().find(c.message), absl::string_view::npos)
        << a.status().message();
  }
}

}  // namespace
}  // namespace haltpool::bench
