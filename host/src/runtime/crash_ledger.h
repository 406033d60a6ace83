// The crash ledger: how many times the host died while each message was inside a handler, with
// the time and signal of the last death. A small text file beside the crash journal, rewritten
// whole (temp file + rename, so a crash mid-write leaves the old one) whenever it changes, which
// is rare: at a start after a crash, and when a suspect later succeeds or is dead-lettered. It
// is checksummed; a corrupt one is discarded (the counts start again, the delivery limit remains
// the backstop). Entries expire a day after their last crash.
//
// Read by every handler thread (find), so it is guarded by a mutex, with a lock-free answer for
// the common case of an empty ledger.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/crash_identity.h"

namespace warren::runtime {

struct CrashRecord {
  CrashIdentity identity;
  int crashes = 0;
  std::int64_t last_crash_unix_ms = 0;
  int last_signal = 0;  // 0: unknown (SIGKILL, a power loss, a signal not recorded)
};

class CrashLedger {
 public:
  using Clock = std::chrono::system_clock;
  static constexpr std::chrono::hours kExpiry{24};

  explicit CrashLedger(std::filesystem::path path) : path_(std::move(path)) {}
  CrashLedger(const CrashLedger&) = delete;
  CrashLedger& operator=(const CrashLedger&) = delete;

  // Reads the file (missing: an empty ledger), keeping entries younger than kExpiry at `now`.
  // Empty when it was read, else why it was discarded (unreadable, corrupt, another version):
  // the ledger is then empty and the next save() replaces the file.
  std::string load(Clock::time_point now);

  // One more crash for each identity, at `now`, by `signal` (0: unknown). Returns the records
  // as they now are, in the order given. Does not save.
  std::vector<CrashRecord> record_crashes(const std::vector<CrashIdentity>& identities, int signal,
                                          Clock::time_point now);

  // The identity's record, unless it has none or it expired at `now`.
  std::optional<CrashRecord> find(const CrashIdentity& identity, Clock::time_point now) const;

  // Removes the identity's record and saves; false (nothing written) when it had none. `error`
  // says why saving failed (empty when it did not).
  bool forget(const CrashIdentity& identity, std::string& error);

  // Writes every record (temp file + rename; the file is removed when there is none). Empty on
  // success, else what failed: the records stay in memory for this run.
  std::string save() const;

  std::size_t size() const;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::string save_locked() const;

  const std::filesystem::path path_;
  mutable std::mutex mutex_;
  std::map<CrashIdentity, CrashRecord> records_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace warren::runtime
