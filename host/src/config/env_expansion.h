// `${NAME}` and `${NAME:-default}` in worker settings, so one config serves several machines
// (systemd's STATE_DIRECTORY, a developer's scratch dir). `$$` is a literal `$`.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <variant>

namespace warren::config {

struct ExpansionError {
  std::string message;
};

// The text with every reference replaced, or why it cannot be (an unset variable without a
// default, an unterminated `${`).
std::variant<std::string, ExpansionError> expand_environment(
    std::string_view text, const std::function<const char*(const char*)>& lookup);

}  // namespace warren::config
