// See libpq_api.h.
#include "postgres/libpq_api.h"

#include "system_library/optional_library.h"

namespace warren::postgres {
namespace {

LibpqApi load() {
  const system_library::OptionalLibrary library("libpq.so.5", "PostgreSQL support", "libpq5");
  const std::string too_old = "too old a libpq (Warren needs PostgreSQL 9.1's client or later)";
  LibpqApi api;
#define WARREN_LIBPQ_LOOKUP(name) \
  api.name = reinterpret_cast<decltype(api.name)>(library.symbol(#name, too_old));
  WARREN_LIBPQ_FUNCTIONS(WARREN_LIBPQ_LOOKUP)
#undef WARREN_LIBPQ_LOOKUP
  return api;
}

}  // namespace

const LibpqApi& libpq() {
  static const LibpqApi api = load();  // thread-safe; a throw leaves it to be tried again
  return api;
}

}  // namespace warren::postgres
