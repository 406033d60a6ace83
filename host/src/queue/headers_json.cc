// See headers_json.h.
#include "queue/headers_json.h"

#include <nlohmann/json.hpp>

namespace warren::queue {

std::string headers_to_json(const transport::TextHeaders& headers) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [name, value] : headers)
    object[name] = value;
  // Invalid UTF-8 in a header (an AMQP header can hold any bytes) is replaced, not thrown.
  return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::optional<transport::TextHeaders> headers_from_json(std::string_view json, std::string& why) {
  transport::TextHeaders headers;
  // The table's default, and what most producers' INSERTs leave: no parser needed.
  if (json.empty() || json == "{}")
    return headers;
  const auto parsed = nlohmann::ordered_json::parse(json, nullptr, false);
  if (parsed.is_discarded()) {
    why = "headers are not valid JSON";
    return std::nullopt;
  }
  if (!parsed.is_object()) {
    why = std::string("headers must be a JSON object of strings, got a JSON ") + parsed.type_name();
    return std::nullopt;
  }
  for (const auto& [name, value] : parsed.items()) {
    if (value.is_string()) {
      headers.emplace_back(name, value.get<std::string>());
    } else if (value.is_number() || value.is_boolean()) {
      headers.emplace_back(name, value.dump());
    } else if (value.is_null()) {
      headers.emplace_back(name, "");
    } else {
      why = "header '" + name + "' is a JSON " + value.type_name() +
            "; headers must be strings, numbers or booleans";
      return std::nullopt;
    }
  }
  return headers;
}

}  // namespace warren::queue
