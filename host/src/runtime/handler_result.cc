// See handler_result.h.
#include "runtime/handler_result.h"

#include <string>

namespace warren::runtime {
namespace {

// "<exception type>: <what()>", the reason a thrown exception leaves in logs and dead letters;
// `unnamed` stands for the type when the plugin could not name it.
std::string thrown_reason(const host_abi::ReportedOutcome& outcome, const char* unnamed) {
  return (outcome.exception_type.empty() ? std::string(unnamed) : outcome.exception_type) + ": " +
         outcome.reason;
}

}  // namespace

HandlerResult handler_result(const host_abi::ReportedOutcome& outcome) {
  HandlerResult result;
  result.reason = outcome.reason;
  switch (outcome.kind) {
    case host_abi::ReportedOutcome::Kind::ack:
      result.kind = HandlerResult::Kind::ack;
      break;
    case host_abi::ReportedOutcome::Kind::retry:
      result.kind = outcome.threw() ? HandlerResult::Kind::failed : HandlerResult::Kind::retry;
      if (outcome.threw())
        result.reason = thrown_reason(outcome, "unknown exception");
      else
        result.delay = outcome.delay;
      break;
    case host_abi::ReportedOutcome::Kind::dead_letter:
      result.kind = outcome.threw() ? HandlerResult::Kind::failed_permanent
                                    : HandlerResult::Kind::dead_letter;
      if (outcome.threw())
        result.reason = thrown_reason(outcome, "warren::PermanentError");
      else if (result.reason.empty())
        result.reason = "dead-lettered by the handler";
      break;
    case host_abi::ReportedOutcome::Kind::invalid:
      result.kind = HandlerResult::Kind::invalid;
      break;
  }
  return result;
}

}  // namespace warren::runtime
