// The one class a plugin author implements.
#pragma once

#include "warren/context.h"
#include "warren/message.h"
#include "warren/outcome.h"

namespace warren {

// One instance per worker, constructed at start with the worker's PluginContext& (like a
// BackgroundService) and destroyed at stop.
//
// Threading: up to `concurrency` calls of handle() run at once, on this one instance, on threads
// the host chooses (the worker's own; for a quick handler also the thread that read the
// message). Guard shared mutable state, or keep per-message state in ctx.scope().
//
// Failure: return Outcome::retry()/dead_letter(), or throw. Anything thrown means "retry under
// the worker's policy"; warren::PermanentError means "dead-letter now". Nothing a handler throws
// can reach or stop the host.
class Handler {
 public:
  virtual ~Handler() = default;
  virtual Outcome handle(const Message& msg, Context& ctx) = 0;
};

}  // namespace warren
