// See table_queue_transport.h. Lock order: db_mutex_ before mutex_, never the other way round; the
// engine never holds mutex_ while it waits for the database.
#include "queue/table_queue_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "observability/log.h"
#include "queue/round_pacing.h"
#include "transport/brief_spin.h"
#include "transport/ids.h"

namespace warren::queue {
namespace {

using namespace std::chrono_literals;

// The database's idle upkeep (SQLite: the WAL is truncated) once the queue has been idle this long.
constexpr auto kUpkeepAfterIdle = 1s;
// How often rows of dead owners and expired leases are looked for.
constexpr auto kRescueInterval = 1s;
// Back-off while the database refuses writes (busy, full, read-only), doubling up to the max.
constexpr auto kRetryInitial = 100ms;
constexpr auto kRetryMax = 5s;
// How often warren_queue_depth and warren_queue_oldest_pending_seconds are refreshed (a count over
// the table: not per round).
constexpr auto kCensusInterval = 10s;
// A transaction open this long on the queue's database is worth a warning (PostgreSQL: it holds
// back xmin, so vacuum keeps every row dead since it began).
constexpr std::chrono::seconds kOldTransactionWarning = 5min;
// A settlement waits at most this long to be written with others in one transaction, unless its
// worker would otherwise run dry (see settle()).
constexpr auto kSettleCoalesce = 2ms;

}  // namespace

std::string lease_owner_for(const std::string& host_name) {
  return host_name + "/" + std::to_string(::getpid());
}

struct TableQueueTransport::Subscriber {
  transport::Subscription subscription;
  std::size_t unsettled = 0;  // handed to the sink, not written settled yet
  std::size_t queued = 0;     // of those, settled by the runtime, awaiting a round
  std::size_t lost = 0;       // of those, held still but whose leases were lost (marked stale)
  std::size_t suspects = 0;   // of those, claimed alone: nothing else is claimed beside them
  bool maybe_ready = true;    // rows may be waiting: worth a claim
  bool retired = false;       // stop_consuming(worker): never claimed for again
  // A suspect may be waiting: worth a claim_suspect when the worker is idle. Cleared when one
  // finds none, set again by every rescue (every second, on every host): at most one such
  // statement a second while there are none, rather than one per round.
  bool suspects_maybe = true;
  std::optional<Clock::time_point> due;  // when the next pending row falls due
  RoundPacing pacing;                    // overlap or whole batches (round_pacing.h)
};

class TableQueueTransport::RowDelivery final : public transport::Delivery {
 public:
  RowDelivery(TableQueueTransport& transport, std::size_t subscriber,
              std::shared_ptr<const ClaimedState> state)
      : transport_(transport), subscriber_(subscriber), state_(std::move(state)) {}

  const transport::InboundMessage& message() const noexcept override { return state_->row.message; }
  bool stale() const noexcept override { return state_->stale.load(); }
  void settle(const transport::Settlement& settlement) override {
    transport_.settle(Settling{state_, subscriber_, settlement});
  }

 private:
  TableQueueTransport& transport_;
  const std::size_t subscriber_;
  const std::shared_ptr<const ClaimedState> state_;
};

TableQueueTransport::TableQueueTransport(std::unique_ptr<TableQueueDatabase> database,
                                         TableQueueOptions options, transport::RoutingTable routing,
                                         observability::Health* health,
                                         observability::Metrics* metrics)
    : options_(options),
      routing_(std::move(routing)),
      metrics_(metrics),
      database_(std::move(database)),
      log_prefix_(std::string(database_->log_name()) + ": ") {
  if (health != nullptr) {
    loop_heartbeat_ = health->register_loop(std::string(database_->log_name()) + " engine",
                                            std::chrono::seconds(60));
  }
}

TableQueueTransport::~TableQueueTransport() {
  close();
}

void TableQueueTransport::start(const std::vector<transport::Subscription>& subscriptions) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& subscription : subscriptions) {
      if (!routing_.has_queue(subscription.queue)) {
        throw transport::TransportError("queue '" + subscription.queue + "' of worker '" +
                                        subscription.worker +
                                        "' is not a [[queues]] entry of the configuration");
      }
      auto subscriber = std::make_unique<Subscriber>();
      subscriber->subscription = subscription;
      subscribers_.push_back(std::move(subscriber));
    }
    consuming_ = true;
  }
  rescue();  // rows a killed process of an earlier run left running
  publish_census();
  started_ = true;
  database_->watch([this] { on_database_changed(); });
  engine_ = std::thread([this] { run(); });
}

