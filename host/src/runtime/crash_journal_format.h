// The crash journal's bytes: a 64-byte header, then one 512-byte slot per handler thread. The
// file never leaves the machine that wrote it, so integers are in the host's byte order.
//
// A slot is written by one thread only: its identity and checksum first, then its state word
// (running) with a release store; cleared by storing the state word (empty) alone. A process that
// dies leaves each slot either empty, running with a whole identity, or (corruption, a power loss
// half-written to disk) with a checksum that does not match: a torn slot, which is reported and
// blamed on nobody. Reading parses a copy of the bytes, never the mapping, so a short or garbled
// file cannot fault the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/crash_identity.h"

namespace warren::runtime::journal_format {

inline constexpr char kMagic[8] = {'W', 'R', 'N', 'C', 'R', 'A', 'S', 'H'};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::size_t kSlotSize = 512;
inline constexpr std::uint32_t kSlotEmpty = 0;
inline constexpr std::uint32_t kSlotRunning = 0x4E555221;  // "!RUN"

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t slot_size;
  std::uint32_t slot_count;
  std::uint32_t pid;            // of the run that wrote it, for log lines
  std::int64_t opened_unix_ms;  // when that run opened it
  std::uint32_t checksum;       // CRC-32 of the bytes above
  std::int32_t fatal_signal;    // set by the fatal-signal handler (0: none); not checksummed
  char reserved[24];
};
static_assert(sizeof(Header) == kHeaderSize);
inline constexpr std::size_t kHeaderChecksummed = offsetof(Header, checksum);

struct Slot {
  std::uint32_t state;     // kSlotEmpty or kSlotRunning
  std::uint32_t checksum;  // CRC-32 of the bytes after it up to the end of the texts
  std::int64_t started_unix_ms;
  std::uint16_t worker_size;
  std::uint16_t queue_size;
  std::uint16_t key_size;
  std::uint16_t reserved;
  char text[kSlotSize - 24];  // worker, queue, key, back to back
};
static_assert(sizeof(Slot) == kSlotSize);
static_assert(2 * CrashIdentity::kMaxName + CrashIdentity::kMaxKey <= sizeof(Slot::text));

inline std::size_t file_size(std::size_t slot_count) {
  return kHeaderSize + slot_count * kSlotSize;
}

// A fresh header for `slot_count` slots.
Header make_header(std::uint32_t slot_count, std::uint32_t pid, std::int64_t now_unix_ms);

// Fills `slot` (identity, time, checksum) and only then marks it running. `slot` is the writer
// thread's own; the release store orders the state word after the rest.
void enter_slot(Slot& slot, const CrashIdentity& identity, std::int64_t now_unix_ms) noexcept;
void clear_slot(Slot& slot) noexcept;

struct RunningEntry {
  std::size_t slot = 0;
  CrashIdentity identity;
  std::int64_t started_unix_ms = 0;
};

// What a previous run left.
struct Snapshot {
  std::uint32_t pid = 0;
  std::int64_t opened_unix_ms = 0;
  int fatal_signal = 0;
  std::vector<RunningEntry> running;  // slots inside a handler when it ended
  std::vector<std::size_t> torn;      // slots marked running whose content does not check out
  std::vector<std::size_t> garbled;   // slots whose state word is neither empty nor running
};

// Why a file is not a journal this version can read: the whole file is discarded.
struct Defect {
  std::string why;
};

std::variant<Snapshot, Defect> parse(std::string_view bytes);

}  // namespace warren::runtime::journal_format
