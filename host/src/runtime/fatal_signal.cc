// See fatal_signal.h.
#include "runtime/fatal_signal.h"

#include <signal.h>
#include <string.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <string>

namespace warren::runtime {
namespace {

constexpr std::array<int, 5> kFatalSignals = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};

std::atomic<std::int32_t*> g_word{nullptr};
std::atomic<bool> g_installed{false};
struct sigaction g_previous[NSIG];

extern "C" void on_fatal_signal(int signal, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  if (std::int32_t* word = g_word.load(std::memory_order_relaxed))
    std::atomic_ref<std::int32_t>(*word).store(signal, std::memory_order_relaxed);
  ::sigaction(signal, &g_previous[signal], nullptr);
  // A fault (si_code > 0, from the kernel) recurs when the instruction runs again, now under the
  // previous disposition with its own siginfo. A signal that was sent (abort(), kill) must be
  // sent again: pending while this handler runs, delivered as it returns.
  if (info == nullptr || info->si_code <= 0 || signal == SIGABRT)
    ::raise(signal);
  errno = saved_errno;
}

}  // namespace

void record_fatal_signals_at(std::int32_t* word) noexcept {
  g_word.store(word, std::memory_order_relaxed);
  if (g_installed.exchange(true))
    return;
  for (const int signal : kFatalSignals) {
    struct sigaction action {};
    action.sa_sigaction = &on_fatal_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, &g_previous[signal]);
  }
}

void stop_recording_fatal_signals_at(std::int32_t* word) noexcept {
  g_word.compare_exchange_strong(word, nullptr);
}

std::string signal_name(int signal) {
  if (signal == 0)
    return "unknown";
  if (const char* abbreviation = ::sigabbrev_np(signal))
    return std::string("SIG") + abbreviation;
  return "signal " + std::to_string(signal);
}

}  // namespace warren::runtime
