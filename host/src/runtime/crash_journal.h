// The crash journal: a small memory-mapped file under the state directory with one slot per
// handler thread. Before a handler runs, its thread writes the message's identity into its slot;
// after it returns, it clears the slot. When the process dies (a segfault in a plugin, abort(), a
// kill -9), the page cache keeps what the slots held, so the next start knows which messages were
// inside a handler: those are the crash's suspects (crash_watch.h blames them). Messages that were
// merely prefetched are in no slot.
//
// No fsync, ever: a process crash keeps the page cache, a power loss forgets the journal (the
// queue's delivery limit remains the backstop then). A clean stop removes the file, so a journal
// found at start always comes from a run that did not stop cleanly.
//
// Opening is in three steps so that nothing is lost between them: lock the file (one host per
// journal; the lock dies with the process), read what the previous run left, and only once the
// caller has recorded that, start a fresh journal over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

#include "runtime/crash_identity.h"
#include "runtime/crash_journal_format.h"

namespace warren::runtime {

// Why there is no journal: what, where, why. The caller runs without crash accounting.
class CrashJournalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CrashJournal {
 public:
  // Opens or creates `path` (mode 0600) in an existing directory and locks it. Throws
  // CrashJournalError when the directory is missing or not writable, or another process holds it.
  static std::unique_ptr<CrashJournal> lock(const std::filesystem::path& path);
  ~CrashJournal();
  CrashJournal(const CrashJournal&) = delete;
  CrashJournal& operator=(const CrashJournal&) = delete;

  // What the previous run left: nothing (a new or empty file: the last run stopped cleanly or
  // never ran), its snapshot, or why the content was unreadable (then discarded). Never faults on
  // a short or garbled file: it reads a copy.
  using Previous = std::variant<std::monostate, journal_format::Snapshot, journal_format::Defect>;
  Previous read_previous() const;

  // Replaces the content by a fresh journal of `slots` empty slots, space reserved on disk, and
  // maps it. Throws CrashJournalError (no space left, an I/O error); the journal is then unusable.
  void start(std::size_t slots);

  std::size_t slots() const noexcept { return slots_; }
  const std::filesystem::path& path() const noexcept { return path_; }

  // The running handler thread's own slot (slot < slots()); after start() only.
  void enter(std::size_t slot, const CrashIdentity& identity) noexcept;
  void leave(std::size_t slot) noexcept;

  // Where the fatal-signal handler stores the signal number (fatal_signal.h); after start().
  std::int32_t* fatal_signal_word() noexcept;

  // A clean stop: whatever still runs was not a crash. Removes the file (the mapping stays valid
  // until destruction, so late handlers write into nothing anyone reads).
  void remove() noexcept;

 private:
  CrashJournal(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  journal_format::Slot& slot_at(std::size_t slot) noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  void* mapping_ = nullptr;
  std::size_t mapped_size_ = 0;
  std::size_t slots_ = 0;
};

}  // namespace warren::runtime
