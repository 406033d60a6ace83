// A plugin written against abi.h alone, without the SDK, so that a test can make through the host
// table any call a plugin could make, including the ones the SDK never makes (null requests,
// structs of the wrong size, unknown kinds). Its `handle` runs the script installed with
// RawPlugin::Script for the duration of a test; the script says what the plugin saw.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/plugin_library.h"
#include "warren/abi.h"
#include "warren/detail/strings.h"

namespace warren::plugin::testing {

// The plugin's view of one handle() call: the host table and the two handles.
struct RawCalls {
  const warren_host_api& host;
  void* worker;
  void* message;

  void* metric(std::uint32_t type, std::string_view name, const std::vector<double>& buckets = {}) {
    return host.plugin_metric(worker, type, detail::to_abi(name), detail::to_abi("help"),
                              buckets.empty() ? nullptr : buckets.data(), buckets.size());
  }
  // "0", or "1: <the host's reason>".
  std::string publish(const warren_publish_request* request) {
    char error[256] = {};
    const int failed = host.message_publish(message, request, error, sizeof error);
    return failed == 0 ? "0" : "1: " + std::string(error);
  }
  void report(std::uint32_t kind, std::int64_t delay_ms = -1, std::string_view reason = {},
              std::uint32_t error_kind = WARREN_ERROR_NONE, std::string_view error_type = {}) {
    warren_outcome outcome{};
    outcome.struct_size = sizeof outcome;
    outcome.kind = kind;
    outcome.delay_ms = delay_ms;
    outcome.reason = detail::to_abi(reason);
    outcome.error_kind = error_kind;
    outcome.error_type = detail::to_abi(error_type);
    host.message_report(message, &outcome);
  }
  void ack() { report(WARREN_OUTCOME_ACK); }
};

// What the plugin does in one handle() call; returns what it saw.
using RawScript = std::function<std::string(RawCalls&)>;

class RawPlugin {
 public:
  // Installs `script` (and where to put what it saw) until destroyed. One at a time.
  class Script {
   public:
    Script(const RawScript& script, std::string& seen) {
      if (current_ != nullptr)
        throw std::logic_error("a RawPlugin script is already installed");
      current_ = &script;
      seen_ = &seen;
    }
    ~Script() {
      current_ = nullptr;
      seen_ = nullptr;
    }
    Script(const Script&) = delete;
    Script& operator=(const Script&) = delete;
  };

  static constexpr warren_plugin_descriptor descriptor() {
    warren_plugin_descriptor descriptor{};
    descriptor.struct_size = sizeof descriptor;
    descriptor.abi_major = WARREN_ABI_MAJOR;
    descriptor.abi_minor = WARREN_ABI_MINOR;
    descriptor.name = "raw";
    descriptor.version = "0.0.0";
    descriptor.build_fingerprint = "written against abi.h";
    descriptor.create = &create;
    descriptor.destroy = &destroy;
    descriptor.handle = &handle;
    return descriptor;
  }

  // The descriptor as the host's loader would hand it over.
  static std::shared_ptr<const PluginLibrary> library() {
    class InProcess final : public PluginLibrary {
     public:
      InProcess() : descriptor_(RawPlugin::descriptor()) {
        info_.file = "<raw plugin>";
        info_.name = "raw";
        info_.abi_major = descriptor_.abi_major;
        info_.abi_minor = descriptor_.abi_minor;
      }
      const PluginInfo& info() const noexcept override { return info_; }
      const warren_plugin_descriptor& descriptor() const noexcept override { return descriptor_; }

     private:
      warren_plugin_descriptor descriptor_;
      PluginInfo info_;
    };
    return std::make_shared<InProcess>();
  }

 private:
  struct Instance {
    const warren_host_api* host;
    void* worker;
  };

  static void* create(const warren_host_api* host, void* host_plugin, char*, std::size_t) {
    return new Instance{host, host_plugin};
  }
  static void destroy(void* instance) { delete static_cast<Instance*>(instance); }
  static void handle(void* instance, const warren_message*, void* host_message) {
    auto* self = static_cast<Instance*>(instance);
    RawCalls calls{*self->host, self->worker, host_message};
    std::string seen = current_ != nullptr ? (*current_)(calls) : "no script installed";
    if (seen_ != nullptr)
      *seen_ = std::move(seen);
  }

  static inline const RawScript* current_ = nullptr;
  static inline std::string* seen_ = nullptr;
};

}  // namespace warren::plugin::testing
