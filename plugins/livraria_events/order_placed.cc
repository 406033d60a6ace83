// Parsing of `pedido.registrado` with nlohmann-json, with errors that name the offending field.
#include "order_placed.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "warren/errors.h"

namespace livraria {
namespace {

using nlohmann::json;

[[noreturn]] void reject(const std::string& why) {
  throw warren::PermanentError("pedido.registrado: " + why);
}

// A value quoted for an error message, cut short so a huge body does not flood the logs.
std::string shown(const json& value) {
  std::string text = value.dump();
  constexpr std::size_t kMax = 80;
  if (text.size() > kMax)
    text = text.substr(0, kMax) + "...";
  return text;
}

const json& required(const json& object, const std::string& where, const char* key) {
  const auto it = object.find(key);
  if (it == object.end())
    reject("field '" + where + key + "' is missing");
  return *it;
}

std::int64_t integer_at(const json& object, const std::string& where, const char* key) {
  const json& value = required(object, where, key);
  if (!value.is_number_integer()) {
    reject("field '" + where + key + "' must be an integer, got " + shown(value));
  }
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    reject("field '" + where + key + "' is out of range, got " + shown(value));
  }
  return value.get<std::int64_t>();
}

double number_at(const json& object, const std::string& where, const char* key) {
  const json& value = required(object, where, key);
  if (!value.is_number())
    reject("field '" + where + key + "' must be a number, got " + shown(value));
  return value.get<double>();
}

std::string text_at(const json& value, const std::string& name) {
  if (!value.is_string())
    reject("field '" + name + "' must be a string, got " + shown(value));
  std::string text = value.get<std::string>();
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f)
      reject("field '" + name + "' contains control characters");
  }
  return text;
}

bool is_uuid(std::string_view text) {
  if (text.size() != 36)
    return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-')
        return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

OrderPlaced parse_order_placed(std::string_view json_body) {
  json body;
  try {
    body = json::parse(json_body);
  } catch (const json::parse_error& e) {
    reject(std::string("body is not valid JSON: ") + e.what());
  }
  if (!body.is_object())
    reject("body must be a JSON object, got " + shown(body));

  OrderPlaced order;
  // The version first: the other fields of a newer major may mean something else.
  if (const auto it = body.find("version"); it != body.end() && !it->is_null()) {
    order.version = integer_at(body, "", "version");
    if (order.version < 1)
      reject("field 'version' must be at least 1, got " + shown(*it));
    if (order.version > kOrderPlacedVersion) {
      reject("version " + std::to_string(order.version) +
             " of the contract is newer than this consumer reads (version " +
             std::to_string(kOrderPlacedVersion) +
             "); deploy a consumer that reads it, then replay this dead letter");
    }
  }
  order.event_id = text_at(required(body, "", "event_id"), "event_id");
  if (!is_uuid(order.event_id)) {
    reject("field 'event_id' must be a UUID like 3f0c8a4e-5b7d-4e34-9a0b-1c2d3e4f5a6b, got " +
           shown(json(order.event_id)));
  }
  order.order_id = integer_at(body, "", "order_id");
  order.customer_id = text_at(required(body, "", "customer_id"), "customer_id");
  if (order.customer_id.empty())
    reject("field 'customer_id' is empty");
  order.total = number_at(body, "", "total");
  if (order.total < 0)
    reject("field 'total' is negative: " + shown(body.at("total")));

  const json& items = required(body, "", "items");
  if (!items.is_array())
    reject("field 'items' must be an array, got " + shown(items));
  order.items.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = "items[" + std::to_string(i) + "].";
    const json& item = items[i];
    if (!item.is_object())
      reject("'items[" + std::to_string(i) + "]' must be an object");
    SoldItem sold;
    sold.product_id = integer_at(item, where, "product_id");
    sold.quantity = integer_at(item, where, "quantity");
    if (sold.quantity < 1)
      reject("field '" + where + "quantity' must be at least 1");
    sold.unit_price = number_at(item, where, "unit_price");
    if (sold.unit_price < 0)
      reject("field '" + where + "unit_price' is negative");
    order.items.push_back(sold);
  }

  if (const auto it = body.find("occurred_at"); it != body.end() && !it->is_null()) {
    order.occurred_at = text_at(*it, "occurred_at");
  }
  if (const auto it = body.find("sales_channel"); it != body.end() && !it->is_null()) {
    order.sales_channel = text_at(*it, "sales_channel");
    if (order.sales_channel.empty())
      order.sales_channel = kUnknownSalesChannel;
  }
  return order;
}

}  // namespace livraria
