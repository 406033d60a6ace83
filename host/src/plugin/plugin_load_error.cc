// PluginLoadError: formats the file and the reason into one message an operator can act on.
#include "plugin/plugin_load_error.h"

#include <utility>

namespace warren::plugin {
namespace {

// "\"FILE\": REASON", appended rather than `"\"" + file.string() + ...`: GCC 12 at -O3 reports
// a false -Wrestrict inside std::string's insert for that form.
std::string message(const std::filesystem::path& file, const std::string& reason) {
  std::string text = "\"";
  text += file.string();
  text += "\": ";
  text += reason;
  return text;
}

}  // namespace

PluginLoadError::PluginLoadError(std::filesystem::path file, std::string reason)
    : std::runtime_error(message(file, reason)),
      file_(std::move(file)),
      reason_(std::move(reason)) {}

}  // namespace warren::plugin
