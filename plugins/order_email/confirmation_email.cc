// Renders the confirmation e-mail of one order.
#include "confirmation_email.h"

#include <cstdio>
#include <string>

namespace livraria {
namespace {

std::string money(double amount) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2f", amount);
  return text;
}

}  // namespace

std::string render_confirmation_email(const OrderPlaced& order) {
  const std::string order_id = std::to_string(order.order_id);
  std::string email;
  email += "Message-ID: <" + order.event_id + "@livraria.example>\n";
  email += "From: Livraria <pedidos@livraria.example>\n";
  email += "X-Livraria-Customer-Id: " + order.customer_id + "\n";
  email += "X-Livraria-Event-Id: " + order.event_id + "\n";
  email += "X-Livraria-Sales-Channel: " + order.sales_channel + "\n";
  email += "Subject: Order " + order_id + " confirmed\n";
  email += "MIME-Version: 1.0\n";
  email += "Content-Type: text/plain; charset=utf-8\n";
  email += "\n";
  email += "Hello,\n\nwe have received your order " + order_id;
  if (order.occurred_at)
    email += " (placed at " + *order.occurred_at + ")";
  email += ":\n\n";
  for (const SoldItem& item : order.items) {
    email += "  " + std::to_string(item.quantity) + " x product " +
             std::to_string(item.product_id) + " at " + money(item.unit_price) + "\n";
  }
  email += "\nTotal: " + money(order.total) + "\n\nThank you for shopping at the Livraria.\n";
  return email;
}

}  // namespace livraria
