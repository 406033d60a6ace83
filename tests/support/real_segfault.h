// A real segmentation fault, as a plugin's bad write would cause: a store to a page mapped
// read-only (SIGSEGV with si_code SEGV_ACCERR, raised by the kernel). Not a null pointer, so UBSan
// has nothing to report first. Under ASan, its own SEGV handler (if installed) reports the fault
// and exits 1; run with ASAN_OPTIONS=handle_segv=0 (or the default disposition) to die of the
// signal itself.
#pragma once

#include <sys/mman.h>

#include <cstdlib>

namespace warren::test_support {

[[noreturn]] inline void real_segfault() {
  void* page = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED)
    std::abort();
  *static_cast<volatile int*>(page) = 1;
  std::abort();  // not reached
}

}  // namespace warren::test_support
