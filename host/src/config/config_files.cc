// Whole-file reads for the configuration and its secret files, with the OS reason on failure.
#include "config/config_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

namespace warren::config {
namespace {

std::string os_error_text(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// "group", "others", "group and others" or "": the classes that have any of their bits in `mode`.
std::string classes_with(mode_t mode, mode_t group_bits, mode_t other_bits) {
  const bool group = (mode & group_bits) != 0;
  const bool others = (mode & other_bits) != 0;
  return group && others ? "group and others" : group ? "group" : others ? "others" : "";
}

}  // namespace

std::optional<std::string> secret_file_exposure(const std::filesystem::path& file) {
  struct stat status {};
  if (::stat(file.c_str(), &status) != 0)
    return "cannot read " + in_quotes(file.string()) + ": " + os_error_text(errno);
  // Checked before anything reads it: /dev/zero or /dev/urandom would be read for ever, a FIFO
  // without a writer would block the start (a timeout of tests/fuzz/config_loader.cc).
  if (!S_ISREG(status.st_mode))
    return in_quotes(file.string()) + " is not a regular file: a secret is read from a file";
  const mode_t mode = status.st_mode;
  // Root-owned secrets may be shared with the service's group, read-only.
  const mode_t allowed = status.st_uid == 0 ? S_IRGRP : 0;
  if ((mode & (S_IRWXG | S_IRWXO) & ~allowed) == 0)
    return std::nullopt;
  const mode_t excess = mode & ~allowed;
  const std::string readers = classes_with(excess, S_IRGRP, S_IROTH);
  const std::string writers = classes_with(excess, S_IWGRP, S_IWOTH);
  const std::string exposure = !readers.empty() ? "is readable by " + readers
                               : !writers.empty()
                                   ? "is writable by " + writers
                                   : "is open to " + classes_with(excess, S_IRWXG, S_IRWXO);
  return in_quotes(file.string()) + " " + exposure + " (mode " + octal_mode(mode) +
         "); a secret must be readable by its owner only: chmod 600 " + file.string() +
         (status.st_uid == 0 ? " (or 640, as root owns it, to share it with its group)" : "");
}

bool check_secret_file(TableReader& reader, std::string_view key,
                       const std::filesystem::path& file) {
  if (std::optional<std::string> exposure = secret_file_exposure(file)) {
    reader.report(key, std::move(*exposure));
    return false;
  }
  return true;
}

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
  // Before reading: only a regular file no one else can read is read at all.
  if (!check_secret_file(reader, key, file))
    return false;
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
