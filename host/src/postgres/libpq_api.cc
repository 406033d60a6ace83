// See libpq_api.h.
#include "postgres/libpq_api.h"

namespace warren::postgres {
namespace {

LibpqApi load() {
  const system_library::OptionalLibrary library("libpq.so.5", "PostgreSQL support", "libpq5");
  const std::string too_old = "too old a libpq (Warren needs PostgreSQL 9.1's client or later)";
  LibpqApi api;
  WARREN_LIBPQ_FUNCTIONS(WARREN_OPTIONAL_LOOKUP)
  return api;
}

}  // namespace

const LibpqApi& libpq() {
  static const LibpqApi api = load();  // thread-safe; a throw leaves it to be tried again
  return api;
}

}  // namespace warren::postgres
