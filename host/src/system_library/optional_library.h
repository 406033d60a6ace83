// A system library that only some hosts use, loaded with dlopen on first use rather than linked
// into every warren process (issue 17: a mapped library costs resident memory whether or not it
// is called; libpq pulls in 3 MB of dependencies, SQLite maps 0.26 MB).
//
// Each user keeps its list of functions and looks them up by name once (postgres/libpq_api.h,
// queue/sqlite_api.h), with the signatures of the header it is compiled against: the sonames
// used are ABI-stable.
#pragma once

#include <string>

namespace warren::system_library {

class OptionalLibrary {
 public:
  // Opens `soname` (RTLD_NOW | RTLD_LOCAL: its symbols stay out of the plugins' way). Throws
  // std::runtime_error "<needed_by> needs <soname> (Debian package <package>), which cannot be
  // loaded: <the loader's reason>". Never unloaded.
  OptionalLibrary(const char* soname, const std::string& needed_by, const std::string& package);

  // The address of `name`. Throws std::runtime_error "<soname> has no <name>: <too_old>".
  void* symbol(const char* name, const std::string& too_old) const;

 private:
  const char* soname_;
  void* handle_;
};

}  // namespace warren::system_library

// For an X-macro list of a library's functions, LIST(X): a pointer member per function, typed by
// the header compiled against (`struct Api { LIST(WARREN_OPTIONAL_POINTER) };`), and the lookup
// of each (`LIST(WARREN_OPTIONAL_LOOKUP)`, where `api` is the struct being filled, `library` the
// OptionalLibrary and `too_old` what a missing function means).
#define WARREN_OPTIONAL_POINTER(function) decltype(&::function) function = nullptr;
#define WARREN_OPTIONAL_LOOKUP(function) \
  api.function = reinterpret_cast<decltype(api.function)>(library.symbol(#function, too_old));
