// The text of the order confirmation e-mail (RFC 5322 headers, plain-text body).
#pragma once

#include <string>

#include "order_placed.h"

namespace livraria {

// A real sender would look the customer's address up by customer_id; the event does not carry it,
// so the e-mail names the customer in an X- header for the relay to resolve.
std::string render_confirmation_email(const OrderPlaced& order);

}  // namespace livraria
