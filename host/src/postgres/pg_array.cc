// See pg_array.h.
#include "postgres/pg_array.h"

namespace warren::postgres {

void append_pg_array_element(std::string& out, std::string_view element) {
  out.push_back('"');
  for (char c : element) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

std::string pg_array_literal(const std::vector<std::string>& elements) {
  std::string out = "{";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    append_pg_array_element(out, elements[i]);
  }
  out.push_back('}');
  return out;
}

}  // namespace warren::postgres
