// systemd's service notification protocol (sd_notify(3)), for `Type=notify` units: a datagram
// of NEWLINE-separated KEY=VALUE lines sent to the AF_UNIX socket named by $NOTIFY_SOCKET
// ("@name" for an abstract socket). A few lines of our own instead of a libsystemd dependency.
//
// ServiceStatusReporter tells systemd READY=1 once the host consumes (so `systemctl start` and
// units ordered After= it wait for that), STATUS= while it connects or reconnects, and
// STOPPING=1 when a graceful stop begins. Without $NOTIFY_SOCKET (not under systemd) it does
// nothing and starts no thread.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/shutdown.h"

namespace warren::cli {

class SystemdNotifier {
 public:
  // From $NOTIFY_SOCKET; std::nullopt when it is unset or empty.
  static std::optional<SystemdNotifier> from_environment();
  explicit SystemdNotifier(std::string socket_path);

  // Sends one notification, e.g. "READY=1\nSTATUS=consuming". Returns an empty string on
  // success, else why it failed (systemd then goes on without it; callers log it once).
  std::string notify(std::string_view state) const;

  const std::string& socket_path() const noexcept { return socket_path_; }

 private:
  std::string socket_path_;
};

class ServiceStatusReporter {
 public:
  // `ready` is polled (it is cheap: Host::ready()) until `shutdown` is requested, which is
  // reported at once, or the reporter is destroyed.
  ServiceStatusReporter(SystemdNotifier notifier, runtime::ShutdownSignal& shutdown,
                        std::function<bool()> ready);
  ~ServiceStatusReporter();  // stops and joins the thread (within one poll interval)
  ServiceStatusReporter(const ServiceStatusReporter&) = delete;
  ServiceStatusReporter& operator=(const ServiceStatusReporter&) = delete;

 private:
  void run();
  void send(std::string_view state);

  SystemdNotifier notifier_;
  runtime::ShutdownSignal& shutdown_;
  std::function<bool()> ready_;
  std::atomic<bool> stop_{false};
  bool reported_failure_ = false;  // used by the thread only
  std::thread thread_;
};

}  // namespace warren::cli
