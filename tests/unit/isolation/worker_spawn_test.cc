// Real child processes: spawned through a held descriptor, given their socket as descriptor 3,
// reaped through their pidfd, and named by how they died.
#include "isolation/worker_spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;

// Gone, or a zombie waiting for whoever reaps orphans (not every container's pid 1 does soon).
bool dead(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto state = line.rfind(") ");
  return state != std::string::npos && line.compare(state + 2, 1, "Z") == 0;
}

SpawnedWorker shell(const std::string& script, int plugin_fd = -1) {
  static HeldExecutable sh("/bin/sh");
  // argv[0] is warren-worker; sh -c SCRIPT NAME takes NAME as $0.
  return spawn_worker(sh, {"-c", script, "warren-worker"}, plugin_fd);
}

TEST(WorkerSpawn, HowAChildEnds_IsNamed) {
  EXPECT_EQ(shell("exit 0").reap_within(10s)->reason(), "exit 0");
  EXPECT_EQ(shell("exit 7").reap_within(10s)->reason(), "exit 7");
  EXPECT_EQ(shell("kill -SEGV $$").reap_within(10s)->reason(), "SIGSEGV");
  EXPECT_EQ(shell("kill -ABRT $$").reap_within(10s)->reason(), "SIGABRT");
  EXPECT_EQ(shell("kill -KILL $$").reap_within(10s)->reason(), "killed");
}

TEST(WorkerSpawn, TheChildFindsItsSocketAtDescriptor3) {
  // printf writes one packet: the marker byte (0, last packet) and a Ping frame's bytes.
  SpawnedWorker child = shell(R"(printf '\000\015\001\000\000\000\000\000\000\000' >&3)");
  auto frame = child.socket().receive_within(10s);
  ASSERT_TRUE(frame) << child.socket().closed_reason();
  EXPECT_EQ(*frame, Frame(Ping{1}));
  EXPECT_EQ(child.reap_within(10s)->reason(), "exit 0");
}

// A file holding TEXT, open for reading at the lowest free descriptor from LOWEST on.
int file_holding(const std::string& text, int lowest) {
  char path[] = "/tmp/warren-spawn-XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::unlink(path);
  ::lseek(fd, 0, SEEK_SET);
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, lowest);
  ::close(fd);
  return moved;
}

TEST(WorkerSpawn, ThePluginDescriptor_IsTheChildsDescriptor4AndStaysTheHosts) {
  const int plugin = file_holding("plugin\n", 10);
  EXPECT_EQ(shell(R"(read line <&4; test "$line" = plugin)", plugin).reap_within(10s)->reason(),
            "exit 0");
  EXPECT_EQ(::fcntl(plugin, F_GETFD), FD_CLOEXEC);  // the host's own, untouched
  ::close(plugin);
}

// Moves whatever this process has open at descriptors 3 and 4 (ctest leaves some there) out of
// the way for the test's time, and puts it back after.
class LowDescriptorsFreed {
 public:
  LowDescriptorsFreed() {
    for (int fd : {3, 4}) {
      saved_[fd - 3] = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);  // -1: it was not open
      if (saved_[fd - 3] >= 0)
        ::close(fd);
    }
  }
  ~LowDescriptorsFreed() {
    for (int fd : {3, 4}) {
      if (saved_[fd - 3] >= 0) {
        ::dup2(saved_[fd - 3], fd);
        ::close(saved_[fd - 3]);
      }
    }
  }
  LowDescriptorsFreed(const LowDescriptorsFreed&) = delete;
  LowDescriptorsFreed& operator=(const LowDescriptorsFreed&) = delete;

 private:
  int saved_[2] = {-1, -1};
};

TEST(WorkerSpawn, APluginDescriptorAt4OrBelow_StillReachesTheChildAsDescriptor4) {
  LowDescriptorsFreed freed;
  const int plugin = file_holding("low\n", 3);
  ASSERT_LE(plugin, kChildPluginFd) << "descriptors 3 and 4 were freed for this test";
  EXPECT_EQ(shell(R"(read line <&4; test "$line" = low)", plugin).reap_within(10s)->reason(),
            "exit 0");
  EXPECT_EQ(::fcntl(plugin, F_GETFD), FD_CLOEXEC);
  ::close(plugin);
}

TEST(WorkerSpawn, AChildThatDies_IsAnEndOfStreamOnItsSocket) {
  SpawnedWorker child = shell("kill -SEGV $$");
  EXPECT_EQ(child.socket().receive_within(10s), std::nullopt);
  EXPECT_TRUE(child.socket().closed());
}

TEST(WorkerSpawn, KillGroup_TakesTheChildrenOfTheChildToo) {
  SpawnedWorker child = shell("sleep 300 & echo $! >&3; wait");
  // The shell writes the grandchild's pid as a raw (malformed) packet: read it raw.
  char pid_text[32] = {};
  pollfd readable{child.socket().fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&readable, 1, 10000), 1);
  ASSERT_GT(::recv(child.socket().fd(), pid_text, sizeof pid_text - 1, 0), 0);
  pid_t grandchild = std::stoi(pid_text);
  child.kill_group();
  EXPECT_EQ(child.reap_within(10s)->reason(), "killed");
  // The grandchild was in the group: it goes too (it is reparented, so poll for it to vanish).
  for (int i = 0; i < 500 && !dead(grandchild); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(dead(grandchild)) << "the grandchild " << grandchild << " survived";
}

TEST(WorkerSpawn, TheHandle_NeverLeavesARunningChildBehind) {
  pid_t pid;
  {
    SpawnedWorker child = shell("sleep 300");
    pid = child.pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST(WorkerSpawn, AnExecutableThatCannotBeOpened_IsNamed) {
  try {
    HeldExecutable missing("/nonexistent/warren-worker");
    FAIL() << "opened";
  } catch (const std::system_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/warren-worker"), std::string::npos);
  }
}

}  // namespace
}  // namespace warren::isolation
