// HandlerInstance: the plugin's instance made through the shared ABI adapter, its constructor's
// failure reported as a PluginLoadError naming the plugin's file.
#include "plugin/handler_instance.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace warren::plugin {

HandlerInstance::HandlerInstance(std::shared_ptr<const PluginLibrary> library,
                                 host_abi::WorkerServices& services)
    : library_(std::move(library)) {
  if (library_ == nullptr) {
    throw std::invalid_argument("HandlerInstance needs a loaded PluginLibrary, got none");
  }
  try {
    instance_ = std::make_unique<host_abi::PluginInstance>(library_->descriptor(), services);
  } catch (const std::runtime_error& e) {
    throw PluginLoadError(library_->info().file,
                          std::string("the handler's constructor failed: ") + e.what());
  }
}

}  // namespace warren::plugin
