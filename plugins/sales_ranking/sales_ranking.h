// sales_ranking: the Livraria's best sellers, counted from the orders as they are registered.
//
// Consumes `pedido.*` (bind the worker's queue to livraria.eventos with that pattern). Only
// `pedido.registrado` changes the ranking; other pedido events are acked and logged. Each
// applied event is saved at once to a JSON state file (whole file, written aside then renamed
// into place), which is loaded again at start.
//
//   [[workers]]
//   name = "ranking"
//   plugin = "sales_ranking"
//   [workers.settings]
//   state_file = "/var/lib/livraria/ranking.json"  # required; its directory must exist
//   log_every = 10    # log the best sellers every N counted events (default 10)
//   log_top = 5       # how many best sellers that log line shows (default 5)
//
// Idempotent by event_id: the ids of counted events are kept (and saved) with the counts and a
// duplicate is acked without counting it again. Counting and saving happen under one lock, so
// handle() may run concurrently; when the save fails the count is undone and the message retried.
// Every id is kept forever and the whole file is rewritten per event: fine for an example, while a
// real deployment would keep both in a database, updated in one transaction.
//
// Metrics: warren_plugin_ranking_events_counted_total, warren_plugin_ranking_duplicates_total.
#pragma once

#include <warren/sdk.h>

#include <cstddef>
#include <mutex>

#include "ranking.h"
#include "state_file.h"

namespace livraria {

class SalesRanking final : public warren::Handler {
 public:
  // Throws std::invalid_argument when state_file is missing, unreadable, not a ranking, or cannot
  // be written, or log_every / log_top are not positive integers.
  explicit SalesRanking(warren::PluginContext& ctx);

  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;

 private:
  std::string describe_top() const;  // call with mutex_ held

  warren::PluginContext& plugin_;
  StateFile state_file_;
  std::size_t log_every_;
  std::size_t log_top_;
  warren::Counter counted_;
  warren::Counter duplicates_;

  mutable std::mutex mutex_;  // guards ranking_ and the state file
  Ranking ranking_;
};

}  // namespace livraria
