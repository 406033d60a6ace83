// See held_plugin_file.h.
#include "plugin/held_plugin_file.h"

#include <utility>

#include "plugin/file_trust.h"
#include "plugin/plugin_content.h"

namespace warren::plugin {

HeldPluginFile::HeldPluginFile(const std::filesystem::path& plugin_dir,
                               const std::filesystem::path& file)
    : file_(file) {
  check_trusted_plugin_file(plugin_dir, file);
  PluginContent content = read_plugin_content(file);
  content_hash_ = std::move(content.hash);
  memory_ = MemoryFile::of(file, content.bytes, MemoryFile::Sealing::sealed);
}

}  // namespace warren::plugin
