// A worker's live handler: the plugin's instance (host_abi::PluginInstance: made by its
// `create`, destroyed by its `destroy`), holding its library so the code outlives the object.
#pragma once

#include <memory>

#include "plugin/plugin_library.h"
#include "warren/host_abi/plugin_instance.h"
#include "warren/host_abi/services.h"

namespace warren::plugin {

class HandlerInstance {
 public:
  // Runs the handler's constructor. Throws PluginLoadError with the constructor's reason.
  HandlerInstance(std::shared_ptr<const PluginLibrary> library, host_abi::WorkerServices& services);
  HandlerInstance(const HandlerInstance&) = delete;
  HandlerInstance& operator=(const HandlerInstance&) = delete;

  // Runs the handler once; it reports its outcome through services.report(). Never throws.
  void handle(const warren_message& message, host_abi::MessageServices& services) const noexcept {
    instance_->handle(message, services);
  }

  const PluginInfo& info() const noexcept { return library_->info(); }
  // Shared by the instances of its workers: a reload that keeps the plugin's content reuses it.
  const std::shared_ptr<const PluginLibrary>& library() const noexcept { return library_; }

 private:
  std::shared_ptr<const PluginLibrary> library_;
  // Declared after the library, so the plugin's object is destroyed before the library goes.
  std::unique_ptr<host_abi::PluginInstance> instance_;
};

}  // namespace warren::plugin