void TableQueueTransport::stop_consuming() {
  std::unique_lock lock(mutex_);
  consuming_ = false;
  // A round that began before this call may still be claiming: wait until it handed over what
  // it claimed, so that nothing is delivered once this returns.
  wake_.wait(lock, [&] { return !in_round_; });
}

void TableQueueTransport::stop_consuming(const std::string& worker) {
  std::unique_lock lock(mutex_);
  for (auto& subscriber : subscribers_) {
    if (subscriber->subscription.worker == worker)
      subscriber->retired = true;
  }
  wake_.wait(lock, [&] { return !in_round_; });
}

void TableQueueTransport::close() {
  if (started_.exchange(false)) {
    stop_consuming();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (engine_.joinable())
      engine_.join();
    database_->stop_watching();
  }
  // What the workers settled since the engine's last round, then the rows still held go back.
  std::vector<Settling> last;
  {
    std::lock_guard lock(mutex_);
    last.swap(settlements_);
  }
  if (!last.empty() && !round(last)) {
    observability::log_error(log_prefix_ + std::to_string(last.size()) +
                             " settlements could not be written at close; those rows go back to "
                             "pending when their leases expire");
  }
  release_held();
  if (loop_heartbeat_)
    loop_heartbeat_->retire();
}

bool TableQueueTransport::ready() const noexcept {
  return started_.load() && healthy_.load() && consuming_.load();
}

void TableQueueTransport::publish(const transport::OutboundMessage& message) {
  using Reason = transport::PublishError::Reason;
  const std::vector<std::string> queues = transport::publish_targets(routing_, message);
  if (queues.empty()) {
    // Not mandatory, and no queue bound: dropped, as a broker drops it, and counted (the publish
    // succeeds).
    if (metrics_ != nullptr)
      metrics_->published_dropped(message.exchange).Increment();
    return;
  }
  const std::string message_id =
      message.message_id.empty() ? transport::random_uuid() : message.message_id;
  {
    std::lock_guard db(db_mutex_);
    try {
      DatabaseTransaction transaction(*database_);
      for (const auto& queue : queues)
        database_->insert(queue, message, message_id);
      transaction.commit();
    } catch (const QueueDatabaseError& e) {
      throw transport::PublishError(e.transient() ? Reason::unavailable : Reason::nacked, e.what());
    }
  }
  std::lock_guard lock(mutex_);
  for (auto& subscriber : subscribers_) {
    if (std::find(queues.begin(), queues.end(), subscriber->subscription.queue) != queues.end())
      subscriber->maybe_ready = true;
  }
  wake_requested_ = true;
  wake_.notify_all();
}

void TableQueueTransport::settle(Settling settling) {
  std::lock_guard lock(mutex_);
  // The row stays counted as unsettled until the round that writes its settlement: claiming
  // before that would leave more than prefetch rows running in the table.
  Subscriber& subscriber = *subscribers_[settling.subscriber];
  ++subscriber.queued;
  settlements_.push_back(std::move(settling));
  // Settlements are written together, a round per batch rather than per message, while the
  // worker still has rows to handle: at once when it has none left (it would wait for the next
  // claim) or, when pacing by overlap, half its prefetch is settled (the claim refills it while it
  // handles the other half), else within kSettleCoalesce.
  const bool worker_idle = subscriber.queued >= subscriber.unsettled;
  const bool half_settled = subscriber.pacing.mode() == RoundPacing::Mode::overlap &&
                            2 * subscriber.queued >= subscriber.subscription.prefetch;
  if (worker_idle || half_settled) {
    wake_requested_ = true;
    nudged_.store(true, std::memory_order_release);
    wake_.notify_all();
  } else if (!flush_at_) {
    flush_at_ = Clock::now() + kSettleCoalesce;
    wake_.notify_all();  // the engine may be asleep until a later deadline
  }
}

