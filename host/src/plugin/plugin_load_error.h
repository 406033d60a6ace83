// The one error the plugin loader throws: which plugin file, and why it was refused or failed.
// Kept apart from plugin_library.h so the trust check and the handler instance can throw it
// without depending on the loader.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace warren::plugin {

// what() reads `"<file>": <reason>`, e.g.
//   "/opt/p/libx.so": refused: writable by others (mode 0666); make it 0755 or 0644 ...
class PluginLoadError : public std::runtime_error {
 public:
  PluginLoadError(std::filesystem::path file, std::string reason);
  const std::filesystem::path& file() const noexcept { return file_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::filesystem::path file_;
  std::string reason_;
};

}  // namespace warren::plugin
