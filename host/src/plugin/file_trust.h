// Decides whether a plugin file may be loaded into the host process at all.
//
// Loading a `.so` runs its code with the host's privileges, so only a file that nobody but root
// or the running user could have written is accepted: the plugin directory must be an absolute,
// real directory (not a symlink); the file must lie inside it (no ".." in its path), be a regular
// file and not a symlink; neither the file nor any directory from the plugin directory down to
// it may be writable by group or others, and each must be owned by root or by the running user.
//
// This is a check, not a lock: the file could still be swapped between the check and dlopen(),
// but only by root or the running user, whom the host trusts anyway.
#pragma once

#include <filesystem>

#include "plugin/plugin_load_error.h"

namespace warren::plugin {

// Throws PluginLoadError(file, reason) naming the exact cause and the fix, e.g.
//   refused: writable by others (mode 0666); make it 0755 or 0644 and owned by root or uid 1000
// A relative `file` is taken relative to `plugin_dir`.
void check_trusted_plugin_file(const std::filesystem::path& plugin_dir,
                               const std::filesystem::path& file);

}  // namespace warren::plugin
