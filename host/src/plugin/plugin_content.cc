// See plugin_content.h.
#include "plugin/plugin_content.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include "plugin/plugin_load_error.h"

namespace warren::plugin {
namespace {

// FNV-1a 64, fed piece by piece.
class ContentHash {
 public:
  void add(std::string_view bytes) noexcept {
    for (const unsigned char byte : bytes) {
      hash_ ^= byte;
      hash_ *= 0x100000001b3ULL;
    }
  }
  std::string text() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
    return text;
  }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

[[noreturn]] void refuse_unreadable(const std::filesystem::path& file) {
  throw PluginLoadError(file, std::string("refused: cannot read it: ") + std::strerror(errno));
}

}  // namespace

std::string plugin_content_hash(const std::string& bytes) {
  ContentHash hash;
  hash.add(bytes);
  return hash.text();
}

PluginContent read_plugin_content(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    refuse_unreadable(file);
  PluginContent content;
  // Read into a string sized once from the file's length: one grown as it reads (assign from
  // stream iterators) held up to twice the file while it copied itself over, and those pages
  // stay in the peak RSS. Then whatever a file that grew meanwhile still holds.
  std::error_code unknown;
  const auto length = std::filesystem::file_size(file, unknown);
  if (!unknown && length > 0) {
    content.bytes.resize(static_cast<std::size_t>(length));
    in.read(content.bytes.data(), static_cast<std::streamsize>(length));
    content.bytes.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (!in.bad())
    content.bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad())
    refuse_unreadable(file);
  content.hash = plugin_content_hash(content.bytes);
  return content;
}

std::string plugin_file_hash(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    refuse_unreadable(file);
  ContentHash hash;
  std::array<char, 16 * 1024> piece;
  while (in.read(piece.data(), piece.size()) || in.gcount() > 0)
    hash.add(std::string_view(piece.data(), static_cast<std::size_t>(in.gcount())));
  if (in.bad())
    refuse_unreadable(file);
  return hash.text();
}

}  // namespace warren::plugin
