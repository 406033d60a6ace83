// One delivery on its way through a worker's handler (dispatcher.h): what Dispatcher::prepare()
// found before the first run and what the runs so far decided, until Dispatcher::finish()
// settles it. One dispatcher thread owns it; with a window (dispatcher_window.cc) several are
// in flight at once, each with its own context, so every frame of the child reaches its own
// message.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/crash_identity.h"
#include "runtime/crash_ledger.h"
#include "runtime/dispatcher.h"
#include "runtime/message_context.h"

namespace warren::runtime {

struct DispatchJob {
  DispatchJob(std::unique_ptr<transport::Delivery> taken, WorkerContext& worker,
              transport::Publisher* publisher, const std::atomic<bool>& stop_requested)
      : delivery(std::move(taken)),
        context(delivery->message(), worker, publisher, stop_requested) {}

  const transport::InboundMessage& message() const { return delivery->message(); }

  std::unique_ptr<transport::Delivery> delivery;
  // Made first, so that every line logged about the message carries its trace id.
  MessageContext context;
  std::unique_ptr<ProcessingClaim> claim;  // the id held while the handler runs
  // Crash accounting of the host's own deaths (crash_watch.h): a suspect runs alone.
  std::optional<CrashIdentity> identity;
  std::optional<CrashRecord> suspect;
  warren_message view{};
  std::uint32_t attempt = 1;
  // Process isolation: deaths of the process running it; the last one when it is dead-lettered
  // for them; or given back (no process could run it again).
  int crashes = 0;
  std::optional<std::string> crashed_for_good;
  bool give_back = false;
  // Sent again after the process it was sent to died: its outcome comes back alone
  // (HandlerLane::submit), so that a death running it is blamed on it and on no other.
  bool after_a_death = false;
  transport::Settlement settlement;  // what the last run decided
};

}  // namespace warren::runtime
