// The directory e-mails are "sent" to: one complete file per e-mail, written at most once.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace livraria {

class MailSpool {
 public:
  // Checks that `directory` exists, is a directory and accepts new files; throws
  // std::invalid_argument saying which and what to do otherwise.
  explicit MailSpool(std::filesystem::path directory);

  enum class Delivery { written, already_present };

  // Writes `content` as <directory>/<file_name> unless that file exists. The content is written
  // to a temporary file, flushed to disk, then hard-linked under its final name (which fails if
  // another writer got there first), so the final name only ever holds a complete e-mail and two
  // concurrent writers cannot both succeed. Throws std::system_error naming the file on I/O errors.
  Delivery write_once(std::string_view file_name, std::string_view content) const;

  const std::filesystem::path& directory() const noexcept { return directory_; }

 private:
  std::filesystem::path directory_;
};

}  // namespace livraria