void TableQueueTransport::run() {
  const auto lease = options_.lease;
  auto next_heartbeat = Clock::now() + lease / 3;
  auto next_rescue = Clock::now() + kRescueInterval;
  const auto prune_interval = std::clamp<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.retention / 2), 1s, 60s);
  auto next_prune = Clock::now() + prune_interval;
  auto next_poll = Clock::now() + options_.poll_interval;
  // start() took the first census, before the first claim: a count over the whole table that
  // would otherwise hold up the first deliveries.
  auto next_census = Clock::now() + kCensusInterval;
  Clock::time_point retry_at{};
  // Swapped with settlements_ each round and cleared by round(): the two vectors keep their
  // capacity, so a round allocates nothing for them.
  std::vector<Settling> batch;

  std::unique_lock lock(mutex_);
  for (;;) {
    if (loop_heartbeat_)
      loop_heartbeat_->tick();
    auto deadline = std::min({next_heartbeat, next_rescue, next_prune, next_poll, next_census});
    for (const auto& subscriber : subscribers_) {
      if (subscriber->due)
        deadline = std::min(deadline, *subscriber->due);
    }
    if (flush_at_)
      deadline = std::min(deadline, *flush_at_);
    // A settlement that sets flush_at_ after this deadline was taken ends the wait below, which
    // then starts again with the flush in its deadline.
    const auto flush_known = flush_at_;
    // While backing off, settlements wait for the retry like everything else.
    const bool backing_off = retry_at > Clock::now();
    if (backing_off)
      deadline = std::max(deadline, retry_at);
    if (!stopping_ && !wake_requested_ && !backing_off) {
      // A worker's settlement is usually a few microseconds away (see brief_spin.h).
      lock.unlock();
      transport::spin_until([&] { return nudged_.load(std::memory_order_acquire); });
      lock.lock();
    }
    wake_.wait_until(lock, deadline,
                     [&] { return stopping_ || wake_requested_ || flush_at_ != flush_known; });
    if (stopping_)
      return;
    const auto now = Clock::now();
    if (!wake_requested_ && now < deadline)
      continue;
    if (now < retry_at) {
      wake_requested_ = false;
      continue;
    }
    wake_requested_ = false;
    bool want_claim = false;
    for (auto& subscriber : subscribers_) {
      if (subscriber->due && *subscriber->due <= now) {
        subscriber->due.reset();
        subscriber->maybe_ready = true;
      }
      want_claim = want_claim || (consuming_ && !subscriber->retired && subscriber->maybe_ready &&
                                  subscriber->unsettled < subscriber->subscription.prefetch);
    }
    batch.swap(settlements_);
    flush_at_.reset();
    nudged_.store(false, std::memory_order_relaxed);
    for (auto& subscriber : subscribers_)
      subscriber->queued = 0;
    in_round_ = true;
    lock.unlock();

    bool ok = true;
    if (!batch.empty() || want_claim)
      ok = round(batch);
    if (ok) {
      if (now >= next_poll) {
        poll_other_processes();
        next_poll = now + options_.poll_interval;
      }
      if (now >= next_heartbeat) {
        heartbeat();
        next_heartbeat = now + lease / 3;
      }
      if (now >= next_rescue) {
        rescue();
        next_rescue = now + kRescueInterval;
      }
      if (now >= next_prune) {
        prune();
        next_prune = now + prune_interval;
      }
      if (now >= next_census) {
        publish_census();
        next_census = now + kCensusInterval;
      }
      upkeep_when_idle();
    }

    if (!ok) {
      std::lock_guard db(db_mutex_);
      database_->after_failure();
    }

    lock.lock();
    in_round_ = false;
    wake_.notify_all();
    if (!ok) {
      // Keep the settlements, in order, ahead of any that arrived meanwhile; try again later.
      for (const auto& settling : batch)
        ++subscribers_[settling.subscriber]->queued;
      batch.insert(batch.end(), std::make_move_iterator(settlements_.begin()),
                   std::make_move_iterator(settlements_.end()));
      settlements_.swap(batch);
      batch.clear();
      retry_backoff_ =
          std::clamp<std::chrono::milliseconds>(retry_backoff_ * 2, kRetryInitial, kRetryMax);
      retry_at = Clock::now() + retry_backoff_;
    } else {
      retry_backoff_ = 0ms;
    }
  }
}

