// OrderEmail: settings at construction; per message parse, render, write once, count.
#include "order_email.h"

#include <stdexcept>
#include <string>

#include "confirmation_email.h"
#include "order_placed.h"

namespace livraria {
namespace {

// The spool named by the out_dir setting, or std::invalid_argument saying what to fix.
MailSpool open_spool(const warren::PluginContext& ctx) {
  const auto out_dir = ctx.setting("out_dir");
  if (!out_dir || out_dir->empty()) {
    throw std::invalid_argument(
        "order_email: setting 'out_dir' is required: the directory the confirmation e-mails are "
        "written to, e.g. out_dir = \"/var/spool/livraria/emails\" under [workers.settings]");
  }
  try {
    return MailSpool(*out_dir);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("order_email: ") + e.what());
  }
}

}  // namespace

OrderEmail::OrderEmail(warren::PluginContext& ctx)
    : spool_(open_spool(ctx)),
      emails_sent_(ctx.counter("emails_sent_total", "Order confirmation e-mails sent")) {
  ctx.log_info("order_email: writing confirmation e-mails to " + spool_.directory().string());
}

warren::Outcome OrderEmail::handle(const warren::Message& msg, warren::Context& ctx) {
  if (msg.routing_key() != kOrderPlacedRoutingKey) {
    return warren::Outcome::dead_letter("order_email handles only pedido.registrado, got '" +
                                        std::string(msg.routing_key()) +
                                        "': check the bindings of this worker's queue");
  }
  const OrderPlaced order = parse_order_placed(msg.body());  // PermanentError: dead-lettered
  const std::string file_name = order.event_id + ".eml";
  switch (spool_.write_once(file_name, render_confirmation_email(order))) {
    case MailSpool::Delivery::written:
      emails_sent_.inc();
      ctx.log_info("confirmation e-mail for order " + std::to_string(order.order_id) + " sent as " +
                   file_name);
      break;
    case MailSpool::Delivery::already_present:
      ctx.log_info("confirmation e-mail for order " + std::to_string(order.order_id) +
                   " already sent (event " + order.event_id + "): duplicate acked");
      break;
  }
  return warren::Outcome::ack();
}

}  // namespace livraria
