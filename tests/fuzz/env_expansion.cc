// Fuzz target: ${NAME}, ${NAME:-default} and $$ in worker settings (config/env_expansion.h).
// Any text expands or gives an error; and a text whose every '$' is doubled expands back to
// itself (the escape round trip).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>

#include "config/env_expansion.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)warren::config::expand_environment(text, warren::fuzz::fixed_environment);

  std::string escaped;
  for (const char c : text) {
    escaped.push_back(c);
    if (c == '$')
      escaped.push_back('$');
  }
  const auto expanded =
      warren::config::expand_environment(escaped, warren::fuzz::fixed_environment);
  const std::string* back = std::get_if<std::string>(&expanded);
  if (back == nullptr || *back != text)
    warren::fuzz::require(false);  // $$ must always give back a literal '$'
  return 0;
}
