#include "isolation/worker/resource_limits.h"

#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "isolation/worker_exit_codes.h"

namespace warren::isolation {

namespace {

// operator new could not get memory: say so (write(2) only: no allocation is possible now) and
// exit at once, without atexit handlers or destructors that might allocate in turn.
[[noreturn]] void out_of_memory() {
  constexpr char kMessage[] = "warren-worker: out of memory (memory_max reached)\n";
  ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  ::_exit(kExitOutOfMemory);
}

std::string set_limit(int resource, rlim_t value, const char* name) {
  rlimit limit{value, value};
  if (::setrlimit(resource, &limit) == 0)
    return "";
  return std::string("setrlimit(") + name + ", " + std::to_string(value) +
         "): " + ::strerror(errno);
}

}  // namespace

std::string apply_resource_limits(const WorkerArguments& arguments) {
  std::set_new_handler(out_of_memory);
  if (!arguments.core_dumps) {
    if (auto error = set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE"); !error.empty())
      return error;
  }
  if (arguments.memory_max > 0)
    return set_limit(RLIMIT_DATA, static_cast<rlim_t>(arguments.memory_max), "RLIMIT_DATA");
  return "";
}

}  // namespace warren::isolation
