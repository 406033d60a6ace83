// Which subscriptions' sinks the consuming connection's threads (the I/O thread, its stand-in)
// may still call, and the calls under way. stop_consuming(worker) retires the worker's
// subscription and waits for those calls: once it returns, no call into that sink is under way
// or can begin (transport.h: "nothing more is delivered to it"), because the host may destroy
// the sink, a reload's dispatcher, right after. Without it, a delivery the broker sent before
// it saw the basic.cancel, read after it, was handed to the sink of a worker being replaced.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "transport/transport.h"

namespace warren::broker {

class SinkAccess {
 public:
  // One call into a sink under way; empty when its subscription is retired. Calls are short
  // (hand-overs, wake-ups, a helper's enlistment): never a handler's run, which a stop would
  // then wait for (transport.h, DeliverySink::enlist_helper).
  class Use {
   public:
    Use() = default;
    Use(Use&& other) noexcept
        : access_(std::exchange(other.access_, nullptr)),
          index_(other.index_),
          sink_(other.sink_) {}
    Use& operator=(Use&&) = delete;
    Use(const Use&) = delete;
    ~Use() {
      if (access_ != nullptr)
        access_->leave(index_);
    }
    explicit operator bool() const noexcept { return access_ != nullptr; }
    transport::DeliverySink& operator*() const noexcept { return *sink_; }
    transport::DeliverySink* operator->() const noexcept { return sink_; }

   private:
    friend class SinkAccess;
    Use(SinkAccess* access, std::size_t index, transport::DeliverySink* sink)
        : access_(access), index_(index), sink_(sink) {}
    SinkAccess* access_ = nullptr;
    std::size_t index_ = 0;
    transport::DeliverySink* sink_ = nullptr;
  };

  // Before the connection's threads start: every subscription open.
  void reset(const std::vector<transport::Subscription>& subscriptions) {
    std::lock_guard lock(mutex_);
    slots_.clear();
    for (const auto& subscription : subscriptions)
      slots_.push_back(Slot{subscription.sink});
  }

  Use enter(std::size_t index) {
    std::lock_guard lock(mutex_);
    Slot& slot = slots_.at(index);
    if (slot.retired)
      return {};
    ++slot.calls;
    return Use(this, index, slot.sink);
  }

  // Retires the subscriptions `pick(index)` selects, then waits until no call into their sinks
  // is under way. From any thread but one that is inside a Use (it would wait for itself).
  template <class Pick>
  void retire(Pick pick) {
    std::unique_lock lock(mutex_);
    for (std::size_t index = 0; index < slots_.size(); ++index) {
      if (pick(index))
        slots_[index].retired = true;
    }
    idle_.wait(lock, [&] {
      for (const Slot& slot : slots_) {
        if (slot.retired && slot.calls > 0)
          return false;
      }
      return true;
    });
  }

 private:
  struct Slot {
    transport::DeliverySink* sink = nullptr;
    bool retired = false;
    int calls = 0;
  };

  void leave(std::size_t index) {
    std::lock_guard lock(mutex_);
    if (--slots_[index].calls == 0 && slots_[index].retired)
      idle_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<Slot> slots_;
};

}  // namespace warren::broker