std::vector<bool> TableQueueTransport::write_settlements(const std::vector<Settling>& settlements) {
  // Acks, the common case by far, go in a few statements; the rest one by one.
  std::vector<bool> applied(settlements.size(), false);
  std::vector<RowLease> acks;
  std::vector<std::size_t> ack_positions;
  for (std::size_t i = 0; i < settlements.size(); ++i) {
    const Settling& s = settlements[i];
    if (s.settlement.kind == transport::Settlement::Kind::ack) {
      acks.push_back(s.state->row.lease);
      ack_positions.push_back(i);
    } else {
      applied[i] = database_->settle(s.state->row, s.settlement);
    }
  }
  const std::vector<bool> acked = database_->ack_all(acks);
  for (std::size_t a = 0; a < acks.size(); ++a)
    applied[ack_positions[a]] = acked[a];
  return applied;
}

bool TableQueueTransport::round(std::vector<Settling>& settlements) {
  struct Claim {
    std::size_t subscriber;
    int asked;
    std::vector<ClaimedRow> rows;
    bool suspect = false;
  };
  std::vector<Claim> claims;
  // How many of this round's settlements are each worker's: their rows' places are free for the
  // claim, and RoundPacing measures by them.
  std::vector<int> settled_here(subscribers_.size(), 0);
  for (const auto& s : settlements)
    ++settled_here[s.subscriber];
  std::vector<bool> applied;
  std::vector<std::size_t> no_suspects;  // workers whose claim_suspect found none
  std::vector<std::pair<std::size_t, std::optional<std::chrono::milliseconds>>> due_of_short;
  {
    std::lock_guard db(db_mutex_);
    try {
      DatabaseTransaction transaction(*database_);
      applied = write_settlements(settlements);
      struct Wanted {
        std::size_t subscriber;
        int room;
        bool idle;  // nothing of this worker in flight once this round's settlements are written
      };
      std::vector<Wanted> wanted;
      {
        std::lock_guard lock(mutex_);
        // This transaction's settlements free their rows' places before it claims.
        for (std::size_t i = 0; i < subscribers_.size(); ++i) {
          const Subscriber& subscriber = *subscribers_[i];
          const int in_flight = static_cast<int>(subscriber.unsettled) - settled_here[i];
          const int room = static_cast<int>(subscriber.subscription.prefetch) - in_flight;
          // Rows whose leases were lost, unless this round writes their settlements.
          int lost = static_cast<int>(subscriber.lost);
          for (std::size_t k = 0; lost > 0 && k < settlements.size(); ++k) {
            const Settling& s = settlements[k];
            if (s.subscriber == i && s.state->stale.load() &&
                s.state->held_slot != ClaimedState::kNotHeld)
              --lost;
          }
          const int live = in_flight - std::max(lost, 0);
          // A suspect in flight runs alone: nothing more until its settlement is written.
          if (consuming_ && !subscriber.retired && subscriber.maybe_ready && room > 0 &&
              subscriber.suspects == 0)
            wanted.push_back(Wanted{i, room, live <= 0 && subscriber.suspects_maybe});
        }
      }
      for (const auto& [index, room, idle] : wanted) {
        const std::string& queue = subscribers_[index]->subscription.queue;
        // A row some host died holding runs alone (table_queue_database.h, claim_suspect): asked
        // for 1, so that getting it does not read as the queue running short.
        std::vector<ClaimedRow> suspect;
        if (idle) {
          suspect = database_->claim_suspect(queue, options_.lease);
          if (suspect.empty())
            no_suspects.push_back(index);
        }
        Claim claim = suspect.empty()
                          ? Claim{index, room, database_->claim(queue, room, options_.lease)}
                          : Claim{index, 1, std::move(suspect), true};
        for (const auto& row : claim.rows) {
          if (!row.malformed.empty())
            database_->bury(row.lease, "malformed row: " + row.malformed);
        }
        if (static_cast<int>(claim.rows.size()) < room)
          due_of_short.emplace_back(index, database_->next_due_in(queue));
        claims.push_back(std::move(claim));
      }
      transaction.commit();
    } catch (const QueueDatabaseError& e) {
      note_write(false, e.what());
      return false;
    }
  }
  note_write(true, {});

  // The deliveries are made before taking the lock that the workers' settlements wait for.
  std::vector<std::vector<std::unique_ptr<transport::Delivery>>> deliveries(claims.size());
  std::vector<std::vector<std::shared_ptr<ClaimedState>>> claimed(claims.size());
  for (std::size_t c = 0; c < claims.size(); ++c) {
    deliveries[c].reserve(claims[c].rows.size());
    claimed[c].reserve(claims[c].rows.size());
    for (auto& row : claims[c].rows) {
      if (!row.malformed.empty()) {
        observability::log_warn(log_prefix_ + "message '" + row.message.message_id +
                                "' of queue '" + row.message.queue +
                                "' is dead: malformed row: " + row.malformed);
        continue;
      }
      auto state = std::make_shared<ClaimedState>();
      state->row = std::move(row);
      deliveries[c].push_back(std::make_unique<RowDelivery>(*this, claims[c].subscriber, state));
      claimed[c].push_back(std::move(state));
    }
  }
  {
    std::lock_guard lock(mutex_);
    const auto steady_now = Clock::now();
    for (std::size_t i = 0; i < settlements.size(); ++i) {
      // A row given back or rescheduled is claimable again: at once, or when its delay ends.
      Subscriber& owner = *subscribers_[settlements[i].subscriber];
      if (settlements[i].state->held_slot != ClaimedState::kNotHeld) {
        if (settlements[i].state->stale.load() && owner.lost > 0)
          --owner.lost;
        if (settlements[i].state->suspect && owner.suspects > 0)
          --owner.suspects;
      }
      unhold(*settlements[i].state);
      if (owner.unsettled > 0)
        --owner.unsettled;
      using Kind = transport::Settlement::Kind;
      if (applied[i] && settlements[i].settlement.kind == Kind::requeue) {
        owner.maybe_ready = true;
      } else if (applied[i] && settlements[i].settlement.kind == Kind::retry_later) {
        const auto due = steady_now + settlements[i].settlement.delay;
        owner.due = owner.due ? std::min(*owner.due, due) : due;
      }
      if (!applied[i]) {
        ++stale_settlements_;
        if (metrics_ != nullptr)
          metrics_->queue_settlements_dropped(owner.subscription.queue).Increment();
      }
    }
    for (const auto& claim : claims) {
      const bool backlog = static_cast<int>(claim.rows.size()) >= claim.asked;
      RoundPacing& pacing = subscribers_[claim.subscriber]->pacing;
      const auto before = pacing.mode();
      pacing.record_round(static_cast<std::size_t>(settled_here[claim.subscriber]), backlog,
                          steady_now);
      if (pacing.mode() != before && observability::log_enabled(observability::LogLevel::debug)) {
        observability::log_debug(
            log_prefix_ + "worker '" + subscribers_[claim.subscriber]->subscription.worker +
            "' now paces its rounds by " +
            (pacing.mode() == RoundPacing::Mode::overlap ? "overlap" : "whole batches") +
            " (last measured: overlap " + std::to_string(std::lround(pacing.overlap_rate())) +
            " rows/s, whole batches " + std::to_string(std::lround(pacing.whole_batches_rate())) +
            " rows/s)");
      }
    }
    bool delivering = false;
    for (std::size_t c = 0; c < claims.size(); ++c) {
      delivering = delivering || !claimed[c].empty();
      for (auto& state : claimed[c]) {
        state->suspect = claims[c].suspect;
        hold(claims[c].subscriber, std::move(state));
      }
      if (claims[c].suspect)
        subscribers_[claims[c].subscriber]->suspects += claimed[c].size();
      subscribers_[claims[c].subscriber]->unsettled += claimed[c].size();
    }
    for (const std::size_t index : no_suspects)
      subscribers_[index]->suspects_maybe = false;
    for (const auto& [index, due_in] : due_of_short) {
      Subscriber& subscriber = *subscribers_[index];
      subscriber.maybe_ready = false;
      if (due_in) {
        subscriber.due = steady_now + *due_in;
      } else {
        subscriber.due.reset();
      }
    }
    if (!settlements.empty() || delivering) {
      last_activity_ = steady_now;
      idle_upkeep_done_ = false;
    }
  }
  for (std::size_t i = 0; i < settlements.size(); ++i) {
    if (!applied[i]) {
      observability::log_info(log_prefix_ + "the settlement of message '" +
                              settlements[i].state->row.message.message_id +
                              "' was dropped: its lease had expired and the row went back to "
                              "the queue (it is handled again)");
    }
  }
  settlements.clear();
  for (std::size_t c = 0; c < claims.size(); ++c) {
    if (!deliveries[c].empty())
      subscribers_[claims[c].subscriber]->subscription.sink->deliver_all(deliveries[c]);
  }
  return true;
}

