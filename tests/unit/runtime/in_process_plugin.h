// A PluginLibrary whose descriptor comes from a handler class compiled into the test itself, so
// runtime tests can drive the real HandlerInstance/host API path and still share state with the
// handler (counters, flags) without a .so.
#pragma once

#include <memory>
#include <string>

#include "plugin/plugin_library.h"
#include "warren/sdk.h"

namespace warren::testing_support {

class InProcessPlugin final : public plugin::PluginLibrary {
 public:
  explicit InProcessPlugin(const warren_plugin_descriptor& descriptor) : descriptor_(descriptor) {
    info_.file = "<in-process>";
    info_.name = descriptor.name;
    info_.version = descriptor.version;
    info_.build_fingerprint = descriptor.build_fingerprint;
    info_.abi_major = descriptor.abi_major;
    info_.abi_minor = descriptor.abi_minor;
  }
  const plugin::PluginInfo& info() const noexcept override { return info_; }
  const warren_plugin_descriptor& descriptor() const noexcept override { return descriptor_; }

  template <class H>
  static std::shared_ptr<InProcessPlugin> of(const char* name) {
    static const warren_plugin_descriptor descriptor = detail::make_descriptor<H>(name, "test");
    return std::make_shared<InProcessPlugin>(descriptor);
  }

 private:
  warren_plugin_descriptor descriptor_;
  plugin::PluginInfo info_;
};

}  // namespace warren::testing_support
