// PostgreSQL array literals ('{"a","b"}') for passing a batch of values as ONE text parameter of
// a statement (`WHERE id = ANY($1::uuid[])`, `unnest($1::text[], ...)`): one round trip per
// batch instead of one per row.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warren::postgres {

// Every element double-quoted, with " and \ escaped: safe for any text, including empty strings,
// commas, braces, spaces and the word NULL.
std::string pg_array_literal(const std::vector<std::string>& elements);

// Appends one quoted element (used by pg_array_literal; exposed for callers that build arrays of
// numbers or booleans from their own values).
void append_pg_array_element(std::string& out, std::string_view element);

}  // namespace warren::postgres
