// Where a worker's handler runs, as its dispatcher sees it: in the host (isolation = "thread", the
// plugin's instance called on the dispatcher's threads) or in child processes (isolation =
// "process", process_runner.h). The dispatcher asks each of its threads' lanes to run one message
// at a time and does the rest (retries, settlements, crash accounting) the same way for both.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "plugin/handler_instance.h"
#include "runtime/crash_identity.h"
#include "transport/message.h"
#include "warren/host_abi/services.h"

namespace warren::runtime {

// One dispatcher thread's way to the handler; used by that thread only.
class HandlerLane {
 public:
  virtual ~HandlerLane() = default;

  // Before the thread takes a message: true when the lane can run one now. A process lane starts
  // its child here, after the restart delay; it waits at most about half a second and returns
  // false when it still cannot (a failed start, a crash loop, `stopping`), so that the thread
  // stays responsive.
  virtual bool ready_for_message(const std::atomic<bool>& stopping) = 0;

  // Runs the handler once; its outcome reaches services.report(). std::nullopt: it ran. Else
  // why the process it ran in died running it ("SIGSEGV", "timeout": isolation/child_exit.h);
  // the next ready_for_message() starts another.
  virtual std::optional<std::string> run(const warren_message& view,
                                         const transport::InboundMessage& message,
                                         host_abi::MessageServices& services) = 0;

  // A lane that holds several messages at once (a worker process's window, issue 14): submit()
  // sends one behind those in flight, await() waits until it is done. The handler still runs
  // them one at a time, in order. A lane without one (the host's threads) only has run().
  virtual bool takes_a_window() const noexcept { return false; }
  using Ticket = std::uint64_t;
  struct Awaited {
    // ran: its outcome reached the services. died: the process died running it (`reason`, as
    // run() says it). not_run: the process died, or was gone, before it began: it may be
    // submitted again, as it is, once ready_for_message() said yes.
    enum class Kind { ran, died, not_run };
    Kind kind = Kind::ran;
    std::string reason;
    // ran: how long the handler ran, if the lane measured it where it ran (a child sends
    // several outcomes together, so when one arrives says little).
    std::optional<std::chrono::nanoseconds> ran_for;
  };
  // VIEW, MESSAGE and SERVICES outlive the ticket's await(). REPORT_AT_ONCE: the message comes
  // back after a death; its outcome must not wait for others' (isolation::Deliver).
  virtual Ticket submit(const warren_message& view, const transport::InboundMessage& message,
                        host_abi::MessageServices& services, bool report_at_once);
  virtual Awaited await(Ticket ticket);
};

class HandlerRunner {
 public:
  virtual ~HandlerRunner() = default;
  // The lane of dispatcher thread `index`.
  virtual std::unique_ptr<HandlerLane> lane(std::size_t index) = 0;
  // True once the worker is in a crash loop: its lanes cannot start, it takes no more messages
  // and gives back those it holds.
  virtual bool crash_looping() const noexcept { return false; }
  // Deaths of the process that ran a message, by message: one more counted (returns the count),
  // and forgotten once the message left the worker. Nothing to count in the host's own threads.
  virtual int count_crash(const CrashIdentity&) { return 0; }
  virtual void forget_crashes(const CrashIdentity&) {}
};

// isolation = "thread": the plugin's instance, called on the dispatcher's own threads.
class InProcessRunner final : public HandlerRunner {
 public:
  explicit InProcessRunner(const plugin::HandlerInstance& handler) : handler_(handler) {}
  std::unique_ptr<HandlerLane> lane(std::size_t index) override;

 private:
  const plugin::HandlerInstance& handler_;
};

}  // namespace warren::runtime
