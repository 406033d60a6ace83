// See sqlite_transport.h. Lock order: db_mutex_ before mutex_, never the other way round; the
// engine never holds mutex_ while it waits for the database.
#include "queue/sqlite_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "observability/log.h"
#include "queue/round_pacing.h"
#include "queue/sqlite_queue_census.h"
#include "queue/sqlite_schema.h"
#include "transport/brief_spin.h"
#include "transport/ids.h"

namespace warren::queue {
namespace {

using namespace std::chrono_literals;

// Done rows are deleted in chunks of this many, one transaction each, so that a big backlog of
// done rows never holds the write lock for long.
constexpr int kPruneChunk = 1000;
// The WAL is truncated once the queue has been idle this long.
constexpr auto kCheckpointAfterIdle = 1s;
// How often rows of dead owners and expired leases are looked for.
constexpr auto kRescueInterval = 1s;
// Back-off while the database refuses writes (busy, full, read-only), doubling up to the max.
constexpr auto kRetryInitial = 100ms;
constexpr auto kRetryMax = 5s;
// How often warren_queue_depth and warren_queue_oldest_pending_seconds are refreshed (a count over
// the table: not per round).
constexpr auto kCensusInterval = 10s;
// A settlement waits at most this long to be written with others in one transaction, unless its
// worker would otherwise run dry (see settle()).
constexpr auto kSettleCoalesce = 2ms;
// The engine's page cache, in KiB. Claims and settlements touch the head of the ready index, the
// rows just claimed and the tails of the other indexes: a few dozen pages. SQLite's default
// (2 MiB) only adds to the host's resident memory; the operating system caches the file anyway.
constexpr int kCacheKib = 512;

}  // namespace

std::string lease_owner_for(const std::string& host_name) {
  return host_name + "/" + std::to_string(::getpid());
}

struct SqliteTransport::Subscriber {
  transport::Subscription subscription;
  std::size_t unsettled = 0;             // handed to the sink, not written settled yet
  std::size_t queued = 0;                // of those, settled by the runtime, awaiting a round
  bool maybe_ready = true;               // rows may be waiting: worth a claim
  std::optional<Clock::time_point> due;  // when the next pending row falls due
  RoundPacing pacing;                    // overlap or whole batches (round_pacing.h)
};

class SqliteTransport::RowDelivery final : public transport::Delivery {
 public:
  RowDelivery(SqliteTransport& transport, std::size_t subscriber,
              std::shared_ptr<const ClaimedState> state)
      : transport_(transport), subscriber_(subscriber), state_(std::move(state)) {}

  const transport::InboundMessage& message() const noexcept override { return state_->row.message; }
  bool stale() const noexcept override { return state_->stale.load(); }
  void settle(const transport::Settlement& settlement) override {
    transport_.settle(Settling{state_, subscriber_, settlement});
  }

