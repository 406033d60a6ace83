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
  // A worker process gets it as its descriptor 4 (isolation/worker_spawn.h): one at 4 or below
  // would have to be copied out of the way at every spawn.
  memory_.move_to_at_least(kAboveWorkerDescriptors, file);
}

}  // namespace warren::plugin
