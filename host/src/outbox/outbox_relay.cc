// See outbox_relay.h.
#include "outbox/outbox_relay.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <system_error>

#include "observability/log.h"
#include "outbox/poll_timeout.h"
#include "transport/backoff.h"
#include "transport/ids.h"

namespace warren::outbox {

using Clock = std::chrono::steady_clock;

OutboxRelay::OutboxRelay(OutboxRelayOptions options,
                         std::vector<std::unique_ptr<OutboxStore>> lanes, RowPublisher& publisher,
                         observability::Metrics* metrics, observability::Health* health)
    : options_(std::move(options)),
      stores_(std::move(lanes)),
      publisher_(publisher),
      metrics_(metrics),
      health_(health) {
  if (stores_.empty())
    throw std::invalid_argument("outbox '" + options_.outbox + "': a relay needs a lane");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "outbox relay: eventfd");
}

OutboxRelay::~OutboxRelay() {
  stop();
  ::close(wake_fd_);
}

void OutboxRelay::start() {
  for (std::size_t i = 0; i < stores_.size(); ++i)
    threads_.emplace_back([this, i] { run_lane(i); });
}

void OutboxRelay::request_stop() {
  if (!stopping_.exchange(true)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof(one));
  }
}

void OutboxRelay::stop() {
  request_stop();
  for (auto& thread : threads_) {
    if (thread.joinable())
      thread.join();
  }
  threads_.clear();
}

void OutboxRelay::sleep_or_wake(std::chrono::milliseconds duration) const {
  pollfd fd{wake_fd_, POLLIN, 0};
  ::poll(&fd, 1, poll_timeout_ms(duration));
}

void OutboxRelay::refresh_stats(OutboxStore& store) {
  if (metrics_ == nullptr)
    return;
  try {
    const OutboxStats stats = store.stats();
    metrics_->outbox_pending(options_.outbox).Set(static_cast<double>(stats.pending));
    metrics_->outbox_dead(options_.outbox).Set(static_cast<double>(stats.dead));
    metrics_->outbox_lag_seconds(options_.outbox).Set(stats.oldest_pending_age_seconds.value_or(0));
  } catch (const std::exception& e) {
    observability::log_warn("outbox '" + options_.outbox +
                            "': cannot refresh metrics: " + e.what());
  }
}

namespace {

std::chrono::milliseconds prune_interval(const OutboxRelayOptions& options) {
  if (options.prune_interval.count() > 0)
    return options.prune_interval;
  return std::clamp<std::chrono::milliseconds>(options.sent_retention / 2, std::chrono::seconds(1),
                                               std::chrono::hours(1));
}

}  // namespace

void OutboxRelay::prune_sent(OutboxStore& store, observability::LoopHeartbeat* heartbeat) {
  long total = 0;
  try {
    while (!stopping_.load()) {
      const long deleted = store.prune_sent(options_.sent_retention, options_.prune_chunk);
      total += deleted;
      if (heartbeat != nullptr)
        heartbeat->tick();
      if (deleted < options_.prune_chunk)
        break;
    }
  } catch (const std::exception& e) {
    observability::log_warn("outbox '" + options_.outbox +
                            "': cannot delete sent rows past the retention: " + e.what());
  }
  if (total > 0) {
    observability::log_debug("outbox '" + options_.outbox + "': deleted " + std::to_string(total) +
                             " sent row(s) past the retention");
  }
}

void OutboxRelay::run_lane(std::size_t index) {
  OutboxStore& store = *stores_[index];
  RelayLane lane(RelayLaneOptions{options_.outbox, options_.default_exchange, options_.batch,
                                  static_cast<int>(index)},
                 store, publisher_, options_.schedule,
                 metrics_ != nullptr ? &metrics_->outbox_relayed(options_.outbox) : nullptr);
  std::shared_ptr<observability::LoopHeartbeat> heartbeat;
  if (health_ != nullptr) {
    heartbeat =
        health_->register_loop("outbox " + options_.outbox + " relay lane " + std::to_string(index),
                               options_.loop_allowance);
  }
  transport::Backoff store_backoff(
      transport::reconnect_policy(options_.store_retry_initial, options_.store_retry_max));
  const bool keeps_stats = index == 0;
  auto next_stats = Clock::now();
  auto next_prune = Clock::now();
  bool was_failing = false;
  bool publisher_wait_logged = false;

  while (!stopping_.load()) {
    if (heartbeat)
      heartbeat->tick();
    if (keeps_stats && Clock::now() >= next_stats) {
      refresh_stats(store);
      next_stats = Clock::now() + options_.stats_interval;
    }
    if (keeps_stats && Clock::now() >= next_prune) {
      prune_sent(store, heartbeat.get());
      next_prune = Clock::now() + prune_interval(options_);
    }
    RelayLane::Step step = RelayLane::Step::store_failed;
    std::string unexpected;
    try {
      step = lane.step();
    } catch (const std::exception& e) {
      store.abandon();
      unexpected = e.what();
    }
    switch (step) {
      case RelayLane::Step::batch_full:
      case RelayLane::Step::batch_partial:
      case RelayLane::Step::nothing_due:
        if (was_failing)
          observability::log_info("outbox '" + options_.outbox + "': relaying again");
        was_failing = false;
        publisher_wait_logged = false;
        store_backoff.reset();
        if (step == RelayLane::Step::batch_full)
          continue;
        try {
          store.wait_for_work(options_.poll_interval, wake_fd_);
        } catch (const std::exception& e) {
          observability::log_warn("outbox '" + options_.outbox + "': " + e.what());
          sleep_or_wake(options_.poll_interval);
        }
        continue;
      case RelayLane::Step::publisher_not_ready:
        if (!publisher_wait_logged && index == 0) {
          observability::log_info("outbox '" + options_.outbox +
                                  "': waiting for the broker before claiming rows");
        }
        publisher_wait_logged = true;
        sleep_or_wake(std::chrono::milliseconds(100));
        continue;
      case RelayLane::Step::store_failed: {
        const auto delay = store_backoff.next(transport::random_unit());
        const std::string why = unexpected.empty() ? lane.last_error() : unexpected;
        observability::log_warn("outbox '" + options_.outbox + "' lane " + std::to_string(index) +
                                ": " + why + "; nothing was marked, retrying in " +
                                std::to_string(delay.count()) + " ms");
        was_failing = true;
        sleep_or_wake(delay);
        continue;
      }
    }
  }
  if (heartbeat)
    heartbeat->retire();
}

}  // namespace warren::outbox
