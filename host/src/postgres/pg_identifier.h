// A name (a schema, a table) written into SQL text where a parameter cannot stand: SET
// search_path, CREATE SCHEMA. Quoted as PostgreSQL's quote_ident does, always.
#pragma once

#include <string>
#include <string_view>

namespace warren::postgres {

// "name", with every " doubled: safe for any name, and exact (no case folding).
std::string quote_identifier(std::string_view name);

}  // namespace warren::postgres
