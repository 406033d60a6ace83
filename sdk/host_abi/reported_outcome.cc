// read_outcome: a plugin's warren_outcome, of any 1.x minor, as one checked ReportedOutcome.
#include "warren/host_abi/reported_outcome.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"

namespace warren::host_abi {
namespace {

std::string bounded(warren_str text) {
  const std::string_view view = detail::from_abi(text);
  return std::string(view.substr(0, std::min(view.size(), kMaxReportedText)));
}

HandlerError error_of(std::uint32_t error_kind) noexcept {
  switch (error_kind) {
    case WARREN_ERROR_STD_EXCEPTION:
      return HandlerError::std_exception;
    case WARREN_ERROR_PERMANENT:
      return HandlerError::permanent;
    case WARREN_ERROR_UNKNOWN:
      return HandlerError::unknown;
    default:  // NONE, or a value no SDK sends: the handler did not throw
      return HandlerError::none;
  }
}

ReportedOutcome invalid(std::string why) {
  ReportedOutcome outcome;
  outcome.kind = ReportedOutcome::Kind::invalid;
  outcome.reason = std::move(why);
  return outcome;
}

}  // namespace

std::string demangle(std::string_view mangled) {
  if (mangled.empty())
    return {};
  const std::string name(mangled);
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> readable(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && readable ? std::string(readable.get()) : name;
}

ReportedOutcome read_outcome(const warren_outcome* raw) {
  if (raw == nullptr)
    return invalid("the plugin reported no outcome (null pointer)");
  if (raw->struct_size < detail::kOutcomeV1_0Size)
    return invalid("the plugin reported an outcome smaller than Warren ABI 1.0's");

  ReportedOutcome outcome;
  outcome.error = error_of(raw->error_kind);
  switch (raw->kind) {
    case WARREN_OUTCOME_ACK:
      outcome.kind = ReportedOutcome::Kind::ack;
      break;
    case WARREN_OUTCOME_RETRY:
      if (raw->delay_ms < -1)
        return invalid("the handler asked for a negative retry delay");
      outcome.kind = ReportedOutcome::Kind::retry;
      if (raw->delay_ms >= 0)
        outcome.delay = std::chrono::milliseconds(raw->delay_ms);
      break;
    case WARREN_OUTCOME_DEAD_LETTER:
      outcome.kind = ReportedOutcome::Kind::dead_letter;
      outcome.reason = bounded(raw->reason);
      break;
    case WARREN_OUTCOME_THREW:  // retried under the policy: no delay of its own
      outcome.kind = ReportedOutcome::Kind::retry;
      outcome.reason = bounded(raw->reason);
      if (outcome.error == HandlerError::none)
        outcome.error = HandlerError::unknown;
      break;
    case WARREN_OUTCOME_THREW_PERMANENT:  // ABI 1.0's encoding of a thrown PermanentError
      outcome.kind = ReportedOutcome::Kind::dead_letter;
      outcome.reason = bounded(raw->reason);
      outcome.error = HandlerError::permanent;
      break;
    default:
      return invalid("the handler returned an invalid outcome (kind " + std::to_string(raw->kind) +
                     ")");
  }
  if (outcome.threw())
    outcome.exception_type = demangle(bounded(raw->error_type));
  return outcome;
}

}  // namespace warren::host_abi
