// Whole-file reads for the configuration and its secret files, with the OS reason on failure.
#include "config/config_files.h"

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

namespace warren::config {
namespace {

std::string os_error_text(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

}  // namespace

std::optional<std::string> read_text_file(const std::filesystem::path& file,
                                          std::string& os_error) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(file.c_str(), "rb"),
                                                         &std::fclose);
  if (!stream) {
    os_error = os_error_text(errno);
    return std::nullopt;
  }
  std::string content;
  char buffer[8192];
  while (true) {
    const std::size_t count = std::fread(buffer, 1, sizeof buffer, stream.get());
    content.append(buffer, count);
    if (count < sizeof buffer) {
      break;
    }
  }
  if (std::ferror(stream.get())) {
    os_error = os_error_text(errno);  // e.g. EISDIR: fopen accepts a directory, fread does not
    return std::nullopt;
  }
  return content;
}

bool read_secret_file(TableReader& reader, std::string_view key, const std::filesystem::path& file,
                      std::string& secret) {
  std::string os_error;
  std::optional<std::string> content = read_text_file(file, os_error);
  if (!content) {
    reader.report(key, "cannot read " + in_quotes(file.string()) + ": " + os_error);
    return false;
  }
  while (!content->empty() && (content->back() == '\n' || content->back() == '\r')) {
    content->pop_back();
  }
  if (content->empty()) {
    reader.report(key, in_quotes(file.string()) + " is empty");
    return false;
  }
  secret = std::move(*content);
  return true;
}

}  // namespace warren::config
