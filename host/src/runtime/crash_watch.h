// Crash accounting for one run of the host (issue 18): a message that crashes the host must not
// take its neighbours to the dead-letter queue.
//
// In the default in-process mode a crash kills the host and systemd restarts it; the broker then
// redelivers the whole prefetched window, and a quorum queue's delivery limit would end up
// dead-lettering every message that happened to be prefetched with the poison. The host knows
// better: at start it reads the crash journal (crash_journal.h) the dead run left, blames only
// the messages that were inside a handler, and counts their crashes in the crash ledger
// (crash_ledger.h). The dispatcher asks suspicion() of each delivery: a suspect runs alone
// (solo_gate.h), so that another crash blames it alone; one that reached its worker's
// max_crashes is dead-lettered without running.
//
// Never fatal: a state directory that is missing or not writable, a journal another host holds,
// or no space left turns crash accounting off with one warning; a corrupt journal or ledger is
// discarded with a warning.
//
// The journal and ledger know nothing of the transport: a table-queue transport could use the
// same journal to tell a crash of this host from a slow host elsewhere.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>

#include "config/config.h"
#include "observability/metrics.h"
#include "runtime/crash_identity.h"
#include "runtime/crash_journal.h"
#include "runtime/crash_ledger.h"

namespace warren::runtime {

class CrashWatch {
 public:
  // The files of the host named `host_name` in `state_dir`.
  static std::filesystem::path journal_path(const std::filesystem::path& state_dir,
                                            std::string_view host_name);
  static std::filesystem::path ledger_path(const std::filesystem::path& state_dir,
                                           std::string_view host_name);

  // Opens the journal and the ledger under [host] state_dir with one slot per handler thread of
  // `config`'s workers, blames what the previous run left (logged, counted in
  // warren_host_crash_suspects_total) and records fatal signals from now on. nullptr, after one
  // warning, when crash accounting cannot run.
  static std::unique_ptr<CrashWatch> start(const config::Config& config,
                                           observability::Metrics& metrics);

  ~CrashWatch();
  CrashWatch(const CrashWatch&) = delete;
  CrashWatch& operator=(const CrashWatch&) = delete;

  std::size_t slots() const noexcept { return journal_->slots(); }

  // The identity's crash record, when the host died while it was in a handler (and the record
  // has not expired or been cleared since).
  std::optional<CrashRecord> suspicion(const CrashIdentity& identity) const;

  // Around each handler call: `slot` is the handler thread's own.
  void enter(std::size_t slot, const CrashIdentity& identity) noexcept {
    journal_->enter(slot, identity);
  }
  void leave(std::size_t slot) noexcept { journal_->leave(slot); }

  // The message left its worker without crashing the host (acked, or dead-lettered): its record
  // goes, so a later copy (a replay from the dead-letter queue) starts from nothing.
  void clear(const CrashIdentity& identity) noexcept;

  // A clean stop: nothing still in a handler now is a crash. Removes the journal.
  void stop() noexcept { journal_->remove(); }

 private:
  CrashWatch(std::unique_ptr<CrashJournal> journal, std::unique_ptr<CrashLedger> ledger)
      : journal_(std::move(journal)), ledger_(std::move(ledger)) {}

  std::unique_ptr<CrashJournal> journal_;
  std::unique_ptr<CrashLedger> ledger_;
};

}  // namespace warren::runtime
