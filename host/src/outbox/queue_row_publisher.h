// RowPublisher for a PostgreSQL outbox whose database also holds the PostgreSQL table queue
// ([broker] transport = "postgres"): each message is routed into warren_queue by the queue's own
// SQL function, warren_publish(), ON THE LANE'S CONNECTION, inside the transaction that claimed
// the outbox rows and that marks them sent. Exactly once, no broker and no confirm: a crash
// before the commit leaves the rows pending and the queue rows unwritten; after it both exist.
//
// Each message gets a savepoint, so that one the function refuses (an exchange the queue does not
// know) fails alone and the batch goes on; a message no queue is bound for fails too (the relay's
// retry schedule then makes the row dead after max_attempts, with the reason). Used with a
// single relay lane, whose thread is the only caller between claim() and complete().
#pragma once

#include <string>

#include "outbox/pg_outbox_store.h"
#include "outbox/row_publisher.h"

namespace warren::outbox {

class QueueRowPublisher final : public RowPublisher {
 public:
  // `store` is the lane's, and outlives this; `schema` is the queue's ([broker.postgres] schema).
  QueueRowPublisher(PgOutboxStore& store, std::string schema)
      : store_(store), schema_(std::move(schema)) {}

  bool ready() const override { return true; }
  std::vector<PublishOutcome> publish_all(
      const std::vector<transport::OutboundMessage>& messages) override;

 private:
  PgOutboxStore& store_;
  const std::string schema_;
};

}  // namespace warren::outbox
