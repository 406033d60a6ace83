// [[workers]] isolation (issue 14): "thread" with concurrency, or "process" with processes and
// the keys only a worker process honours (soft_timeout, hard_timeout, startup_timeout,
// memory_max); each key of the other mode is refused where it is written.
#include "config_test_support.h"

namespace warren::config {
namespace {

using namespace std::chrono_literals;
using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A worker whose extra keys start at line 6.
std::string worker_with(std::string_view keys) {
  return "\n[[workers]]\nname = \"w\"\nplugin = \"p\"\nqueue = \"q\"\n" + std::string(keys) + "\n";
}

// The same with isolation = "process" at line 6: its extra keys start at line 7.
std::string process_worker_with(std::string_view keys) {
  return worker_with("isolation = \"process\"\n" + std::string(keys));
}

const WorkerConfig& only_worker(const Config& config) {
  return config.workers.at(0);
}

TEST(WorkerIsolation, Unset_IsThreadWithTheProcessDefaults) {
  const Config config = test::parse(worker_with(""));
  const WorkerConfig& worker = only_worker(config);
  EXPECT_EQ(worker.isolation, WorkerConfig::Isolation::thread);
  EXPECT_EQ(worker.concurrency, 1);
  EXPECT_EQ(worker.processes, 1);
  EXPECT_EQ(worker.soft_timeout, Duration::zero());
  EXPECT_EQ(worker.hard_timeout, Duration::zero());
  EXPECT_EQ(worker.startup_timeout, Duration(10s));
  EXPECT_EQ(worker.memory_max, 0U);
}

TEST(WorkerIsolation, ThreadWithConcurrency_IsRead) {
  const Config config = test::parse(worker_with("isolation = \"thread\"\nconcurrency = 4"));
  EXPECT_EQ(only_worker(config).isolation, WorkerConfig::Isolation::thread);
  EXPECT_EQ(only_worker(config).concurrency, 4);
}

TEST(WorkerIsolation, ProcessWithEveryKey_IsRead) {
  const Config config = test::parse(worker_with(R"(isolation = "process"
processes = 4
soft_timeout = "30s"
hard_timeout = "1m"
startup_timeout = "5s"
memory_max = "512MiB")"));
  const WorkerConfig& worker = only_worker(config);
  EXPECT_EQ(worker.isolation, WorkerConfig::Isolation::process);
  EXPECT_EQ(worker.processes, 4);
  EXPECT_EQ(worker.concurrency, 1);
  EXPECT_EQ(worker.soft_timeout, Duration(30s));
  EXPECT_EQ(worker.hard_timeout, Duration(1min));
  EXPECT_EQ(worker.startup_timeout, Duration(5s));
  EXPECT_EQ(worker.memory_max, 512ULL * 1024 * 1024);
}

TEST(WorkerIsolation, ProcessAlone_KeepsTheDefaults) {
  const Config config = test::parse(worker_with("isolation = \"process\""));
  const WorkerConfig& worker = only_worker(config);
  EXPECT_EQ(worker.isolation, WorkerConfig::Isolation::process);
  EXPECT_EQ(worker.processes, 1);
  EXPECT_EQ(worker.startup_timeout, Duration(10s));
  EXPECT_EQ(worker.memory_max, 0U);
}

TEST(WorkerIsolation, MemoryMaxAsAnIntegerOrDecimalUnit_IsBytes) {
  EXPECT_EQ(only_worker(test::parse(process_worker_with("memory_max = 2097152"))).memory_max,
            2097152U);
  EXPECT_EQ(only_worker(test::parse(process_worker_with("memory_max = \"2GB\""))).memory_max,
            2'000'000'000U);
}

TEST(WorkerIsolation, UnknownIsolation_IsRefusedListingBoth) {
  EXPECT_THAT(problems_of(worker_with("isolation = \"fork\"")),
              ElementsAre(Problem(6, 13, "workers[0].isolation",
                                  "must be one of thread, process; got \"fork\"")));
}

TEST(WorkerIsolation, ProcessesWithThread_IsRefusedPointingToConcurrency) {
  EXPECT_THAT(problems_of(worker_with("processes = 4")),
              ElementsAre(Problem(6, 13, "workers[0].processes",
                                  "needs isolation = \"process\"; with isolation = \"thread\", "
                                  "set concurrency")));
}

TEST(WorkerIsolation, ProcessOnlyKeysWithThread_AreEachRefused) {
  EXPECT_THAT(
      problems_of(worker_with(R"(isolation = "thread"
soft_timeout = "30s"
hard_timeout = "1m"
memory_max = "512MiB"
startup_timeout = "5s")")),
      ElementsAre(
          Problem(7, 16, "workers[0].soft_timeout", HasSubstr("needs isolation = \"process\"")),
          Problem(8, 16, "workers[0].hard_timeout", HasSubstr("needs isolation = \"process\"")),
          Problem(9, 14, "workers[0].memory_max", HasSubstr("needs isolation = \"process\"")),
          Problem(10, 19, "workers[0].startup_timeout",
                  HasSubstr("needs isolation = \"process\""))));
}

TEST(WorkerIsolation, ConcurrencyWithProcess_IsRefusedPointingToProcesses) {
  EXPECT_THAT(problems_of(process_worker_with("concurrency = 4")),
              ElementsAre(Problem(7, 15, "workers[0].concurrency",
                                  "with isolation = \"process\" a child runs one message at a "
                                  "time: set processes")));
}

TEST(WorkerIsolation, ProcessesOutOfRange_IsRefusedWithTheRange) {
  EXPECT_THAT(problems_of(process_worker_with("processes = 0")),
              ElementsAre(Problem(7, 13, "workers[0].processes",
                                  "must be an integer from 1 to 1024, got 0")));
  EXPECT_THAT(problems_of(process_worker_with("prefetch = 2000\nprocesses = 1025")),
              ElementsAre(Problem(8, 13, "workers[0].processes",
                                  "must be an integer from 1 to 1024, got 1025")));
}

TEST(WorkerIsolation, ProcessesAbovePrefetch_IsRefused) {
  EXPECT_THAT(
      problems_of(process_worker_with("prefetch = 4\nprocesses = 8")),
      ElementsAre(Problem(8, 13, "workers[0].processes",
                          AllOf(HasSubstr("must not exceed prefetch (4)"), HasSubstr("got 8")))));
}

TEST(WorkerIsolation, HardTimeoutNotAboveSoftTimeout_IsRefused) {
  EXPECT_THAT(problems_of(process_worker_with("soft_timeout = \"1m\"\nhard_timeout = \"60s\"")),
              ElementsAre(Problem(8, 16, "workers[0].hard_timeout",
                                  "must be greater than soft_timeout (1m), got \"1m\"")));
}

TEST(WorkerIsolation, HardTimeoutAlone_OrEitherAtZero_IsAccepted) {
  EXPECT_THAT(problems_of(process_worker_with("hard_timeout = \"10s\"")), IsEmpty());
  EXPECT_THAT(problems_of(process_worker_with("soft_timeout = \"10s\"\nhard_timeout = \"0s\"")),
              IsEmpty());
}

TEST(WorkerIsolation, TimeoutThatIsNotADuration_IsRefusedWithTheSyntax) {
  EXPECT_THAT(problems_of(process_worker_with("soft_timeout = \"30\"")),
              ElementsAre(Problem(7, 16, "workers[0].soft_timeout",
                                  AllOf(HasSubstr("must be a duration"), HasSubstr("\"30\"")))));
}

TEST(WorkerIsolation, ZeroStartupTimeout_IsRefused) {
  EXPECT_THAT(problems_of(process_worker_with("startup_timeout = \"0s\"")),
              ElementsAre(Problem(7, 19, "workers[0].startup_timeout",
                                  "must be at least 1ms, got \"0s\"")));
}

TEST(WorkerIsolation, MemoryMaxBelowOneMiB_IsRefusedSayingWhy) {
  EXPECT_THAT(problems_of(process_worker_with("memory_max = \"512KiB\"")),
              ElementsAre(Problem(7, 14, "workers[0].memory_max",
                                  AllOf(HasSubstr("must be at least 1MiB"),
                                        HasSubstr("load a plugin"), HasSubstr("got 512KiB")))));
  EXPECT_THAT(problems_of(process_worker_with("memory_max = 0")),
              ElementsAre(Problem(
                  7, 14, "workers[0].memory_max",
                  AllOf(HasSubstr("leave memory_max out for no limit"), HasSubstr("got 0B")))));
}

TEST(WorkerIsolation, MemoryMaxGarbage_IsRefusedWithTheSyntax) {
  EXPECT_THAT(problems_of(process_worker_with("memory_max = \"512 megabytes\"")),
              ElementsAre(Problem(7, 14, "workers[0].memory_max",
                                  AllOf(HasSubstr("must be a byte size"), HasSubstr("MiB"),
                                        HasSubstr("got \"512 megabytes\"")))));
  EXPECT_THAT(problems_of(process_worker_with("memory_max = -1")),
              ElementsAre(Problem(7, 14, "workers[0].memory_max",
                                  AllOf(HasSubstr("must be a byte size"), HasSubstr("got -1")))));
  EXPECT_THAT(
      problems_of(process_worker_with("memory_max = 1.5")),
      ElementsAre(Problem(7, 14, "workers[0].memory_max",
                          AllOf(HasSubstr("must be a byte size"), HasSubstr("got a float")))));
}

TEST(WorkerIsolation, MemoryMaxPastSixtyFourBits_IsRefusedAsTooLarge) {
  EXPECT_THAT(problems_of(process_worker_with("memory_max = \"16777216TiB\"")),
              ElementsAre(Problem(7, 14, "workers[0].memory_max",
                                  AllOf(HasSubstr("is too large"), HasSubstr("64 bits"),
                                        HasSubstr("got \"16777216TiB\"")))));
}

}  // namespace
}  // namespace warren::config
