// A plugin's handler instance, made by its descriptor's `create` with the host table and a
// worker's services, called by `handle`, destroyed by `destroy`. The one place that hands the
// host's objects to a plugin as opaque handles: `host_plugin` is a WorkerServices* and
// `host_message` a MessageServices*, exactly the types host_table.cc casts them back to.
#pragma once

#include "warren/abi.h"
#include "warren/host_abi/services.h"

namespace warren::host_abi {

class PluginInstance {
 public:
  // Runs the plugin's constructor for `worker`. Throws std::runtime_error whose what() is the
  // plugin's reason ("it gave no reason" when it gave none). `descriptor` must have passed
  // descriptor_refusal; its code (the library) and `worker` must outlive this object.
  PluginInstance(const warren_plugin_descriptor& descriptor, WorkerServices& worker);
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  // Runs the handler once; it reports through services.report(). Never throws.
  void handle(const warren_message& message, MessageServices& services) const noexcept;

 private:
  void (*destroy_)(void* instance);
  void (*handle_)(void* instance, const warren_message* message, void* host_message);
  void* instance_ = nullptr;
};

}  // namespace warren::host_abi
