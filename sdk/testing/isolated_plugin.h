// The harness's worker process (Harness::load_isolated): the plugin run in a `warren-worker`
// child through the host's own isolation::WorkerProcess, served by the harness's fake services,
// one message at a time. A child that dies running a message is gone; the next message starts a
// fresh one at once (the host waits a restart delay; a test has no reason to). Internal to the
// harness.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "isolation/worker_process.h"
#include "isolation/worker_spawn.h"
#include "plugin/held_plugin_file.h"
#include "warren/testing/harness.h"

namespace warren::testing {

// warren-worker: $WARREN_WORKER_BINARY when set, else the installed one. Throws
// std::runtime_error naming where it looked.
std::string find_worker_binary();

class IsolatedPlugin {
 public:
  // Starts the first child and waits for its plugin's init. Throws std::runtime_error with the
  // reason it did not start (isolation::WorkerStartError: "init: ...", "... died starting:
  // SIGSEGV"). `services` (the harness's State) outlives this.
  IsolatedPlugin(const std::string& plugin_file, const std::string& worker_name,
                 const Settings& settings, const IsolationOptions& options,
                 host_abi::WorkerServices& services);
  // Asks the child to finish (its plugin's destructor runs), then kills it if it lingers.
  ~IsolatedPlugin();
  IsolatedPlugin(const IsolatedPlugin&) = delete;
  IsolatedPlugin& operator=(const IsolatedPlugin&) = delete;

  // Runs `message` in the child (starting a fresh one first if the last one died); the outcome
  // reaches services.report(). Returns how the child died running it, or std::nullopt.
  // Throws std::runtime_error when a fresh child does not start.
  std::optional<std::string> run(const warren_message& message,
                                 const std::map<std::string, std::string>& headers,
                                 host_abi::MessageServices& services);

  const std::string& plugin_name() const noexcept { return plugin_name_; }
  const std::string& plugin_version() const noexcept { return plugin_version_; }

 private:
  isolation::HeldExecutable executable_;  // before process_, which uses it
  plugin::HeldPluginFile plugin_;         // what every child loads, as the host's do
  std::mutex mutex_;                      // one message at a time, as one worker process
  isolation::WorkerProcess process_;
  std::string plugin_name_;
  std::string plugin_version_;
};

}  // namespace warren::testing
