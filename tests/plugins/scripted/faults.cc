#include "faults.h"

#include <cstdlib>
#include <list>
#include <memory>
#include <stdexcept>
#include <string>

#include "real_segfault.h"

namespace warren::test_plugins {

void hog_memory() {
  constexpr std::size_t kChunk = 4 << 20;  // above malloc's mmap threshold: each is a mapping
  constexpr std::size_t kPage = 4096;
  std::list<std::unique_ptr<char[]>> held;
  while (true) {
    // operator new, not malloc: a failure is std::bad_alloc or the process's new_handler.
    auto chunk = std::make_unique_for_overwrite<char[]>(kChunk);
    // Touched, so the memory is really used and not only reserved.
    for (std::size_t offset = 0; offset < kChunk; offset += kPage)
      static_cast<volatile char*>(chunk.get())[offset] = 1;
    held.push_back(std::move(chunk));
  }
}

void spin_forever() {
  volatile std::uint64_t counter = 0;  // volatile: the loop has an effect, so it stays
  while (true)
    counter = counter + 1;
}

InitFault parse_init_fault(std::string_view text) {
  if (text == "segfault")
    return InitFault::segfault;
  if (text == "abort")
    return InitFault::abort;
  if (text == "throw")
    return InitFault::throw_std;
  throw std::invalid_argument(
      "scripted: setting 'init_action' must be segfault, abort or throw, got '" +
      std::string(text) + "'");
}

void fail_init(InitFault fault) {
  switch (fault) {
    case InitFault::segfault:
      test_support::real_segfault();
    case InitFault::abort:
      std::abort();
    case InitFault::throw_std:
      break;
  }
  throw std::runtime_error("scripted: init_action = throw");
}

CrashSchedule::CrashSchedule(std::optional<std::uint32_t> every) : every_(every.value_or(0)) {
  if (every && *every == 0)
    throw std::invalid_argument("scripted: setting 'crash_every' must be at least 1");
}

bool CrashSchedule::crash_now() noexcept {
  const std::uint64_t call = ++calls_;
  return every_ != 0 && call % every_ == 0;
}

}  // namespace warren::test_plugins
