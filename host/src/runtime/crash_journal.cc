// See crash_journal.h.
#include "runtime/crash_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace warren::runtime {
namespace {

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string os_error(int error) {
  return std::strerror(error);
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw CrashJournalError("crash journal " + path.string() + ": " + what + ": " + os_error(error));
}

}  // namespace

std::unique_ptr<CrashJournal> CrashJournal::lock(const std::filesystem::path& path) {
  std::error_code ignored;
  const std::filesystem::path dir = path.parent_path();
  if (!std::filesystem::is_directory(dir, ignored)) {
    throw CrashJournalError("crash journal " + path.string() + ": the state directory " +
                            dir.string() +
                            " does not exist (the host never creates it: systemd's "
                            "StateDirectory= or the package does; or set [host] state_dir)");
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    fail(path, "cannot open or create it", errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      throw CrashJournalError("crash journal " + path.string() +
                              ": another running host uses it (same [host] name and state_dir); "
                              "give each host its own name or state_dir");
    }
    fail(path, "cannot lock it", error);
  }
  return std::unique_ptr<CrashJournal>(new CrashJournal(path, fd));
}

CrashJournal::~CrashJournal() {
  if (mapping_ != nullptr)
    ::munmap(mapping_, mapped_size_);
  if (fd_ >= 0)
    ::close(fd_);
}

CrashJournal::Previous CrashJournal::read_previous() const {
  struct stat status {};
  if (::fstat(fd_, &status) != 0)
    return journal_format::Defect{"cannot read its size: " + os_error(errno)};
  if (status.st_size == 0)
    return std::monostate{};
  // Bounded: a journal has at most a few thousand slots; anything far bigger is not one.
  constexpr off_t kLargest = 64 << 20;
  if (status.st_size > kLargest) {
    return journal_format::Defect{"it is " + std::to_string(status.st_size) +
                                  " bytes long, far more than a crash journal"};
  }
  std::string bytes(static_cast<std::size_t>(status.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got =
        ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return journal_format::Defect{"cannot read it: " + os_error(errno)};
    if (got == 0)
      break;
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return std::visit([](auto&& parsed) -> Previous { return std::move(parsed); },
                    journal_format::parse(bytes));
}

void CrashJournal::start(std::size_t slots) {
  const std::size_t size = journal_format::file_size(slots);
  if (::ftruncate(fd_, 0) != 0)
    fail(path_, "cannot empty it", errno);
  // Blocks reserved now: writing into a mapped hole on a full file system would be SIGBUS.
  if (const int error = ::posix_fallocate(fd_, 0, static_cast<off_t>(size)); error != 0) {
    static_cast<void>(::ftruncate(fd_, 0));  // an empty file reads as "nothing left" next time
    fail(path_, "cannot reserve " + std::to_string(size) + " bytes", error);
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapping == MAP_FAILED)
    fail(path_, "cannot map it", errno);
  const journal_format::Header header = journal_format::make_header(
      static_cast<std::uint32_t>(slots), static_cast<std::uint32_t>(::getpid()), now_unix_ms());
  std::memcpy(mapping, &header, sizeof header);
  mapping_ = mapping;
  mapped_size_ = size;
  slots_ = slots;
}

journal_format::Slot& CrashJournal::slot_at(std::size_t slot) noexcept {
  auto* base = static_cast<char*>(mapping_) + journal_format::kHeaderSize;
  return *reinterpret_cast<journal_format::Slot*>(base + slot * journal_format::kSlotSize);
}

void CrashJournal::enter(std::size_t slot, const CrashIdentity& identity) noexcept {
  if (mapping_ != nullptr && slot < slots_)
    journal_format::enter_slot(slot_at(slot), identity, now_unix_ms());
}

void CrashJournal::leave(std::size_t slot) noexcept {
  if (mapping_ != nullptr && slot < slots_)
    journal_format::clear_slot(slot_at(slot));
}

std::int32_t* CrashJournal::fatal_signal_word() noexcept {
  if (mapping_ == nullptr)
    return nullptr;
  return &static_cast<journal_format::Header*>(mapping_)->fatal_signal;
}

void CrashJournal::remove() noexcept {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace warren::runtime
