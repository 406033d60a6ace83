// The dispatcher's window (dispatcher.h, issue 14): a lane that takes one (a worker process)
// holds up to window_ messages at once, its share of the prefetch, so that the child never waits
// for the host between two messages. The child runs them in order, one at a time; the thread
// sends them ahead, awaits them in order, settles each as it is done and refills the window from
// the inbox. When the child dies, the message it was running (the first unanswered one) is the
// only one to blame; those behind it never ran and go to the next child as they are, with no
// crash counted and no broker round trip. Host-crash suspects never join a window: they run
// alone once this thread's window is done.
#include <algorithm>
#include <deque>

#include "runtime/dispatch_job.h"
#include "runtime/dispatcher.h"

namespace warren::runtime {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Dispatcher::process_window(std::vector<std::unique_ptr<transport::Delivery>> first,
                                std::size_t thread, HandlerLane& lane,
                                observability::LoopHeartbeat* heartbeat) {
  struct Sent {
    std::unique_ptr<DispatchJob> job;
    HandlerLane::Ticket ticket;
  };
  std::deque<std::unique_ptr<DispatchJob>> waiting;  // prepared, to send (again)
  std::deque<Sent> sent;                             // in the child's window, in order
  std::vector<std::unique_ptr<DispatchJob>> suspects;
  auto take = [&](std::vector<std::unique_ptr<transport::Delivery>> deliveries) {
    for (auto& delivery : deliveries) {
      std::unique_ptr<DispatchJob> job = prepare(std::move(delivery));
      if (job && job->suspect)
        suspects.push_back(std::move(job));
      else if (job)
        waiting.push_back(std::move(job));
    }
  };
  take(std::move(first));

  // One shared pass for the whole window: a second one taken by this thread could wait for a
  // suspect that waits for the first.
  std::optional<SoloGate::Pass> pass;
  if (crash_.watch != nullptr)
    pass.emplace(solo_gate_.shared());
  const std::size_t slot = crash_.first_slot + thread;
  // The head's handler began when the outcome before it came, or when it was sent to an idle
  // child.
  auto head_since = Clock::now();
  auto send_waiting = [&] {
    if (sent.empty())
      head_since = Clock::now();
    while (!waiting.empty()) {
      std::unique_ptr<DispatchJob> job = std::move(waiting.front());
      waiting.pop_front();
      begin_run(*job);
      const HandlerLane::Ticket ticket =
          lane.submit(job->view, job->message(), job->context, job->after_a_death);
      sent.push_back(Sent{std::move(job), ticket});
    }
  };
  auto give_back_waiting = [&] {
    for (auto& job : waiting) {
      job->give_back = true;
      finish(*job);
    }
    waiting.clear();
  };

  send_waiting();
  // The process died: what was sent behind the dead one did not run; collect it all, then
  // start another process before sending anything again.
  bool process_gone = false;
  while (!sent.empty()) {
    Sent head = std::move(sent.front());
    sent.pop_front();
    DispatchJob& job = *head.job;
    // The journal names the message the child runs, for the next start if the host dies here.
    if (job.identity)
      crash_.watch->enter(slot, *job.identity);
    const HandlerLane::Awaited awaited = lane.await(head.ticket);
    if (job.identity)
      crash_.watch->leave(slot);
    if (heartbeat != nullptr)
      heartbeat->tick();
    if (awaited.kind == HandlerLane::Awaited::Kind::not_run) {
      process_gone = true;
      job.after_a_death = true;
      waiting.push_back(std::move(head.job));
    } else {
      const auto now = Clock::now();
      // The child's own measure where it has one: its outcomes may come several at a time.
      const auto ran_for = awaited.ran_for.value_or(now - head_since);
      metrics_.handler_duration->Observe(std::chrono::duration<double>(ran_for).count());
      head_since = now;
      std::optional<std::string> died;
      if (awaited.kind == HandlerLane::Awaited::Kind::died) {
        died = awaited.reason;
        process_gone = true;
        job.after_a_death = true;
      }
      if (after_run(job, died) == AfterRun::finished)
        finish(job);
      else
        waiting.push_back(std::move(head.job));  // an immediate retry, or after a death
    }
    if (process_gone) {
      if (!sent.empty())
        continue;
      process_gone = false;
      if (waiting.empty())
        break;
      if (!wait_for_lane(lane)) {
        give_back_waiting();  // stopping, or a crash loop
        break;
      }
    }
    // Keep the window full, unless a suspect waits to run alone (this thread's pass would keep
    // it waiting) or the worker stops. Refilled once a quarter of it is free and a quarter of it
    // waits in the inbox, so that the child gets several messages a system call: fewer wait for
    // the next outcome, or, once the window is empty, for a new one to gather them
    // (window_gathering.h), and meanwhile another thread of the worker may take them.
    const std::size_t held = sent.size() + waiting.size();
    const std::size_t refill_at = std::max<std::size_t>(1, window_ / 4);
    if (held + refill_at <= window_ && inbox_.queued() >= refill_at && suspects.empty() &&
        solo_gate_.waiting_alone() == 0 && !stop_requested_.load())
      take(inbox_.pop_up_to(window_ - held, Clock::duration::zero()));
    if (!waiting.empty())
      send_waiting();
  }
  pass.reset();
  for (auto& job : suspects) {
    if (wait_for_lane(lane)) {
      run_to_the_end(*job, thread, lane);
    } else {
      job->give_back = true;
      finish(*job);
    }
  }
}

}  // namespace warren::runtime
