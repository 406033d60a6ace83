// warren-worker's command line: what the host writes, the child reads back unchanged; anything
// else is refused (a usage error, exit 64).
#include "isolation/worker_arguments.h"

#include <gtest/gtest.h>

#include <vector>

namespace warren::isolation {
namespace {

std::optional<WorkerArguments> parse(std::vector<std::string> argv, std::string& error) {
  argv.insert(argv.begin(), "warren-worker");
  std::vector<const char*> pointers;
  for (const auto& argument : argv)
    pointers.push_back(argument.c_str());
  return WorkerArguments::parse(static_cast<int>(pointers.size()), pointers.data(), error);
}

TEST(WorkerArguments, WhatTheHostWritesTheChildReads) {
  for (WorkerArguments written :
       {WorkerArguments{1234, 0, false}, WorkerArguments{1234, 64ull << 20, false},
        WorkerArguments{1234, 1ull << 40, true}}) {
    std::string error;
    auto read = parse(written.to_argv(), error);
    ASSERT_TRUE(read) << error;
    EXPECT_EQ(read->host, written.host);
    EXPECT_EQ(read->memory_max, written.memory_max);
    EXPECT_EQ(read->core_dumps, written.core_dumps);
  }
  EXPECT_EQ(WorkerArguments({7, 0, false}).to_argv(), std::vector<std::string>{"7"});
}

TEST(WorkerArguments, AnythingElseIsRefusedWithTheReason) {
  std::string error;
  EXPECT_FALSE(parse({}, error));
  EXPECT_EQ(error, "the first argument must be the host's pid");
  EXPECT_FALSE(parse({"host"}, error));
  EXPECT_FALSE(parse({"0"}, error));
  EXPECT_FALSE(parse({"12", "--memory-max=lots"}, error));
  EXPECT_EQ(error, "unknown argument '--memory-max=lots'");
  EXPECT_FALSE(parse({"12", "--memory-max="}, error));
  EXPECT_FALSE(parse({"12", "--verbose"}, error));
  EXPECT_EQ(error, "unknown argument '--verbose'");
}

}  // namespace
}  // namespace warren::isolation
