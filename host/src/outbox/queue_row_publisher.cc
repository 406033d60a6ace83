// See queue_row_publisher.h.
#include "outbox/queue_row_publisher.h"

#include "postgres/pg_bytea.h"
#include "queue/headers_json.h"
#include "transport/routing.h"

namespace warren::outbox {
namespace {}  // namespace

std::vector<PublishOutcome> QueueRowPublisher::publish_all(
    const std::vector<transport::OutboundMessage>& messages) {
  std::vector<PublishOutcome> outcomes;
  outcomes.reserve(messages.size());
  postgres::PgConnection& db = store_.batch_connection();
  const std::string sql =
      "SELECT " + schema_ + ".warren_publish($1, $2, decode($3, 'hex'), $4::jsonb, $5, $6)";
  for (const auto& message : messages) {
    db.exec("SAVEPOINT warren_outbox_row");
    try {
      const postgres::PgResult reached = db.exec_params(
          sql, {message.exchange, message.routing_key, postgres::bytea_hex(message.body),
                queue::headers_to_json(message.headers), message.message_id, message.content_type});
      db.exec("RELEASE SAVEPOINT warren_outbox_row");
      if (reached.rows() == 1 && reached.text(0, 0) == "0") {
        outcomes.push_back(PublishOutcome::failed(
            transport::unroutable_reason(message.exchange, message.routing_key)));
      } else {
        outcomes.push_back(PublishOutcome::confirmed());
      }
    } catch (const postgres::PgError& e) {
      if (e.connection_lost() || !db.ok())
        throw;  // the whole batch is lost with its transaction: the lane retries it
      db.exec("ROLLBACK TO SAVEPOINT warren_outbox_row");
      outcomes.push_back(PublishOutcome::failed(e.what()));
    }
  }
  return outcomes;
}

}  // namespace warren::outbox