void TableQueueTransport::heartbeat() {
  std::vector<std::shared_ptr<ClaimedState>> states;
  std::vector<std::size_t> owners;
  {
    std::lock_guard lock(mutex_);
    states.reserve(held_.size());
    owners.reserve(held_.size());
    for (const auto& held : held_) {
      states.push_back(held.state);
      owners.push_back(held.subscriber);
    }
  }
  if (states.empty())
    return;
  std::vector<RowLease> leases;
  leases.reserve(states.size());
  for (const auto& state : states)
    leases.push_back(state->row.lease);
  std::vector<bool> kept;
  {
    std::lock_guard db(db_mutex_);
    try {
      DatabaseTransaction transaction(*database_);
      kept = database_->extend_all(leases, options_.lease);
      transaction.commit();
    } catch (const QueueDatabaseError& e) {
      note_write(false, e.what());
      return;
    }
  }
  // A row settled meanwhile is marked too: nothing reads the mark of a settled row. Those still
  // held are counted as lost: their worker's place is taken, but not by a row that can run into
  // another (a suspect may be claimed beside them, claim_suspect).
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (kept[i] || states[i]->stale.exchange(true))
      continue;
    if (states[i]->held_slot != ClaimedState::kNotHeld)
      ++subscribers_[owners[i]]->lost;
  }
}

