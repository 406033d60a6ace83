// MailSpool: a flushed temporary file (durable_file.h), then link(2) (atomic, refuses to
// replace), then fsync of the directory so the new name survives a power loss.
#include "mail_spool.h"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "durable_file.h"

namespace livraria {

MailSpool::MailSpool(std::filesystem::path directory) : directory_(std::move(directory)) {
  std::error_code error;
  const auto status = std::filesystem::status(directory_, error);
  if (!std::filesystem::exists(status)) {
    throw std::invalid_argument("out_dir '" + directory_.string() +
                                "' does not exist: create it, or point out_dir at the mail spool");
  }
  if (!std::filesystem::is_directory(status)) {
    throw std::invalid_argument("out_dir '" + directory_.string() + "' is not a directory");
  }
  std::string probe;
  const int fd = create_temp_beside(directory_ / "write-probe", probe);
  if (fd < 0) {
    const std::error_code cause(errno, std::generic_category());
    throw std::invalid_argument("out_dir '" + directory_.string() + "' is not writable (" +
                                cause.message() + "): give the worker's user write access to it");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

MailSpool::Delivery MailSpool::write_once(std::string_view file_name,
                                          std::string_view content) const {
  const std::filesystem::path final_path = directory_ / file_name;
  if (::access(final_path.c_str(), F_OK) == 0)
    return Delivery::already_present;

  const FlushedTempFile temp(final_path, content, 0640, "e-mail file");
  if (::link(temp.path().c_str(), final_path.c_str()) != 0) {
    if (errno == EEXIST)
      return Delivery::already_present;  // a concurrent duplicate won
    throw io_error(errno, "cannot publish e-mail file " + final_path.string());
  }
  sync_directory(directory_);
  return Delivery::written;
}

}  // namespace livraria
