// The sd_notify protocol as systemd's Type=notify expects it: datagrams of KEY=VALUE lines on the
// socket named by NOTIFY_SOCKET (a path or @abstract), READY=1 once the host consumes, STOPPING=1
// as soon as a stop is requested, and nothing at all without NOTIFY_SOCKET.
#include "cli/systemd_notify.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "runtime/shutdown.h"
#include "temp_dir.h"

namespace {

using warren::cli::ServiceStatusReporter;
using warren::cli::SystemdNotifier;

// A datagram socket standing in for systemd's notify socket.
class FakeSystemd {
 public:
  // `abstract`: bound in the abstract namespace ("@name"), else to a file in a temp dir.
  explicit FakeSystemd(bool abstract) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
      throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (abstract) {
      name_ = "@warren-notify-test-" + std::to_string(::getpid());
    } else {
      dir_.emplace();
      name_ = (dir_->path() / "notify").string();
    }
    std::memcpy(address.sun_path, name_.data(), name_.size());
    if (abstract)
      address.sun_path[0] = '\0';
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size());
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      throw std::runtime_error("bind " + name_ + ": " + std::strerror(errno));
    }
  }
  ~FakeSystemd() { ::close(fd_); }

  const std::string& name() const { return name_; }

  // The next datagram, or nullopt when none arrives within `timeout`.
  std::optional<std::string> receive(std::chrono::milliseconds timeout) {
    pollfd ready{fd_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(timeout.count())) != 1)
      return std::nullopt;
    char buffer[4096];
    const ssize_t size = ::recv(fd_, buffer, sizeof buffer, 0);
    if (size < 0)
      return std::nullopt;
    return std::string(buffer, static_cast<std::size_t>(size));
  }

 private:
  int fd_ = -1;
  std::optional<warren::test_support::TempDir> dir_;  // for a socket file, not an abstract name
  std::string name_;
};

constexpr std::chrono::seconds kPatience{5};

TEST(SystemdNotifier, PathSocket_ReceivesTheStateVerbatim) {
  FakeSystemd systemd(false);
  const SystemdNotifier notifier(systemd.name());

  EXPECT_EQ(notifier.notify("READY=1\nSTATUS=consuming"), "");

  EXPECT_EQ(systemd.receive(kPatience), "READY=1\nSTATUS=consuming");
}

TEST(SystemdNotifier, AbstractSocket_IsAddressedWithALeadingAt) {
  FakeSystemd systemd(true);
  const SystemdNotifier notifier(systemd.name());

  EXPECT_EQ(notifier.notify("STOPPING=1"), "");

  EXPECT_EQ(systemd.receive(kPatience), "STOPPING=1");
}

TEST(SystemdNotifier, NobodyListening_ReportsWhyNamingTheSocket) {
  const SystemdNotifier notifier("/nonexistent/notify");

  const std::string failure = notifier.notify("READY=1");

  EXPECT_NE(failure.find("/nonexistent/notify"), std::string::npos) << failure;
}

TEST(SystemdNotifier, RelativeSocketPath_IsRefused) {
  EXPECT_NE(SystemdNotifier("notify").notify("READY=1"), "");
}

TEST(SystemdNotifier, FromEnvironment_WithoutNotifySocket_IsDisabled) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(SystemdNotifier::from_environment().has_value());
  ::setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
  const auto notifier = SystemdNotifier::from_environment();
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(notifier.has_value());
  EXPECT_EQ(notifier->socket_path(), "/run/systemd/notify");
}

TEST(ServiceStatusReporter, ReadyOnlyOnceTheHostConsumes_ThenStoppingWhenAStopIsRequested) {
  FakeSystemd systemd(false);
  warren::runtime::ShutdownSignal shutdown;
  std::atomic<bool> consuming{false};
  ServiceStatusReporter reporter(SystemdNotifier(systemd.name()), shutdown,
                                 [&consuming] { return consuming.load(); });

  EXPECT_EQ(systemd.receive(kPatience), "STATUS=starting: connecting to the broker");
  EXPECT_EQ(systemd.receive(std::chrono::milliseconds(300)), std::nullopt)
      << "READY=1 before the host consumes";

  consuming = true;
  EXPECT_EQ(systemd.receive(kPatience), "READY=1\nSTATUS=consuming");

  shutdown.request();
  EXPECT_EQ(systemd.receive(kPatience),
            "STOPPING=1\nSTATUS=stopping: finishing in-flight messages");
}

TEST(ServiceStatusReporter, LostBrokerAfterReady_IsReportedAsStatusAndRecovery) {
  FakeSystemd systemd(false);
  warren::runtime::ShutdownSignal shutdown;
  std::atomic<bool> consuming{true};
  ServiceStatusReporter reporter(SystemdNotifier(systemd.name()), shutdown,
                                 [&consuming] { return consuming.load(); });
  ASSERT_EQ(systemd.receive(kPatience), "STATUS=starting: connecting to the broker");
  ASSERT_EQ(systemd.receive(kPatience), "READY=1\nSTATUS=consuming");

  consuming = false;
  EXPECT_EQ(systemd.receive(kPatience), "STATUS=not consuming: reconnecting to the broker");
  consuming = true;
  EXPECT_EQ(systemd.receive(kPatience), "STATUS=consuming");
}

TEST(ServiceStatusReporter, DestroyedWithoutAStop_JoinsItsThreadQuickly) {
  FakeSystemd systemd(false);
  warren::runtime::ShutdownSignal shutdown;
  const auto started = std::chrono::steady_clock::now();
  {
    ServiceStatusReporter reporter(SystemdNotifier(systemd.name()), shutdown, [] { return false; });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
}

}  // namespace