void TableQueueTransport::rescue() {
  int moved = 0;
  {
    std::lock_guard db(db_mutex_);
    try {
      DatabaseTransaction transaction(*database_);
      moved = database_->rescue();
      transaction.commit();
    } catch (const QueueDatabaseError& e) {
      note_write(false, e.what());
      return;
    }
  }
  {
    std::lock_guard lock(mutex_);
    for (auto& subscriber : subscribers_)
      subscriber->suspects_maybe = true;
  }
  if (moved == 0)
    return;
  observability::log_info(log_prefix_ + std::to_string(moved) +
                          " rows whose host died or whose lease expired went back to pending");
  {
    std::lock_guard lock(mutex_);
    for (auto& subscriber : subscribers_)
      subscriber->maybe_ready = true;
    wake_requested_ = true;
  }
  // Some may have been this process's own (its engine stalled past the lease): their deliveries
  // are stale before the rows can be claimed again.
  heartbeat();
}

void TableQueueTransport::prune() {
  // Done rows are deleted in chunks, one transaction each, so that a big backlog of done rows
  // never holds a write lock for long.
  const int chunk = database_->prune_chunk();
  for (;;) {
    int deleted = 0;
    {
      std::lock_guard db(db_mutex_);
      try {
        DatabaseTransaction transaction(*database_);
        deleted = database_->prune_done(options_.retention, chunk);
        transaction.commit();
      } catch (const QueueDatabaseError& e) {
        note_write(false, e.what());
        return;
      }
    }
    if (deleted < chunk)
      return;
  }
}

void TableQueueTransport::poll_other_processes() {
  {
    std::lock_guard db(db_mutex_);
    try {
      if (!database_->changed_elsewhere())
        return;
    } catch (const QueueDatabaseError& e) {
      note_write(false, e.what());
      return;
    }
  }
  std::lock_guard lock(mutex_);
  for (auto& subscriber : subscribers_)
    subscriber->maybe_ready = true;
  wake_requested_ = true;
}

void TableQueueTransport::on_database_changed() {
  std::lock_guard lock(mutex_);
  for (auto& subscriber : subscribers_)
    subscriber->maybe_ready = true;
  wake_requested_ = true;
  wake_.notify_all();
}

