// Message headers as the queue tables store them: a JSON object of strings. Other programs write
// these rows too, so reading is lenient where it can be (numbers and booleans become their text)
// and says exactly what is wrong where it cannot (not JSON, not an object, a nested value).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "transport/message.h"

namespace warren::queue {

std::string headers_to_json(const transport::TextHeaders& headers);

// The headers, or nullopt with `why` set when the text is not a JSON object of scalars. An empty
// text is an empty object.
std::optional<transport::TextHeaders> headers_from_json(std::string_view json, std::string& why);

}  // namespace warren::queue
