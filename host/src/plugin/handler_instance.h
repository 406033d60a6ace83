// A worker's live handler: the object the plugin's `create` returned, destroyed through the
// plugin's `destroy`. Holds its library so the code outlives the object.
#pragma once

#include <memory>

#include "plugin/host_services.h"
#include "plugin/plugin_library.h"

namespace warren::plugin {

class HandlerInstance {
 public:
  // Runs the handler's constructor. Throws PluginLoadError with the constructor's reason.
  HandlerInstance(std::shared_ptr<const PluginLibrary> library, WorkerServices& services);
  ~HandlerInstance();
  HandlerInstance(const HandlerInstance&) = delete;
  HandlerInstance& operator=(const HandlerInstance&) = delete;

  // Runs the handler once; it reports its outcome through services.report(). Never throws.
  void handle(const warren_message& message, MessageServices& services) const noexcept;

  const PluginInfo& info() const noexcept { return library_->info(); }

 private:
  // The plugin's object is destroyed in ~HandlerInstance, before this releases the library.
  std::shared_ptr<const PluginLibrary> library_;
  void* instance_ = nullptr;
};

}  // namespace warren::plugin
