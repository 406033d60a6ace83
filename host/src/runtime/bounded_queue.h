// A bounded multi-producer multi-consumer queue: the seed's Channel<T> with FullMode.Wait.
// push() waits while full; pop() waits while empty; close() wakes everyone: pushes then fail and
// pops drain what is left, then return std::nullopt.
//
// Permits (issue 17): takers that may number more than the items allowed to run at once (the
// dispatcher's threads and the transport's reading thread, which helps) take an item together
// with one of `count` numbered permits, under the queue's lock, and give the permit back when
// the item is done. So at most `count` items are out at once, and with one permit they are done
// one at a time in the order pushed, whichever taker takes each.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>
#include <vector>

#include "transport/brief_spin.h"

namespace warren::runtime {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // False (and `item` untouched) when the queue is closed.
  bool push(T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_)
      return false;
    items_.push_back(std::move(item));
    queued_.store(items_.size(), std::memory_order_release);
    not_empty_.notify_one();
    return true;
  }

  // Consumers that take up to `items` at a time (pop_up_to): a push of fewer wakes only one of
  // them, since the first awake takes them all and a second would find nothing (1: every consumer
  // takes one, the default).
  void set_taken_together(std::size_t items) noexcept {
    taken_together_.store(items == 0 ? 1 : items, std::memory_order_relaxed);
  }

  // Pushes every item, in order, under one lock, waking consumers once; waits for room as push()
  // does. Returns how many were pushed: the rest (the queue closed) stay in `items`, from that
  // index on.
  template <class Container>
  std::size_t push_all(Container& items) {
    std::unique_lock lock(mutex_);
    std::size_t pushed = 0;
    for (auto& item : items) {
      not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
      if (closed_)
        break;
      items_.push_back(std::move(item));
      ++pushed;
    }
    queued_.store(items_.size(), std::memory_order_release);
    if (pushed > 0 && pushed <= taken_together_.load(std::memory_order_relaxed)) {
      not_empty_.notify_one();
    } else if (pushed > 0) {
      not_empty_.notify_all();
    }
    return pushed;
  }

  // Pushes every item as push_all() does, but wakes nobody: the caller takes them itself next
  // (try_pop_with_permit) and calls wake_if_takeable() for what it leaves.
  template <class Container>
  std::size_t push_all_quietly(Container& items) {
    std::lock_guard lock(mutex_);
    std::size_t pushed = 0;
    for (auto& item : items) {
      if (closed_ || items_.size() >= capacity_)
        break;
      items_.push_back(std::move(item));
      ++pushed;
    }
    queued_.store(items_.size(), std::memory_order_release);
    return pushed;
  }

  // Before any taker: items are taken with one of `count` permits (see above), numbered 0 to
  // count - 1 (a dispatcher's crash journal slots).
  void set_permits(std::size_t count) {
    std::lock_guard lock(mutex_);
    free_permits_.resize(count == 0 ? 1 : count);
    std::iota(free_permits_.rbegin(), free_permits_.rend(), std::size_t{0});  // 0 taken first
  }

  struct Permitted {
    T item;
    std::size_t permit;
  };
  // Waits up to `timeout` for an item and a free permit together; std::nullopt on timeout, or
  // when closed and no item can be taken.
  template <class Rep, class Period>
  std::optional<Permitted> pop_with_permit_for(std::chrono::duration<Rep, Period> timeout) {
    spin_for_an_item();
    std::unique_lock lock(mutex_);
    not_empty_.wait_for(lock, timeout, [&] { return closed_ || takeable(); });
    return take_with_permit();
  }
  // The same without waiting.
  std::optional<Permitted> try_pop_with_permit() {
    if (queued_.load(std::memory_order_acquire) == 0)
      return std::nullopt;
    std::lock_guard lock(mutex_);
    return take_with_permit();
  }
  // The item taken with `permit` is done: another taker may take one with it. `wake` false: a
  // taker asleep for want of a permit stays asleep (the caller takes the next item itself).
  void return_permit(std::size_t permit, bool wake = true) {
    std::lock_guard lock(mutex_);
    free_permits_.push_back(permit);
    if (wake && !items_.empty())
      not_empty_.notify_one();
  }
  // Wakes a sleeping taker when an item and a permit are both there (after push_all_quietly()).
  void wake_if_takeable() {
    std::lock_guard lock(mutex_);
    if (takeable())
      not_empty_.notify_all();
  }

  // Waits up to `timeout`; std::nullopt on timeout or when closed and drained.
  template <class Rep, class Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> timeout) {
    spin_for_an_item();
    std::unique_lock lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); })) {
      return std::nullopt;
    }
    if (items_.empty())
      return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    queued_.store(items_.size(), std::memory_order_release);
    not_full_.notify_one();
    return item;
  }

  // Up to `most` items, in order: waits up to `timeout` for the first as pop_for() does (a zero
  // timeout does not wait), then takes those queued behind it without waiting. Empty on timeout
  // or when closed and drained.
  template <class Rep, class Period>
  std::vector<T> pop_up_to(std::size_t most, std::chrono::duration<Rep, Period> timeout) {
    std::vector<T> taken;
    if (timeout.count() > 0) {
      if (auto first = pop_for(timeout))
        taken.push_back(std::move(*first));
      else
        return taken;
    }
    std::lock_guard lock(mutex_);
    while (taken.size() < most && !items_.empty()) {
      taken.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    queued_.store(items_.size(), std::memory_order_release);
    not_full_.notify_all();
    return taken;
  }

  // Removes everything queued (for handing it back at shutdown).
  std::deque<T> take_all() {
    std::lock_guard lock(mutex_);
    std::deque<T> taken;
    taken.swap(items_);
    queued_.store(0, std::memory_order_release);
    not_full_.notify_all();
    return taken;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

  // Whether anything is queued, and how much, without the lock: hints (they may change at once).
  bool holds_items() const noexcept { return queued_.load(std::memory_order_acquire) > 0; }
  std::size_t queued() const noexcept { return queued_.load(std::memory_order_acquire); }

 private:
  // An item that is about to be pushed is taken without a sleep, where that pays (see
  // brief_spin.h).
  void spin_for_an_item() {
    if (queued_.load(std::memory_order_acquire) == 0 && spin_advisor_.should_spin()) {
      spin_advisor_.record(
          transport::spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; }));
    }
  }
  bool takeable() const { return !items_.empty() && !free_permits_.empty(); }
  // Under the lock.
  std::optional<Permitted> take_with_permit() {
    if (!takeable())
      return std::nullopt;
    Permitted taken{std::move(items_.front()), free_permits_.back()};
    items_.pop_front();
    free_permits_.pop_back();
    queued_.store(items_.size(), std::memory_order_release);
    not_full_.notify_one();
    return taken;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  std::atomic<std::size_t> queued_{0};  // items_.size(), readable without the lock
  std::atomic<std::size_t> taken_together_{1};
  transport::SpinAdvisor spin_advisor_;
  std::vector<std::size_t> free_permits_;  // set_permits(): those not out with an item
  bool closed_ = false;
};

}  // namespace warren::runtime
