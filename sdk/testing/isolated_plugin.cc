// See isolated_plugin.h.
#include "isolated_plugin.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

namespace warren::testing {
namespace {

// A test has no [log] level: every line the plugin writes reaches the harness.
constexpr LogLevel kEveryLevel = LogLevel::trace;
// How long the child's plugin may take to finish (its destructor) when the harness goes.
constexpr auto kStopTime = std::chrono::seconds(5);

bool is_executable(const std::filesystem::path& file) {
  std::error_code error;
  return std::filesystem::is_regular_file(file, error) && ::access(file.c_str(), X_OK) == 0;
}

// The plugin file checked (its own directory standing for the plugin directory) and read once.
plugin::HeldPluginFile held(const std::string& plugin_file) {
  const std::filesystem::path file = std::filesystem::absolute(plugin_file);
  return plugin::HeldPluginFile(file.parent_path(), file);
}

isolation::WorkerProcessOptions process_options(const plugin::HeldPluginFile& plugin,
                                                const std::string& worker_name,
                                                const Settings& settings,
                                                const IsolationOptions& options) {
  isolation::WorkerProcessOptions process;
  process.worker = worker_name;
  process.plugin_path = plugin.file().string();
  process.plugin_fd = plugin.fd();
  process.settings = settings;
  process.log_level = kEveryLevel;
  process.startup_timeout = options.startup_timeout;
  process.soft_timeout = options.soft_timeout;
  process.hard_timeout = options.hard_timeout;
  process.memory_max = options.memory_max;
  return process;
}

}  // namespace

std::string find_worker_binary() {
  if (const char* named = std::getenv("WARREN_WORKER_BINARY"); named != nullptr && *named) {
    if (!is_executable(named)) {
      throw std::runtime_error(std::string("WARREN_WORKER_BINARY=") + named +
                               " is not an executable file (it names the warren-worker binary "
                               "Harness::load_isolated runs the plugin in)");
    }
    return named;
  }
  // Where `cmake --install` of this build puts it, and where the warren package does.
  std::vector<std::filesystem::path> candidates{WARREN_INSTALLED_WORKER_BINARY};
  if (candidates.front() != WARREN_PACKAGED_WORKER_BINARY)
    candidates.emplace_back(WARREN_PACKAGED_WORKER_BINARY);
  std::string looked;
  for (const std::filesystem::path& candidate : candidates) {
    if (is_executable(candidate))
      return candidate.string();
    looked += (looked.empty() ? "" : ", ") + candidate.string();
  }
  throw std::runtime_error(
      "Harness::load_isolated needs the warren-worker binary (the warren package installs it), "
      "which is not in " +
      looked + ": install it, or set WARREN_WORKER_BINARY to its path");
}

IsolatedPlugin::IsolatedPlugin(const std::string& plugin_file, const std::string& worker_name,
                               const Settings& settings, const IsolationOptions& options,
                               host_abi::WorkerServices& services)
    : executable_(find_worker_binary()),
      plugin_(held(plugin_file)),
      process_(executable_, process_options(plugin_, worker_name, settings, options), services) {
  process_.start();
  plugin_name_ = process_.hello().plugin_name;
  plugin_version_ = process_.hello().plugin_version;
}

IsolatedPlugin::~IsolatedPlugin() {
  process_.stop(std::chrono::steady_clock::now() + kStopTime);
}

std::optional<std::string> IsolatedPlugin::run(const warren_message& message,
                                               const std::map<std::string, std::string>& headers,
                                               host_abi::MessageServices& services) {
  const std::vector<std::pair<std::string, std::string>> header_list(headers.begin(),
                                                                     headers.end());
  const std::lock_guard lock(mutex_);
  std::optional<isolation::WorkerDeath> death = process_.handle(message, header_list, services);
  if (!death)
    return std::nullopt;
  return std::move(death->reason);
}

}  // namespace warren::testing
