// A worker's dead letters as `warren dlq` works on them, whatever keeps them: a dead-letter queue
// on RabbitMQ (broker/rabbitmq_dead_letters.h), the dead rows of the worker's queue in a SQLite
// file (queue/sqlite_dead_rows.h). The verbs (list, peek, replay, purge) are written once, in the
// command line, over this interface; each transport says where a letter came from, why it died,
// and how it is put back to work or deleted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transport/message.h"

namespace warren::transport {

struct DeadLetter {
  std::uint64_t handle = 0;  // the implementation's own (a delivery tag, a row id)
  InboundMessage message;
  std::string error;              // why it died; "(no reason recorded)" when nothing says
  std::string original_exchange;  // where it was first published
  std::string original_routing_key;
};

class DeadLetters {
 public:
  virtual ~DeadLetters() = default;

  // The queue that holds them, as messages name it.
  virtual const std::string& queue() const = 0;
  // What that queue holds, every worker's letters included, for `list`: "12 message(s) in the
  // queue".
  virtual std::string census() const = 0;

  // The next dead letter, oldest first, or nullopt once every letter there was at opening has
  // been read. Reading may take the letter out of the queue (RabbitMQ holds it unacked): every
  // letter read must be settled, by replay(), remove() or keep(), or it goes back as the
  // transport sees fit when this is destroyed (RabbitMQ: returned to the queue, which a quorum
  // queue counts as a delivery).
  virtual std::optional<DeadLetter> next() = 0;
  // Leaves a letter that was read dead and in the queue, as it was. RabbitMQ puts a confirmed
  // copy at the tail of the queue and then acks the one read, so that browsing never spends a
  // delivery (broker/rabbitmq_dead_letters.h); throws PublishError when the copy was not
  // confirmed (the letter read then goes back to the queue at close).
  virtual void keep(const DeadLetter& letter) = 0;

  // True when replay() puts a letter back into the worker's own queue only (rather than into
  // every queue bound to its original exchange and routing key).
  virtual bool replays_into_worker_queue_only() const = 0;
  // Puts `letter` back to work as `copy` (its body, content type, id, wire properties and
  // headers, the failure headers dropped; exchange and routing key the original ones, which the
  // implementation replaces when it replays into the worker's queue only), then removes the dead
  // letter.
  // Throws PublishError when it could not: the letter stays dead. Returns false, having changed
  // nothing, when the letter was no longer there (replayed or purged by someone else meanwhile).
  virtual bool replay(const DeadLetter& letter, const OutboundMessage& copy) = 0;
  // Deletes the letters for good; returns how many of them were still there to delete.
  virtual std::size_t remove(const std::vector<DeadLetter>& letters) = 0;
};

}  // namespace warren::transport
