// The limits a worker process puts on itself before it loads the plugin (WorkerArguments):
// memory_max as RLIMIT_DATA, core dumps off unless asked for, and an allocation that fails made
// fatal and named (exit kExitOutOfMemory, "oom" to the host) instead of a std::bad_alloc thrown
// into the plugin.
//
// RLIMIT_DATA, not RLIMIT_AS: glibc reserves 64 MiB of address space per thread arena (and
// sanitizers far more), so an address-space limit fails allocations long before the memory is
// used. RLIMIT_DATA counts private writable mappings (Linux >= 4.7): the heap, mmap'd malloc
// chunks, thread stacks. It does not count the page cache or shared memory, and a child past the
// system's memory is still the kernel OOM killer's (SIGKILL: "killed").
// The complete answer, cgroup v2, is the host's when it has a delegated cgroup
// (isolation/worker_cgroups.h): it puts the child in a leaf with memory.max and passes no
// --memory-max, so no RLIMIT_DATA is set here then.
#pragma once

#include <string>

#include "isolation/worker_arguments.h"

namespace warren::isolation {

// Applies ARGUMENTS' limits to this process; an empty string, or why the kernel refused.
std::string apply_resource_limits(const WorkerArguments& arguments);

}  // namespace warren::isolation
