// PluginLoadError: formats the file and the reason into one message an operator can act on.
#include "plugin/plugin_load_error.h"

#include <utility>

namespace warren::plugin {

PluginLoadError::PluginLoadError(std::filesystem::path file, std::string reason)
    : std::runtime_error("\"" + file.string() + "\": " + reason),
      file_(std::move(file)),
      reason_(std::move(reason)) {}

}  // namespace warren::plugin