 private:
  SqliteTransport& transport_;
  const std::size_t subscriber_;
  const std::shared_ptr<const ClaimedState> state_;
};

SqliteTransport::SqliteTransport(SqliteQueueOptions options, transport::RoutingTable routing,
                                 observability::Health* health, observability::Metrics* metrics)
    : options_(std::move(options)), routing_(std::move(routing)), metrics_(metrics) {
  try {
    SqliteOpenOptions open;
    open.path = options_.path;
    open.synchronous_full = options_.synchronous_full;
    open.busy_timeout = options_.busy_timeout;
    connection_ = std::make_unique<SqliteConnection>(open);
    connection_->exec("PRAGMA cache_size = -" + std::to_string(kCacheKib));
    // The table's CHECK (status IN (...)) is for other writers: the engine's statements only
    // write status literals it allows. SQLite 3.40 checks that IN list by building a temporary
    // b-tree for every row an UPDATE touches, a fifth of the CPU of a settlement. Other
    // connections to the file still check.
    connection_->exec("PRAGMA ignore_check_constraints = ON");
    ensure_sqlite_schema(*connection_);
    store_ = std::make_unique<SqliteQueueStore>(*connection_, options_.owner);
    data_version_ = connection_->data_version();
  } catch (const SqliteError& e) {
    throw transport::TransportError(e.what());
  }
  if (health != nullptr)
    loop_heartbeat_ = health->register_loop("sqlite queue engine", std::chrono::seconds(60));
}

SqliteTransport::~SqliteTransport() {
  close();
}

void SqliteTransport::start(const std::vector<transport::Subscription>& subscriptions) {
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
  engine_ = std::thread([this] { run(); });
}

void SqliteTransport::stop_consuming() {
  std::unique_lock lock(mutex_);
  consuming_ = false;
  // A round that began before this call may still be claiming: wait until it handed over what
  // it claimed, so that nothing is delivered once this returns.
  wake_.wait(lock, [&] { return !in_round_; });
}

void SqliteTransport::close() {
  if (started_.exchange(false)) {
    stop_consuming();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (engine_.joinable())
      engine_.join();
  }
  // What the workers settled since the engine's last round, then the rows still held go back.
  std::vector<Settling> last;
  {
    std::lock_guard lock(mutex_);
    last.swap(settlements_);
  }
  if (!last.empty() && !round(last)) {
    observability::log_error("sqlite queue: " + std::to_string(last.size()) +
                             " settlements could not be written at close; those rows go back to "
                             "pending when their leases expire");
  }
  release_held();
  if (loop_heartbeat_)
    loop_heartbeat_->retire();
}

bool SqliteTransport::ready() const noexcept {
  return started_.load() && healthy_.load() && consuming_.load();
}

void SqliteTransport::publish(const transport::OutboundMessage& message) {
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
      WriteTransaction transaction(*connection_);
      const std::int64_t now = now_ms();
      for (const auto& queue : queues)
        store_->insert(queue, message, message_id, now);
      transaction.commit();
    } catch (const SqliteError& e) {
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

void SqliteTransport::settle(Settling settling) {
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

void SqliteTransport::run() {
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
      want_claim = want_claim || (consuming_ && subscriber->maybe_ready &&
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
      checkpoint_when_idle();
    }

    if (!ok)
      checkpoint_after_failure();

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

std::vector<bool> SqliteTransport::write_settlements(const std::vector<Settling>& settlements,
                                                     std::int64_t now) {
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
      applied[i] = store_->settle(s.state->row.lease, s.state->row.message, s.settlement,
                                  s.state->row.max_attempts, now);
    }
  }
  const std::vector<bool> acked = store_->ack_all(acks, now);
  for (std::size_t a = 0; a < acks.size(); ++a)
    applied[ack_positions[a]] = acked[a];
  return applied;
}

bool SqliteTransport::round(std::vector<Settling>& settlements) {
  struct Claim {
    std::size_t subscriber;
    int asked;
    std::vector<ClaimedRow> rows;
  };
  std::vector<Claim> claims;
  // How many of this round's settlements are each worker's: their rows' places are free for the
  // claim, and RoundPacing measures by them.
  std::vector<int> settled_here(subscribers_.size(), 0);
  for (const auto& s : settlements)
    ++settled_here[s.subscriber];
  std::vector<bool> applied;
  std::vector<std::pair<std::size_t, std::optional<std::int64_t>>> due_of_short;
  {
    std::lock_guard db(db_mutex_);
    try {
      WriteTransaction transaction(*connection_);
      const std::int64_t now = now_ms();
      applied = write_settlements(settlements, now);
      std::vector<std::pair<std::size_t, int>> wanted;
      {
        std::lock_guard lock(mutex_);
        // This transaction's settlements free their rows' places before it claims.
        for (std::size_t i = 0; i < subscribers_.size(); ++i) {
          const Subscriber& subscriber = *subscribers_[i];
          const int room = static_cast<int>(subscriber.subscription.prefetch) -
                           static_cast<int>(subscriber.unsettled) + settled_here[i];
          if (consuming_ && subscriber.maybe_ready && room > 0)
            wanted.emplace_back(i, room);
        }
      }
      for (const auto& [index, room] : wanted) {
        const std::string& queue = subscribers_[index]->subscription.queue;
        Claim claim{index, room, store_->claim(queue, room, now, now + options_.lease.count())};
        for (const auto& row : claim.rows) {
          if (!row.malformed.empty())
            store_->bury(row.lease, "malformed row: " + row.malformed, now);
        }
        if (static_cast<int>(claim.rows.size()) < room)
          due_of_short.emplace_back(index, store_->next_due(queue));
        claims.push_back(std::move(claim));
      }
      transaction.commit();
    } catch (const SqliteError& e) {
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
        observability::log_warn("sqlite queue: message '" + row.message.message_id +
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
      unhold(*settlements[i].state);
      // A row given back or rescheduled is claimable again: at once, or when its delay ends.
      Subscriber& owner = *subscribers_[settlements[i].subscriber];
      if (owner.unsettled > 0)
        --owner.unsettled;
      using Kind = transport::Settlement::Kind;
      if (applied[i] && settlements[i].settlement.kind == Kind::requeue) {
        owner.maybe_ready = true;
      } else if (applied[i] && settlements[i].settlement.kind == Kind::retry_later) {
        const auto due = steady_now + settlements[i].settlement.delay;
        owner.due = owner.due ? std::min(*owner.due, due) : due;
      }
      if (!applied[i])
        ++stale_settlements_;
    }
    for (const auto& claim : claims) {
      const bool backlog = static_cast<int>(claim.rows.size()) >= claim.asked;
      RoundPacing& pacing = subscribers_[claim.subscriber]->pacing;
      const auto before = pacing.mode();
      pacing.record_round(static_cast<std::size_t>(settled_here[claim.subscriber]), backlog,
                          steady_now);
      if (pacing.mode() != before && observability::log_enabled(observability::LogLevel::debug)) {
        observability::log_debug(
            "sqlite queue: worker '" + subscribers_[claim.subscriber]->subscription.worker +
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
      for (auto& state : claimed[c])
        hold(claims[c].subscriber, std::move(state));
      subscribers_[claims[c].subscriber]->unsettled += claimed[c].size();
    }
    const std::int64_t wall_now = now_ms();
    for (const auto& [index, due] : due_of_short) {
      Subscriber& subscriber = *subscribers_[index];
      subscriber.maybe_ready = false;
      if (due) {
        subscriber.due =
            steady_now + std::chrono::milliseconds(std::max<std::int64_t>(*due - wall_now, 0));
      } else {
        subscriber.due.reset();
      }
    }
    if (!settlements.empty() || delivering) {
      last_activity_ = steady_now;
      checkpointed_ = false;
    }
  }
  for (std::size_t i = 0; i < settlements.size(); ++i) {
    if (!applied[i]) {
      observability::log_info("sqlite queue: the settlement of message '" +
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

void SqliteTransport::heartbeat() {
  std::vector<std::shared_ptr<ClaimedState>> states;
  {
    std::lock_guard lock(mutex_);
    states.reserve(held_.size());
    for (const auto& held : held_)
      states.push_back(held.state);
  }
  if (states.empty())
    return;
  std::vector<ClaimedState*> lost;
  {
    std::lock_guard db(db_mutex_);
    try {
      WriteTransaction transaction(*connection_);
      const std::int64_t until = now_ms() + options_.lease.count();
      for (const auto& state : states) {
        if (!store_->extend(state->row.lease, until))
          lost.push_back(state.get());
      }
      transaction.commit();
    } catch (const SqliteError& e) {
      note_write(false, e.what());
      return;
    }
  }
  // A row settled meanwhile is marked too: nothing reads the mark of a settled row.
  for (ClaimedState* state : lost)
    state->stale.store(true);
}

void SqliteTransport::rescue() {
  int moved = 0;
  {
    std::lock_guard db(db_mutex_);
    try {
      WriteTransaction transaction(*connection_);
      moved = store_->rescue(now_ms());
      transaction.commit();
    } catch (const SqliteError& e) {
      note_write(false, e.what());
      return;
    }
  }
  if (moved == 0)
    return;
  observability::log_info("sqlite queue: " + std::to_string(moved) +
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

void SqliteTransport::prune() {
  for (;;) {
    int deleted = 0;
    {
      std::lock_guard db(db_mutex_);
      try {
        WriteTransaction transaction(*connection_);
        deleted = store_->prune_done(now_ms() - options_.retention.count(), kPruneChunk);
        transaction.commit();
      } catch (const SqliteError& e) {
        note_write(false, e.what());
        return;
      }
    }
    if (deleted < kPruneChunk)
      return;
  }
}

void SqliteTransport::poll_other_processes() {
  std::int64_t version = 0;
  {
    std::lock_guard db(db_mutex_);
    try {
      version = connection_->data_version();
    } catch (const SqliteError& e) {
      note_write(false, e.what());
      return;
    }
    if (version == data_version_)
      return;
    data_version_ = version;
  }
  std::lock_guard lock(mutex_);
  for (auto& subscriber : subscribers_)
    subscriber->maybe_ready = true;
  wake_requested_ = true;
}

void SqliteTransport::checkpoint_when_idle() {
  {
    std::lock_guard lock(mutex_);
    if (checkpointed_ || Clock::now() - last_activity_ < kCheckpointAfterIdle)
      return;
    checkpointed_ = true;
  }
  std::lock_guard db(db_mutex_);
  try {
    connection_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const SqliteError&) {
    // Busy with another process's reader: the next idle moment tries again.
    std::lock_guard lock(mutex_);
    checkpointed_ = false;
  }
}

void SqliteTransport::publish_census() {
  if (metrics_ == nullptr)
    return;
  std::map<std::string, QueueCensus> census;
  const std::int64_t now = now_ms();
  {
    std::lock_guard db(db_mutex_);
    try {
      census = take_queue_census(*connection_, now);
    } catch (const SqliteError& e) {
      note_write(false, e.what());
      return;
    }
  }
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
}

void SqliteTransport::checkpoint_after_failure() {
  // A full disk can be the write-ahead log's own doing: it grows until a checkpoint copies it
  // into the database, and the automatic one waits for 1000 pages. Copying it now and truncating
  // it gives the space back, so the next round can commit without anyone freeing space.
  std::lock_guard db(db_mutex_);
  try {
    connection_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const SqliteError&) {
    // Still no room, or busy: the next failed round tries again.
  }
}

void SqliteTransport::hold(std::size_t subscriber, std::shared_ptr<ClaimedState> state) {
  state->held_slot = held_.size();
  held_.push_back(Held{subscriber, std::move(state)});
}

void SqliteTransport::unhold(const ClaimedState& state) {
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

void SqliteTransport::release_held() {
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
    WriteTransaction transaction(*connection_);
    for (const auto& row : held)
      store_->release(row.state->row.lease);
    transaction.commit();
  } catch (const SqliteError& e) {
    observability::log_warn(std::string("sqlite queue: unsettled rows could not be given back at "
                                        "close (they return when their leases expire): ") +
                            e.what());
  }
}

void SqliteTransport::note_write(bool ok, const std::string& what) {
  if (ok) {
    if (!healthy_.exchange(true))
      observability::log_info("sqlite queue: the database takes writes again");
    return;
  }
  if (healthy_.exchange(false))
    observability::log_error("sqlite queue: " + what + "; nothing is lost, retrying");
}

}  // namespace warren::queue
