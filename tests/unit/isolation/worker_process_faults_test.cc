// The faults process isolation exists for, each run for real in a warren-worker child through
// WorkerProcess with the scripted plugin (tests/plugins/scripted/faults.h), and each ending as
// a named death the host survives: a handler that allocates without limit ("oom" under
// memory_max), one that loops forever ("timeout"), a plugin that crashes in init (start()
// fails naming the signal) and one that crashes on every Nth message.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "isolation/worker_process.h"
#include "worker_process_fakes.h"

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;
using namespace warren::isolation::test_host;

// PID's soft limit named NAME, as /proc/PID/limits shows it ("0", "unlimited", "1024").
std::string limit_of(pid_t pid, std::string_view name) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(limits, line)) {
    if (line.starts_with(name)) {
      std::istringstream fields(line.substr(name.size()));
      std::string soft;
      fields >> soft;
      return soft;
    }
  }
  return "no '" + std::string(name) + "' line";
}

TEST(WorkerProcessFaults, AHandlerThatHogsMemoryPastMemoryMaxDiesOfOom) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under ASan or TSan a 64 MiB RLIMIT_DATA breaks the sanitizer's own mappings: "
                  "the child dies starting (\"ERROR: Failed to mmap\", exit 1) before the plugin "
                  "loads; the limit and the oom are tested in the default build";
#endif
  FakeWorker worker;
  WorkerProcessOptions limited = options();
  limited.memory_max = 64ull << 20;
  WorkerProcess process(worker_binary(), limited, worker);
  process.start();
  // A hog without its limit would take this machine's memory: make sure first.
  ASSERT_EQ(limit_of(process.pid(), "Max data size"), std::to_string(64ull << 20));
  std::ifstream ignored("/sys/module/kernel/parameters/ignore_rlimit_data");
  if (std::string flag; ignored >> flag && flag == "Y")
    GTEST_SKIP() << "this kernel was booted with ignore_rlimit_data: RLIMIT_DATA is not enforced";
  FakeMessage hog, after;
  auto death = run(process, with_action("hog"), hog);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "oom");
  EXPECT_TRUE(hog.outcomes.empty());
  // The host is untouched and the next message gets a fresh child under the same limit.
  EXPECT_EQ(run(process, with_action("ack"), after), std::nullopt);
  EXPECT_EQ(after.outcomes.size(), 1u);
}

TEST(WorkerProcessFaults, AHandlerThatSpinsIgnoringCancelIsKilledAtTheHardTimeout) {
  FakeWorker worker;
  WorkerProcessOptions timed = options();
  timed.soft_timeout = 100ms;  // the Cancel reaches stop_requested(); spin does not look
  timed.hard_timeout = 400ms;
  WorkerProcess process(worker_binary(), timed, worker);
  process.start();
  FakeMessage spin;
  auto death = run(process, with_action("spin"), spin);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "timeout");
  EXPECT_TRUE(spin.outcomes.empty());
  EXPECT_FALSE(process.running());
}

TEST(WorkerProcessFaults, APluginWhoseInitSegfaultsIsAStartErrorNamingSIGSEGV) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options({{"init_action", "segfault"}}), worker);
  try {
    process.start();
    FAIL() << "started";
  } catch (const WorkerStartError& error) {
    EXPECT_NE(std::string(error.what()).find("SIGSEGV"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(process.running());
}

TEST(WorkerProcessFaults, CrashEveryThirdMessage_TheFirstTwoSucceedTheThirdKillsTheChild) {
  FakeWorker worker;
  WorkerProcess process(worker_binary(), options({{"crash_every", "3"}}), worker);
  process.start();
  const pid_t first_child = process.pid();
  FakeMessage first, second, third, fourth;
  EXPECT_EQ(run(process, with_action("ack"), first), std::nullopt);
  EXPECT_EQ(run(process, with_action("ack"), second), std::nullopt);
  auto death = run(process, with_action("ack"), third);
  EXPECT_EQ(first.outcomes.size(), 1u);
  EXPECT_EQ(second.outcomes.size(), 1u);
  ASSERT_TRUE(death);
  EXPECT_EQ(death->reason, "SIGSEGV");
  EXPECT_TRUE(third.outcomes.empty());
  // A restarted child counts from 0: its first message succeeds.
  EXPECT_EQ(run(process, with_action("ack"), fourth), std::nullopt);
  EXPECT_NE(process.pid(), first_child);
  EXPECT_EQ(fourth.outcomes.size(), 1u);
}

TEST(WorkerProcessFaults, CoreDumpsAreOffInTheChildUnlessAskedFor) {
  // Core dumps allowed in this process for a moment, so a child that keeps them says so; put
  // back before anything else runs (a crashing /bin/sh in WorkerSpawn would leave a core file).
  rlimit original{};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &original), 0);
  if (original.rlim_max == 0)
    GTEST_SKIP() << "this process may not dump core (hard RLIMIT_CORE 0): nothing to switch off";
  rlimit allowed{original.rlim_max, original.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &allowed), 0);
  auto child_core_limit = [](bool core_dumps) {
    FakeWorker worker;
    WorkerProcessOptions chosen = options();
    chosen.core_dumps = core_dumps;
    WorkerProcess process(worker_binary(), chosen, worker);
    process.start();
    return limit_of(process.pid(), "Max core file size");
  };
  const std::string without = child_core_limit(false);
  const std::string with = child_core_limit(true);
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &original), 0);
  EXPECT_EQ(without, "0");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ASan and TSan set RLIMIT_CORE 0 themselves in every process they start "
                  "(disable_coredump=1, their default on 64-bit): core_dumps = true is tested in "
                  "the default build";
#endif
  EXPECT_EQ(with,
            allowed.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(allowed.rlim_cur));
}

}  // namespace
}  // namespace warren::isolation
