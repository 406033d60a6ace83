// See systemd_notify.h.
#include "cli/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

#include "observability/log.h"

namespace warren::cli {
namespace {

// How often readiness is looked at: before READY=1 (start-up latency) and after it (STATUS=
// updates when the broker connection drops and comes back).
constexpr std::chrono::milliseconds kPollUntilReady{100};
constexpr std::chrono::milliseconds kPollWhileRunning{1000};

std::string os_error(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

}  // namespace

std::optional<SystemdNotifier> SystemdNotifier::from_environment() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0') {
    return std::nullopt;
  }
  return SystemdNotifier(path);
}

SystemdNotifier::SystemdNotifier(std::string socket_path) : socket_path_(std::move(socket_path)) {}

std::string SystemdNotifier::notify(std::string_view state) const {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(address.sun_path)) {
    return "NOTIFY_SOCKET is longer than a socket path can be";
  }
  if (socket_path_[0] != '/' && socket_path_[0] != '@') {
    return "NOTIFY_SOCKET=" + socket_path_ + " is neither an absolute path nor @abstract";
  }
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  if (address.sun_path[0] == '@') {
    address.sun_path[0] = '\0';  // abstract namespace
  }
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return "cannot create a socket for NOTIFY_SOCKET: " + os_error(errno);
  }
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&address), length);
  const int send_error = errno;
  ::close(fd);
  if (sent < 0) {
    return "cannot notify systemd at " + socket_path_ + ": " + os_error(send_error);
  }
  return {};
}

ServiceStatusReporter::ServiceStatusReporter(SystemdNotifier notifier,
                                             runtime::ShutdownSignal& shutdown,
                                             std::function<bool()> ready)
    : notifier_(std::move(notifier)), shutdown_(shutdown), ready_(std::move(ready)) {
  send("STATUS=starting: connecting to the broker");
  thread_ = std::thread([this] { run(); });
}

ServiceStatusReporter::~ServiceStatusReporter() {
  stop_ = true;
  thread_.join();
}

void ServiceStatusReporter::run() {
  bool told_ready = false;
  bool consuming = false;
  while (!stop_) {
    const bool now_consuming = ready_();
    if (now_consuming && !told_ready) {
      send("READY=1\nSTATUS=consuming");
      told_ready = true;
    } else if (told_ready && now_consuming != consuming) {
      send(now_consuming ? "STATUS=consuming" : "STATUS=not consuming: reconnecting to the broker");
    }
    consuming = now_consuming;
    if (shutdown_.wait_for(told_ready ? kPollWhileRunning : kPollUntilReady)) {
      send("STOPPING=1\nSTATUS=stopping: finishing in-flight messages");
      return;
    }
  }
}

void ServiceStatusReporter::send(std::string_view state) {
  const std::string failure = notifier_.notify(state);
  if (!failure.empty() && !reported_failure_) {
    reported_failure_ = true;
    observability::log_warn(failure);
  }
}

}  // namespace warren::cli
