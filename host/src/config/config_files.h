// Reading the files a configuration involves: the configuration itself and the secrets it names
// (password_file, dsn_file). Errors name the file and the OS reason, never a secret's content.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "config/table_reader.h"

namespace warren::config {

// The whole file, or nullopt with `os_error` set ("No such file or directory").
std::optional<std::string> read_text_file(const std::filesystem::path& file, std::string& os_error);

// Reads the secret in `file` (named by `key` of `reader`) into `secret`, trailing newlines
// stripped. An unreadable or empty file is reported at `key`, naming the file.
bool read_secret_file(TableReader& reader, std::string_view key, const std::filesystem::path& file,
                      std::string& secret);

}  // namespace warren::config
