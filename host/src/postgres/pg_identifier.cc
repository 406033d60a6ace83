// See pg_identifier.h.
#include "postgres/pg_identifier.h"

namespace warren::postgres {

std::string quote_identifier(std::string_view name) {
  std::string quoted = "\"";
  for (const char c : name) {
    if (c == '"')
      quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

}  // namespace warren::postgres
