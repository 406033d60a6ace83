// PluginInstance: the plugin's create/handle/destroy, called with the host table and the
// services as the handles host_table.cc expects.
#include "warren/host_abi/plugin_instance.h"

#include <stdexcept>
#include <string>

#include "warren/host_abi/host_table.h"

namespace warren::host_abi {

PluginInstance::PluginInstance(const warren_plugin_descriptor& descriptor, WorkerServices& worker)
    : destroy_(descriptor.destroy), handle_(descriptor.handle) {
  char error[1024] = {};
  // host_table.cc casts `host_plugin` back to exactly this type.
  WorkerServices* host_plugin = &worker;
  instance_ = descriptor.create(&host_table(), host_plugin, error, sizeof error);
  if (instance_ == nullptr) {
    error[sizeof error - 1] = '\0';  // A plugin may forget the terminator.
    throw std::runtime_error(error[0] != '\0' ? error : "it gave no reason");
  }
}

PluginInstance::~PluginInstance() {
  destroy_(instance_);
}

void PluginInstance::handle(const warren_message& message,
                            MessageServices& services) const noexcept {
  // host_table.cc casts `host_message` back to exactly this type.
  MessageServices* host_message = &services;
  handle_(instance_, &message, host_message);
}

}  // namespace warren::host_abi
