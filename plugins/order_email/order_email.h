// order_email: sends the order confirmation e-mail when the Livraria registers an order.
//
// Consumes `pedido.registrado` (bind the worker's queue to livraria.eventos with that key) and
// "sends" each e-mail by writing it to <out_dir>/<event_id>.eml, where a mail relay picks it up.
//
//   [[workers]]
//   name = "emails"
//   plugin = "order_email"
//   [workers.settings]
//   out_dir = "/var/spool/livraria/emails"   # required, must exist and be writable
//
// Delivery is at least once, so the same event can arrive twice (an outbox relay that republished,
// a worker that died before its ack). The e-mail is idempotent by event_id: the file appears under
// its final name only when complete (written aside, then linked into place), so a crash never
// leaves half an e-mail counted as sent, and a duplicate finds the file and is acked without
// sending again. A body that can never be valid is dead-lettered at once (warren::PermanentError).
//
// Metrics: warren_plugin_emails_sent_total (duplicates are not counted).
#pragma once

#include <warren/sdk.h>

#include "mail_spool.h"

namespace livraria {

class OrderEmail final : public warren::Handler {
 public:
  // Throws std::invalid_argument when out_dir is missing, not a directory or not writable.
  explicit OrderEmail(warren::PluginContext& ctx);

  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;

 private:
  MailSpool spool_;
  warren::Counter emails_sent_;
};

}  // namespace livraria
