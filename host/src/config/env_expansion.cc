// See env_expansion.h.
#include "config/env_expansion.h"

namespace warren::config {

std::variant<std::string, ExpansionError> expand_environment(
    std::string_view text, const std::function<const char*(const char*)>& lookup) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out.push_back(text[i]);
      continue;
    }
    if (text[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    if (text[i + 1] != '{') {
      out.push_back('$');
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      return ExpansionError{"unterminated ${ at offset " + std::to_string(i)};
    }
    const std::string_view reference = text.substr(i + 2, close - i - 2);
    const std::size_t dash = reference.find(":-");
    const std::string name(reference.substr(0, dash));
    if (name.empty())
      return ExpansionError{"empty variable name in ${}"};
    const char* value = lookup(name.c_str());
    if (value != nullptr && *value != '\0') {
      out += value;
    } else if (dash != std::string_view::npos) {
      out += reference.substr(dash + 2);
    } else {
      return ExpansionError{"environment variable " + name + " is not set (write ${" + name +
                            ":-default} to give a default)"};
    }
    i = close;
  }
  return out;
}

}  // namespace warren::config
