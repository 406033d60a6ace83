// See libpq_api.h.
#include "postgres/libpq_api.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace warren::postgres {
namespace {

constexpr const char* kLibpqSoname = "libpq.so.5";

LibpqApi load() {
  // RTLD_LOCAL: its symbols (and its dependencies') stay out of the plugins' way.
  void* library = ::dlopen(kLibpqSoname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    throw std::runtime_error(std::string("PostgreSQL support needs ") + kLibpqSoname +
                             " (Debian package libpq5), which cannot be loaded: " +
                             (why == nullptr ? "unknown error" : why));
  }
  LibpqApi api;
#define WARREN_LIBPQ_LOOKUP(name)                                             \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(library, #name));   \
  if (api.name == nullptr)                                                    \
    throw std::runtime_error(std::string(kLibpqSoname) + " has no " + #name + \
                             ": too old a libpq (Warren needs PostgreSQL 9.1's client or later)");
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
