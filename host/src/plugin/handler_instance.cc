// HandlerInstance: runs the plugin's create/handle/destroy through its descriptor, holding the
// library so the plugin's code outlives the object it created.
#include "plugin/handler_instance.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace warren::plugin {

HandlerInstance::HandlerInstance(std::shared_ptr<const PluginLibrary> library,
                                 WorkerServices& services)
    : library_(std::move(library)) {
  if (library_ == nullptr) {
    throw std::invalid_argument("HandlerInstance needs a loaded PluginLibrary, got none");
  }
  char error[1024] = {};
  // `host_plugin` must be a WorkerServices* exactly: host_api.cc casts it back to that type.
  WorkerServices* host_plugin = &services;
  instance_ = library_->descriptor().create(&host_api(), host_plugin, error, sizeof error);
  if (instance_ == nullptr) {
    error[sizeof error - 1] = '\0';  // A plugin may forget the terminator.
    const std::string reason = error[0] != '\0' ? error : "it gave no reason";
    throw PluginLoadError(library_->info().file, "the handler's constructor failed: " + reason);
  }
}

HandlerInstance::~HandlerInstance() {
  library_->descriptor().destroy(instance_);
}

void HandlerInstance::handle(const warren_message& message,
                             MessageServices& services) const noexcept {
  // `host_message` must be a MessageServices* exactly: host_api.cc casts it back to that type.
  MessageServices* host_message = &services;
  library_->descriptor().handle(instance_, &message, host_message);
}

}  // namespace warren::plugin
