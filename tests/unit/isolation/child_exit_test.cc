#include "isolation/child_exit.h"

#include <gtest/gtest.h>

#include "isolation/worker_exit_codes.h"

namespace warren::isolation {
namespace {

siginfo_t info_of(int code, int status) {
  siginfo_t info{};
  info.si_code = code;
  info.si_status = status;
  return info;
}

TEST(ChildExit, SignalsAreNamedAsInTheDeadLetterHeaders) {
  EXPECT_EQ(child_exit_from(info_of(CLD_DUMPED, SIGSEGV)).reason(), "SIGSEGV");
  EXPECT_TRUE(child_exit_from(info_of(CLD_DUMPED, SIGSEGV)).core_dumped);
  EXPECT_EQ(child_exit_from(info_of(CLD_KILLED, SIGABRT)).reason(), "SIGABRT");
  EXPECT_EQ(child_exit_from(info_of(CLD_KILLED, SIGKILL)).reason(), "killed");
  EXPECT_EQ(child_exit_from(info_of(CLD_EXITED, 3)).reason(), "exit 3");
  EXPECT_TRUE(child_exit_from(info_of(CLD_EXITED, 0)).clean());
  EXPECT_FALSE(child_exit_from(info_of(CLD_KILLED, SIGTERM)).clean());
}

TEST(ChildExit, WarrenWorkersOutOfMemoryExitIsOom_ASigkillStaysKilled) {
  EXPECT_EQ(child_exit_from(info_of(CLD_EXITED, kExitOutOfMemory)).reason(), "oom");
  EXPECT_NE(child_exit_from(info_of(CLD_KILLED, kExitOutOfMemory)).reason(), "oom");
  // The kernel's OOM killer without a cgroup is an anonymous SIGKILL: "killed", not "oom".
  EXPECT_EQ(child_exit_from(info_of(CLD_KILLED, SIGKILL)).reason(), "killed");
}

TEST(ChildExit, ASignalWithoutAName_IsItsNumber) {
  EXPECT_EQ(signal_name(SIGBUS), "SIGBUS");
  EXPECT_EQ(signal_name(SIGRTMIN + 2).substr(0, 3), "SIG");
}

}  // namespace
}  // namespace warren::isolation
