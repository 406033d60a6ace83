// Reading the files a configuration involves: the configuration itself and the secrets it names
// (password_file, dsn_file, and the TLS key_file, which only OpenSSL reads). Errors name the
// file and the OS reason, never a secret's content.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "config/table_reader.h"

namespace warren::config {

// The whole file, or nullopt with `os_error` set ("No such file or directory").
std::optional<std::string> read_text_file(const std::filesystem::path& file, std::string& os_error);

// Why `file` is not fit to hold a secret, with the fix ("... chmod 600 FILE"), or nullopt when
// it is. A secret may be readable by its owner alone; one owned by root may also be readable
// (not writable) by its group, the root:warren 0640 and Kubernetes fsGroup (0440) layouts, as
// PostgreSQL allows for its key file. Symlinks are followed: the target's mode is what counts.
// A file that cannot be inspected gives the OS reason; one that is not a regular file (a device,
// a FIFO, a directory) is refused as such.
std::optional<std::string> secret_file_exposure(const std::filesystem::path& file);

// Reports at `key` of `reader` when secret_file_exposure(file) finds something; false then.
bool check_secret_file(TableReader& reader, std::string_view key,
                       const std::filesystem::path& file);

// Reads the secret in `file` (named by `key` of `reader`) into `secret`, trailing newlines
// stripped. An unreadable, empty or exposed (secret_file_exposure, checked before reading) file
// is reported at `key`, naming the file.
bool read_secret_file(TableReader& reader, std::string_view key, const std::filesystem::path& file,
                      std::string& secret);

}  // namespace warren::config
