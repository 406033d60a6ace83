// See crash_watch.h.
#include "runtime/crash_watch.h"

#include <algorithm>
#include <string>
#include <vector>

#include "observability/log.h"
#include "runtime/fatal_signal.h"

namespace warren::runtime {
namespace {

using observability::LogFields;
using observability::LogLevel;

// A host name as a file name: letters, digits, '.', '-', '_' kept, anything else '_'.
std::string file_stem(std::string_view host_name) {
  std::string stem;
  for (const char c : host_name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
    stem += safe ? c : '_';
  }
  if (stem.empty() || stem.starts_with('.'))
    stem.insert(0, "host");
  return stem;
}

std::size_t handler_threads(const config::Config& config) {
  std::size_t threads = 0;
  for (const config::WorkerConfig& worker : config.workers)
    threads += static_cast<std::size_t>(std::max(
        1, worker.isolation == config::WorkerConfig::Isolation::process ? worker.processes
                                                                        : worker.concurrency));
  return threads;
}

std::string times(int count) {
  return std::to_string(count) + (count == 1 ? " time" : " times");
}

// How the previous run ended, for the log lines about it.
std::string how_it_died(const journal_format::Snapshot& previous) {
  std::string text = "the previous run (pid " + std::to_string(previous.pid) + ") died";
  if (previous.fatal_signal != 0)
    return text + " of " + signal_name(previous.fatal_signal);
  return text + " (no fatal signal recorded: SIGKILL, the OOM killer, a power loss)";
}

// Blames the messages the previous run left in a handler; logs what it found.
void blame(const journal_format::Snapshot& previous, const config::Config& config,
           CrashLedger& ledger, observability::Metrics& metrics, const std::string& journal) {
  for (const std::size_t slot : previous.torn) {
    observability::log_warn("crash journal " + journal + ": slot " + std::to_string(slot) +
                            " is torn (its content does not match its checksum): nobody is "
                            "blamed for it");
  }
  for (const std::size_t slot : previous.garbled) {
    observability::log_warn("crash journal " + journal + ": slot " + std::to_string(slot) +
                            " holds garbage: nobody is blamed for it");
  }
  if (previous.running.empty()) {
    observability::log_warn(how_it_died(previous) +
                            " with no message in a handler: no message is blamed");
    return;
  }
  std::vector<CrashIdentity> suspects;
  for (const auto& entry : previous.running)
    suspects.push_back(entry.identity);
  const std::vector<CrashRecord> records =
      ledger.record_crashes(suspects, previous.fatal_signal, CrashLedger::Clock::now());
  if (std::string error = ledger.save(); !error.empty()) {
    observability::log_warn("crash ledger: " + error +
                            "; the crash counts below hold for this run only");
  }
  for (const CrashRecord& record : records) {
    const config::WorkerConfig* worker = config.find_worker(record.identity.worker);
    metrics.crash_suspects(record.identity.worker).Increment();
    std::string text = how_it_died(previous) + " while " + record.identity.describe() +
                       " of queue '" + record.identity.queue + "' was in a handler: the host " +
                       "died " + times(record.crashes) + " while handling it";
    if (worker != nullptr) {
      text += record.crashes >= worker->max_crashes
                  ? "; at max_crashes (" + std::to_string(worker->max_crashes) +
                        ") it will be dead-lettered without running"
                  : "; it will run alone (max_crashes " + std::to_string(worker->max_crashes) + ")";
    }
    observability::log(LogLevel::warn, LogFields::for_worker(record.identity.worker), text);
  }
}

}  // namespace

std::filesystem::path CrashWatch::journal_path(const std::filesystem::path& state_dir,
                                               std::string_view host_name) {
  return state_dir / (file_stem(host_name) + ".crash-journal");
}

std::filesystem::path CrashWatch::ledger_path(const std::filesystem::path& state_dir,
                                              std::string_view host_name) {
  return state_dir / (file_stem(host_name) + ".crash-ledger");
}

std::unique_ptr<CrashWatch> CrashWatch::start(const config::Config& config,
                                              observability::Metrics& metrics) {
  const auto& host = config.host;
  const std::filesystem::path journal_file = journal_path(host.state_dir, host.name);
  const std::string off =
      "; crash accounting is off for this run (a message that crashes the host is stopped only "
      "by the queue's delivery limit, with its neighbours)";
  std::unique_ptr<CrashJournal> journal;
  try {
    journal = CrashJournal::lock(journal_file);
  } catch (const CrashJournalError& error) {
    observability::log_warn(error.what() + off);
    return nullptr;
  }

  auto ledger = std::make_unique<CrashLedger>(ledger_path(host.state_dir, host.name));
  if (std::string problem = ledger->load(CrashLedger::Clock::now()); !problem.empty()) {
    observability::log_warn("crash ledger " + ledger->path().string() + " discarded: " + problem +
                            "; crash counts start again");
  }

  const CrashJournal::Previous previous = journal->read_previous();
  if (const auto* defect = std::get_if<journal_format::Defect>(&previous)) {
    observability::log_warn("crash journal " + journal_file.string() + " discarded: " +
                            defect->why + "; nobody is blamed for how the previous run ended");
  } else if (const auto* snapshot = std::get_if<journal_format::Snapshot>(&previous)) {
    blame(*snapshot, config, *ledger, metrics, journal_file.string());
  }

  try {
    journal->start(handler_threads(config));
  } catch (const CrashJournalError& error) {
    observability::log_warn(error.what() + off);
    return nullptr;
  }
  record_fatal_signals_at(journal->fatal_signal_word());
  if (ledger->size() > 0) {
    observability::log_info("crash ledger " + ledger->path().string() + ": " +
                            std::to_string(ledger->size()) +
                            " message(s) suspected of crashing the host will run alone");
  }
  return std::unique_ptr<CrashWatch>(new CrashWatch(std::move(journal), std::move(ledger)));
}

CrashWatch::~CrashWatch() {
  stop_recording_fatal_signals_at(journal_->fatal_signal_word());
}

std::optional<CrashRecord> CrashWatch::suspicion(const CrashIdentity& identity) const {
  return ledger_->find(identity, CrashLedger::Clock::now());
}

void CrashWatch::clear(const CrashIdentity& identity) noexcept {
  try {
    std::string error;
    if (ledger_->forget(identity, error) && !error.empty()) {
      observability::log(LogLevel::warn, LogFields::for_worker(identity.worker),
                         "crash ledger: " + error + "; " + identity.describe() +
                             " stays suspected after a restart");
    }
  } catch (const std::exception& e) {
    observability::log(LogLevel::warn, LogFields::for_worker(identity.worker),
                       std::string("crash ledger: ") + e.what());
  }
}

}  // namespace warren::runtime
