// See worker_diff.h.
#include "runtime/worker_diff.h"

#include <algorithm>

namespace warren::runtime {
namespace {

std::string text_of(const config::RetryPolicy& retry) {
  static constexpr const char* kBackoff[] = {"none", "fixed", "exponential"};
  return "max_attempts=" + std::to_string(retry.max_attempts) +
         " backoff=" + kBackoff[static_cast<int>(retry.backoff)] +
         " initial=" + std::to_string(retry.initial.count()) + "ms" +
         " max=" + std::to_string(retry.max.count()) + "ms" +
         " jitter=" + std::to_string(retry.jitter) +
         " immediate=" + std::to_string(retry.immediate);
}

std::string text_of(const std::optional<config::IdempotencyConfig>& idempotency) {
  if (!idempotency)
    return "off";
  return idempotency->store + " retention=" + std::to_string(idempotency->retention.count()) +
         "ms";  // the dsn is a secret: compared, never shown
}

void compare_text(std::vector<std::string>& what, const char* field, const std::string& before,
                  const std::string& after) {
  if (before != after)
    what.push_back(std::string(field) + " '" + before + "' -> '" + after + "'");
}

void compare_number(std::vector<std::string>& what, const char* field, long long before,
                    long long after) {
  if (before != after)
    what.push_back(std::string(field) + " " + std::to_string(before) + " -> " +
                   std::to_string(after));
}

std::vector<std::string> differences(const RunningWorker& running,
                                     const config::WorkerConfig& reloaded,
                                     const std::string& reloaded_hash) {
  const config::WorkerConfig& before = *running.config;
  std::vector<std::string> what;
  compare_text(what, "plugin", before.plugin, reloaded.plugin);
  if (before.plugin == reloaded.plugin && running.plugin_hash != reloaded_hash)
    what.emplace_back("plugin file content");
  compare_text(what, "queue", before.queue, reloaded.queue);
  compare_number(what, "prefetch", before.prefetch, reloaded.prefetch);
  compare_number(what, "concurrency", before.concurrency, reloaded.concurrency);
  compare_text(what, "retry", text_of(before.retry), text_of(reloaded.retry));
  if (before.settings != reloaded.settings)
    what.emplace_back("settings");  // values may be secrets: not shown
  compare_text(what, "dead_letter_exchange", before.dead_letter_exchange,
               reloaded.dead_letter_exchange);
  compare_text(what, "dead_letter_queue", before.dead_letter_queue, reloaded.dead_letter_queue);
  compare_number(what, "allow_message_loss", before.allow_message_loss,
                 reloaded.allow_message_loss);
  const bool same_store =
      before.idempotency.has_value() == reloaded.idempotency.has_value() &&
      (!before.idempotency || before.idempotency->dsn == reloaded.idempotency->dsn);
  if (text_of(before.idempotency) != text_of(reloaded.idempotency) || !same_store)
    what.emplace_back("idempotency");
  const auto isolation_name = [](config::WorkerConfig::Isolation isolation) {
    return isolation == config::WorkerConfig::Isolation::process ? "process" : "thread";
  };
  compare_text(what, "isolation", isolation_name(before.isolation),
               isolation_name(reloaded.isolation));
  compare_number(what, "processes", before.processes, reloaded.processes);
  compare_number(what, "soft_timeout", before.soft_timeout.count(), reloaded.soft_timeout.count());
  compare_number(what, "hard_timeout", before.hard_timeout.count(), reloaded.hard_timeout.count());
  compare_number(what, "startup_timeout", before.startup_timeout.count(),
                 reloaded.startup_timeout.count());
  compare_number(what, "memory_max", static_cast<long long>(before.memory_max),
                 static_cast<long long>(reloaded.memory_max));
  compare_number(what, "max_crashes", before.max_crashes, reloaded.max_crashes);
  compare_number(what, "metric_series_limit", before.metric_series_limit,
                 reloaded.metric_series_limit);
  return what;
}

}  // namespace

std::vector<WorkerChange> diff_workers(const std::vector<RunningWorker>& running,
                                       const std::vector<config::WorkerConfig>& reloaded,
                                       const std::map<std::string, std::string>& new_hashes) {
  std::vector<WorkerChange> changes;
  for (const auto& worker : reloaded) {
    WorkerChange change;
    change.worker = worker.name;
    const auto old = std::find_if(running.begin(), running.end(), [&](const RunningWorker& r) {
      return r.config->name == worker.name;
    });
    if (old == running.end()) {
      change.kind = WorkerChange::Kind::added;
    } else {
      const auto hash = new_hashes.find(worker.plugin);
      change.what =
          differences(*old, worker, hash != new_hashes.end() ? hash->second : std::string());
      change.kind =
          change.what.empty() ? WorkerChange::Kind::unchanged : WorkerChange::Kind::changed;
    }
    changes.push_back(std::move(change));
  }
  for (const auto& worker : running) {
    const auto kept = std::find_if(reloaded.begin(), reloaded.end(),
                                   [&](const auto& r) { return r.name == worker.config->name; });
    if (kept == reloaded.end())
      changes.push_back({worker.config->name, WorkerChange::Kind::removed, {}});
  }
  return changes;
}

std::string describe(const WorkerChange& change) {
  switch (change.kind) {
    case WorkerChange::Kind::unchanged:
      return "unchanged";
    case WorkerChange::Kind::removed:
      return "removed";
    case WorkerChange::Kind::added:
      return "added";
    case WorkerChange::Kind::changed:
      break;
  }
  std::string text = "changed:";
  for (std::size_t i = 0; i < change.what.size(); ++i)
    text += (i == 0 ? " " : ", ") + change.what[i];
  return text;
}

}  // namespace warren::runtime
