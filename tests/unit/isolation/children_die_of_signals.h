// Sanitizer builds catch SIGSEGV in every process they run, print a report and exit 1; the
// children these tests start must die of the signal itself, as they do in production. Appended
// to the sanitizers' options in this process's environment, which children inherit (this
// process read its own options at start: they are unchanged for it).
#pragma once

#include <cstdlib>
#include <string>

namespace warren::isolation {

inline void let_children_die_of_signals() {
  for (const char* variable : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* current = std::getenv(variable);
    std::string options = current != nullptr && *current != '\0' ? std::string(current) + ":" : "";
    ::setenv(variable, (options + "handle_segv=0").c_str(), 1);
  }
}

}  // namespace warren::isolation