void TableQueueTransport::upkeep_when_idle() {
  {
    std::lock_guard lock(mutex_);
    if (idle_upkeep_done_ || Clock::now() - last_activity_ < kUpkeepAfterIdle)
      return;
    idle_upkeep_done_ = true;
  }
  bool done = false;
  {
    std::lock_guard db(db_mutex_);
    done = database_->when_idle();
  }
  if (!done) {
    std::lock_guard lock(mutex_);
    idle_upkeep_done_ = false;
  }
}

void TableQueueTransport::publish_census() {
  if (metrics_ == nullptr)
    return;
  std::map<std::string, QueueCensus> census;
  std::optional<double> oldest_transaction;
  {
    std::lock_guard db(db_mutex_);
    try {
      census = database_->census();
      oldest_transaction = database_->oldest_transaction_seconds();
    } catch (const QueueDatabaseError& e) {
      note_write(false, e.what());
      return;
    }
  }
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  for (const auto& [queue, counts] : census) {
    metrics_->queue_depth(queue, "pending").Set(static_cast<double>(counts.pending));
    metrics_->queue_depth(queue, "running").Set(static_cast<double>(counts.running));
    metrics_->queue_depth(queue, "done").Set(static_cast<double>(counts.done));
    metrics_->queue_depth(queue, "dead").Set(static_cast<double>(counts.dead));
    const double waited =
        counts.oldest_ready_due ? static_cast<double>(now - *counts.oldest_ready_due) / 1000.0 : 0;
    metrics_->queue_oldest_pending_seconds(queue).Set(std::max(waited, 0.0));
  }
  // A queue that emptied out of the table (pruned) reads zero, not its last value.
  for (const auto& subscriber : subscribers_) {
    const std::string& queue = subscriber->subscription.queue;
    if (census.contains(queue))
      continue;
    for (const char* status : {"pending", "running", "done", "dead"})
      metrics_->queue_depth(queue, status).Set(0);
    metrics_->queue_oldest_pending_seconds(queue).Set(0);
  }
  if (oldest_transaction)
    note_oldest_transaction(*oldest_transaction);
}

void TableQueueTransport::note_oldest_transaction(double seconds) {
  metrics_->queue_xmin_age_seconds().Set(seconds);
  const bool over = seconds >= static_cast<double>(kOldTransactionWarning.count());
  if (over && !warned_old_transaction_) {
    observability::log_warn(
        log_prefix_ + "a transaction on the database has been open for " +
        std::to_string(std::lround(seconds)) +
        " s and holds back the cleanup of done rows: claims slow down as dead rows pile up "
        "(find it in pg_stat_activity; idle_in_transaction_session_timeout ends such sessions)");
  }
  warned_old_transaction_ = over;
}

void TableQueueTransport::hold(std::size_t subscriber, std::shared_ptr<ClaimedState> state) {
  state->held_slot = held_.size();
  held_.push_back(Held{subscriber, std::move(state)});
}

void TableQueueTransport::unhold(const ClaimedState& state) {
  const std::size_t slot = state.held_slot;
  if (slot == ClaimedState::kNotHeld)
    return;  // given back at close already
  if (slot + 1 != held_.size()) {
    held_[slot] = std::move(held_.back());
    held_[slot].state->held_slot = slot;
  }
  held_.pop_back();
  state.held_slot = ClaimedState::kNotHeld;
}

void TableQueueTransport::release_held() {
  std::vector<Held> held;
  {
    std::lock_guard lock(mutex_);
    held.swap(held_);
    for (auto& row : held)
      row.state->held_slot = ClaimedState::kNotHeld;
  }
  if (held.empty())
    return;
  std::lock_guard db(db_mutex_);
  try {
    DatabaseTransaction transaction(*database_);
    for (const auto& row : held)
      database_->release(row.state->row.lease);
    transaction.commit();
  } catch (const QueueDatabaseError& e) {
    observability::log_warn(log_prefix_ +
                            "unsettled rows could not be given back at close (they return when "
                            "their leases expire): " +
                            e.what());
  }
}

void TableQueueTransport::note_write(bool ok, const std::string& what) {
  if (ok) {
    if (!healthy_.exchange(true))
      observability::log_info(log_prefix_ + "the database takes writes again");
    return;
  }
  if (healthy_.exchange(false))
    observability::log_error(log_prefix_ + what + "; nothing is lost, retrying");
}

}  // namespace warren::queue
