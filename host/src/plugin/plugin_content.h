// A plugin file's bytes as one read saw them, and their hash: what a reload compares to tell a
// replaced plugin from an unchanged one, and what it loads (plugin_library.h, load_snapshot), so
// that the code that runs is exactly the content that was hashed.
#pragma once

#include <filesystem>
#include <string>

namespace warren::plugin {

struct PluginContent {
  std::string bytes;
  std::string hash;  // FNV-1a 64 of the bytes, 16 hex digits: tells versions apart, no more
};

// Reads `file` whole. Throws PluginLoadError naming the file and the OS error.
PluginContent read_plugin_content(const std::filesystem::path& file);

// The hash read_plugin_content(file).hash would give, read in small pieces: for a caller that
// needs no bytes (issue 17: a whole plugin read into the heap at start-up, debug info and all,
// stayed in the host's peak RSS, about 1.7 MB for a 0.7 MB plugin as the string grew). Throws as
// read_plugin_content does.
std::string plugin_file_hash(const std::filesystem::path& file);

// The hash alone (content_hash of the PluginInfo of a library loaded from these bytes).
std::string plugin_content_hash(const std::string& bytes);

}  // namespace warren::plugin
