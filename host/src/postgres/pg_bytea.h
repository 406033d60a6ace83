// Bytes as a text parameter: hex digits, for `decode($n, 'hex')` in a statement. libpq's text
// parameters cannot carry a zero byte; hex doubles the size, which for queue bodies is cheaper
// than a second, binary-format path through PgConnection.
#pragma once

#include <string>
#include <string_view>

namespace warren::postgres {

std::string bytea_hex(std::string_view bytes);

}  // namespace warren::postgres
