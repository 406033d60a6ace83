// See plugin_content.h.
#include "plugin/plugin_content.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "plugin/plugin_load_error.h"

namespace warren::plugin {

std::string plugin_content_hash(const std::string& bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

PluginContent read_plugin_content(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw PluginLoadError(file, std::string("refused: cannot read it: ") + std::strerror(errno));
  PluginContent content;
  content.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad())
    throw PluginLoadError(file, std::string("refused: cannot read it: ") + std::strerror(errno));
  content.hash = plugin_content_hash(content.bytes);
  return content;
}

}  // namespace warren::plugin
