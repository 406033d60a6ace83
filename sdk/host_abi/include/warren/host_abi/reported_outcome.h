// What a handler reported for one message, read from its warren_outcome and checked once, here:
// the host's runtime and the test harness act on a ReportedOutcome, never on the raw struct, so
// they cannot read a plugin's report differently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "warren/abi.h"

namespace warren::host_abi {

// How the handler reached its outcome: by returning it, or by throwing.
enum class HandlerError : std::uint32_t {
  none = WARREN_ERROR_NONE,                    // it returned an Outcome
  std_exception = WARREN_ERROR_STD_EXCEPTION,  // it threw a std::exception: retried
  permanent = WARREN_ERROR_PERMANENT,          // it threw warren::PermanentError: dead-lettered
  unknown = WARREN_ERROR_UNKNOWN,              // it threw something else: retried
};

struct ReportedOutcome {
  // invalid: the plugin broke the contract (no report, a struct too small, an unknown kind, a
  // negative delay); the host treats it as a failed attempt, the harness as a broken plugin.
  enum class Kind { ack, retry, dead_letter, invalid };

  Kind kind = Kind::invalid;
  // retry: the delay the handler asked for; std::nullopt means the worker's policy decides.
  std::optional<std::chrono::milliseconds> delay;
  // dead_letter: the reason; thrown: the exception's what(); invalid: what is wrong.
  std::string reason;
  HandlerError error = HandlerError::none;
  // Thrown std::exception: its demangled type, e.g. "warren::PermanentError".
  std::string exception_type;

  bool threw() const noexcept { return error != HandlerError::none; }
};

// Longest reason or type name kept from a plugin: a wild size is a bug in the plugin, not a
// reason to copy gigabytes.
inline constexpr std::size_t kMaxReportedText = 64 * 1024;

// Reads a plugin's report (null or shorter than ABI 1.0: invalid). Both encodings of a thrown
// PermanentError, 1.0's THREW_PERMANENT and 1.1's DEAD_LETTER with error_kind PERMANENT, read
// as kind dead_letter with error permanent. Throws only std::bad_alloc.
ReportedOutcome read_outcome(const warren_outcome* outcome);

// "std::runtime_error" from a mangled name; the name itself when it cannot be demangled.
std::string demangle(std::string_view mangled);

}  // namespace warren::host_abi
