// See optional_library.h.
#include "system_library/optional_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace warren::system_library {

OptionalLibrary::OptionalLibrary(const char* soname, const std::string& needed_by,
                                 const std::string& package)
    : soname_(soname), handle_(::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    throw std::runtime_error(
        needed_by + " needs " + soname + " (Debian package " + package +
        "), which cannot be loaded: " + (why == nullptr ? "unknown error" : why));
  }
}

void* OptionalLibrary::symbol(const char* name, const std::string& too_old) const {
  void* address = ::dlsym(handle_, name);
  if (address == nullptr)
    throw std::runtime_error(std::string(soname_) + " has no " + name + ": " + too_old);
  return address;
}

}  // namespace warren::system_library
