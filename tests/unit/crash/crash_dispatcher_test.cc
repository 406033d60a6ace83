// Specification of crash accounting in a running dispatcher, with a real crash journal and ledger
// in a temporary state directory and the real handler path: a running handler's slot holds its
// message; the next start blames only those; a suspect runs alone and is cleared when it
// succeeds; one at max_crashes is dead-lettered unrun with the reason and x-warren-crashes; a
// state directory that cannot hold the journal or a corrupt journal is a warning, not a failure.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "crash_test_support.h"
#include "eventually.h"
#include "fake_delivery.h"
#include "in_process_plugin.h"
#include "observability/log.h"
#include "observability/metrics.h"
#include "runtime/dispatcher.h"

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::identity;
using ::testing::Pair;
using testing::read_bytes;
using testing::write_bytes;
using testing_support::FakeDelivery;
using testing_support::InProcessPlugin;
using testing_support::SettlementLog;

// ---- A handler that holds "blocker-*" messages until released and watches how many handlers
// of the worker run at once while "suspect" runs.
struct Watched {
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  int inside = 0;
  int blockers_inside = 0;
  int most_beside_suspect = 0;  // other handlers seen running while the suspect ran
  bool suspect_inside = false;
  int others_during_suspect = 0;  // handlers that started while the suspect ran
  std::multiset<std::string> handled;
  std::function<void(const std::string&)> on_enter;  // called as each handler begins
};
Watched* g_watched = nullptr;

class Watching final : public warren::Handler {
 public:
  explicit Watching(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    Watched& w = *g_watched;
    const std::string id(msg.message_id());
    if (w.on_enter)
      w.on_enter(id);
    std::unique_lock lock(w.mutex);
    ++w.inside;
    w.handled.insert(id);
    if (w.suspect_inside)
      ++w.others_during_suspect;
    if (id == "suspect") {
      w.suspect_inside = true;
      w.most_beside_suspect = std::max(w.most_beside_suspect, w.inside - 1);
    }
    if (id.starts_with("blocker")) {
      ++w.blockers_inside;
      w.changed.notify_all();
      w.changed.wait(lock, [&] { return w.released; });
    }
    if (id == "suspect") {
      w.most_beside_suspect = std::max(w.most_beside_suspect, w.inside - 1);
      w.suspect_inside = false;
    }
    --w.inside;
    return warren::Outcome::ack();
  }
};

// Tells when a dispatcher thread took `id` from the inbox: the duplicate check comes just before
// the crash check and the gate.
class TakenSignal final : public DuplicateFilter {
 public:
  explicit TakenSignal(std::string id) : id_(std::move(id)) {}
  // Never a duplicate: a claim that records nothing.
  class Unrecorded final : public ProcessingClaim {
   public:
    void processed() override {}
  };
  std::unique_ptr<ProcessingClaim> claim(const transport::InboundMessage& message) override {
    if (message.message_id == id_) {
      std::lock_guard lock(mutex_);
      taken_ = true;
      changed_.notify_all();
    }
    return std::make_unique<Unrecorded>();
  }
  bool wait() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return taken_; });
  }

 private:
  const std::string id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool taken_ = false;
};

class CrashDispatcherTest : public ::testing::Test {
 protected:
  CrashDispatcherTest() {
    g_watched = &watched_;
    config_.host.name = "crash-test";
    config_.host.state_dir = dir_.path();
    config::WorkerConfig worker;
    worker.name = "w";
    worker.plugin = "watching";
    worker.queue = "q";
    worker.prefetch = 20;
    worker.concurrency = 4;
    worker.max_crashes = 3;
    config_.workers.push_back(worker);
  }
  ~CrashDispatcherTest() override { g_watched = nullptr; }

  std::filesystem::path journal_file() const {
    return CrashWatch::journal_path(config_.host.state_dir, config_.host.name);
  }
  std::filesystem::path ledger_file() const {
    return CrashWatch::ledger_path(config_.host.state_dir, config_.host.name);
  }

  // As a previous run would have left it: `id` crashed the host `crashes` times.
  void seed_ledger(const std::string& id, int crashes) const {
    CrashLedger ledger(ledger_file());
    for (int i = 0; i < crashes; ++i)
      ledger.record_crashes({identity(id)}, SIGSEGV, CrashLedger::Clock::now());
    ASSERT_THAT(ledger.save(), ::testing::IsEmpty());
  }

  // A dispatcher of worker "w" with crash accounting on (and `filter`).
  std::unique_ptr<Dispatcher> dispatcher(DuplicateFilter* filter = nullptr) {
    watch_ = CrashWatch::start(config_, metrics_);
    if (!watch_)
      throw std::runtime_error("no crash watch");
    DispatcherOptions options;
    options.worker = "w";
    options.queue = "q";
    options.concurrency = 4;
    options.max_crashes = 3;
    auto dispatcher = std::make_unique<Dispatcher>(options, handler_, worker_, nullptr,
                                                   metrics_.worker("w", "q"), nullptr);
    dispatcher->set_crash_hooks({watch_.get(), 0, &metrics_.dead_lettered("w", "crash")});
    dispatcher->set_duplicate_filter(filter);
    dispatcher->start();
    return dispatcher;
  }

  // Starts the crash watch as a host does (watch_, nullptr when it cannot run); returns what it
  // logged.
  std::string start_watch() {
    ::testing::internal::CaptureStderr();
    watch_ = CrashWatch::start(config_, metrics_);
    return ::testing::internal::GetCapturedStderr();
  }

  std::vector<CrashIdentity> running_in_journal() const {
    const auto parsed = journal_format::parse(read_bytes(journal_file()));
    std::vector<CrashIdentity> running;
    for (const auto& entry : std::get<journal_format::Snapshot>(parsed).running)
      running.push_back(entry.identity);
    std::sort(running.begin(), running.end());
    return running;
  }

  void wait_for_blockers(int count) {
    std::unique_lock lock(watched_.mutex);
    ASSERT_TRUE(
        watched_.changed.wait_for(lock, 10s, [&] { return watched_.blockers_inside == count; }));
  }
  bool suspect_started() {
    std::lock_guard lock(watched_.mutex);
    return watched_.handled.count("suspect") > 0;
  }
  void release_blockers() {
    std::lock_guard lock(watched_.mutex);
    watched_.released = true;
    watched_.changed.notify_all();
  }

  test_support::TempDir dir_;
  config::Config config_;
  Watched watched_;
  observability::Metrics metrics_;
  WorkerContext worker_{"w", "watching", {}, metrics_};
  const plugin::HandlerInstance handler_{InProcessPlugin::of<Watching>("watching"), worker_};
  std::unique_ptr<CrashWatch> watch_;
  SettlementLog log_;
};

TEST_F(CrashDispatcherTest, RunningHandlers_HaveTheirMessagesInTheJournal_ClearedWhenTheyReturn) {
  auto workers = dispatcher();
  for (const char* id : {"blocker-1", "blocker-2", "blocker-3"})
    workers->deliver(FakeDelivery::make(id, log_));
  wait_for_blockers(3);

  EXPECT_THAT(running_in_journal(),
              ElementsAre(identity("blocker-1"), identity("blocker-2"), identity("blocker-3")));
  release_blockers();
  ASSERT_TRUE(log_.wait_for_count(3, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
  EXPECT_THAT(running_in_journal(), ::testing::IsEmpty());
  watch_->stop();
  EXPECT_FALSE(std::filesystem::exists(journal_file())) << "a clean stop leaves no journal";
}

TEST_F(CrashDispatcherTest, Suspect_RunsAloneThenSucceedsAndIsCleared) {
  seed_ledger("suspect", 1);
  TakenSignal suspect_taken("suspect");
  auto workers = dispatcher(&suspect_taken);
  for (const char* id : {"blocker-1", "blocker-2", "blocker-3"})
    workers->deliver(FakeDelivery::make(id, log_));
  wait_for_blockers(3);
  // The fourth thread takes the suspect while three handlers run: it must wait for them.
  workers->deliver(FakeDelivery::make("suspect", log_));
  ASSERT_TRUE(suspect_taken.wait());
  // Then it either waits at the gate, or (were the gate broken) runs beside the blockers.
  ASSERT_TRUE(test_support::eventually(
      [&] { return workers->suspects_waiting() > 0 || suspect_started(); }, 10s));
  for (const char* id : {"late-1", "late-2", "late-3"})
    workers->deliver(FakeDelivery::make(id, log_));  // must wait while the suspect waits or runs
  release_blockers();
  ASSERT_TRUE(log_.wait_for_count(7, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));

  EXPECT_EQ(watched_.most_beside_suspect, 0) << "another handler ran beside the suspect";
  EXPECT_EQ(watched_.others_during_suspect, 0);
  EXPECT_EQ(watched_.handled.size(), 7u);
  for (const auto& [id, settlement] : log_.entries())
    EXPECT_EQ(settlement.kind, transport::Settlement::Kind::ack) << id;
  EXPECT_FALSE(watch_->suspicion(identity("suspect"))) << "a success clears the suspicion";
  EXPECT_FALSE(std::filesystem::exists(ledger_file())) << "and the ledger has nothing left";
}

// The next suspect may crash the host as soon as it runs, before an earlier suspect's ack has
// left: that earlier one must be cleared by then, or its record outlives a message the broker no
// longer has (found by integration_crash_accounting under load).
TEST_F(CrashDispatcherTest, Suspects_EachClearedBeforeTheNextOneRuns) {
  const std::vector<std::string> suspects{"suspect-1", "suspect-2", "suspect-3"};
  {
    CrashLedger ledger(ledger_file());
    for (const std::string& id : suspects)
      ledger.record_crashes({identity(id)}, SIGSEGV, CrashLedger::Clock::now());
    ASSERT_THAT(ledger.save(), ::testing::IsEmpty());
  }
  log_.settle_time = 100ms;  // acks on a slow wire
  std::mutex mutex;
  std::vector<std::string> entered;
  std::vector<std::string> still_suspected;  // earlier suspects suspected when a later one ran
  watched_.on_enter = [&](const std::string& id) {
    std::lock_guard lock(mutex);
    for (const std::string& earlier : entered)
      if (watch_->suspicion(identity(earlier)))
        still_suspected.push_back(earlier + " when " + id + " ran");
    entered.push_back(id);
  };
  auto workers = dispatcher();
  for (const std::string& id : suspects)
    ASSERT_TRUE(watch_->suspicion(identity(id))) << id;
  for (const std::string& id : suspects)
    workers->deliver(FakeDelivery::make(id, log_));
  ASSERT_TRUE(log_.wait_for_count(suspects.size(), 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));

  EXPECT_THAT(still_suspected, ::testing::IsEmpty());
  EXPECT_EQ(entered.size(), suspects.size());
  EXPECT_FALSE(std::filesystem::exists(ledger_file()));
}

TEST_F(CrashDispatcherTest, AtMaxCrashes_DeadLetteredWithoutRunningWithReasonAndCount) {
  seed_ledger("poison", 3);
  auto workers = dispatcher();
  workers->deliver(FakeDelivery::make("poison", log_));
  workers->deliver(FakeDelivery::make("good", log_));
  ASSERT_TRUE(log_.wait_for_count(2, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));

  EXPECT_EQ(watched_.handled, std::multiset<std::string>{"good"}) << "the poison must not run";
  std::map<std::string, transport::Settlement> settled;
  for (auto& [id, settlement] : log_.entries())
    settled[id] = settlement;
  const transport::Settlement& dead = settled.at("poison");
  EXPECT_EQ(dead.kind, transport::Settlement::Kind::dead_letter);
  EXPECT_EQ(dead.reason, "crash: the host died 3 times while handling this message");
  // Beside it, the traceparent of the trace the host started for this untraced message.
  EXPECT_THAT(dead.extra_headers, Contains(Pair("x-warren-crashes", "3")));
  EXPECT_EQ(dead.worker, "w");
  EXPECT_EQ(settled.at("good").kind, transport::Settlement::Kind::ack);
  EXPECT_EQ(metrics_.dead_lettered("w", "crash").Value(), 1);
  EXPECT_FALSE(watch_->suspicion(identity("poison")))
      << "dead-lettered: a replay from the dead-letter queue starts from nothing";
}

TEST_F(CrashDispatcherTest, BelowMaxCrashes_RunsAgain) {
  seed_ledger("suspect", 2);
  auto workers = dispatcher();
  workers->deliver(FakeDelivery::make("suspect", log_));
  ASSERT_TRUE(log_.wait_for_count(1, 10s));
  EXPECT_TRUE(workers->drain(std::chrono::steady_clock::now() + 10s));
  EXPECT_EQ(watched_.handled.count("suspect"), 1u);
  EXPECT_EQ(log_.entries().at(0).second.kind, transport::Settlement::Kind::ack);
}

// ---- at start
// ------------------------------------------------------------------------------------

TEST_F(CrashDispatcherTest, Start_BlamesOnlyWhatWasInAHandler_WithTheSignal) {
  {
    // The previous run: two messages in handlers when it died of SIGSEGV.
    auto journal = CrashJournal::lock(journal_file());
    journal->start(4);
    journal->enter(0, identity("poison"));
    journal->enter(2, identity("bystander"));
    *journal->fatal_signal_word() = SIGSEGV;
  }
  const std::string log = start_watch();
  ASSERT_TRUE(watch_);

  const auto poison = watch_->suspicion(identity("poison"));
  ASSERT_TRUE(poison);
  EXPECT_EQ(poison->crashes, 1);
  EXPECT_EQ(poison->last_signal, SIGSEGV);
  EXPECT_TRUE(watch_->suspicion(identity("bystander")));
  EXPECT_FALSE(watch_->suspicion(identity("prefetched"))) << "in no slot: not blamed";
  EXPECT_EQ(metrics_.crash_suspects("w").Value(), 2);
  EXPECT_THAT(log, HasSubstr("died of SIGSEGV while message id 'poison'"));
  EXPECT_THAT(log, HasSubstr("it will run alone (max_crashes 3)"));
  EXPECT_TRUE(std::filesystem::exists(ledger_file()));
}

TEST_F(CrashDispatcherTest, Start_AfterThreeDeaths_SaysTheNextDeliveryIsDeadLettered) {
  for (int death = 1; death <= 3; ++death) {
    {
      auto journal = CrashJournal::lock(journal_file());
      journal->start(4);
      journal->enter(1, identity("poison"));
    }
    const std::string log = start_watch();
    ASSERT_TRUE(watch_);
    EXPECT_EQ(watch_->suspicion(identity("poison"))->crashes, death);
    if (death == 3) {
      EXPECT_THAT(log, HasSubstr("at max_crashes (3) it will be dead-lettered without running"));
    }
    watch_.reset();  // dies again: the journal stays
  }
}

TEST_F(CrashDispatcherTest, CorruptJournal_IsDiscardedWithAWarningAndTheHostRuns) {
  write_bytes(journal_file(), std::string(3000, '\x01'));
  const std::string log = start_watch();
  ASSERT_TRUE(watch_) << log;
  EXPECT_THAT(log, HasSubstr("discarded: it does not begin like a crash journal"));
  EXPECT_EQ(metrics_.crash_suspects("w").Value(), 0);
  EXPECT_EQ(read_bytes(journal_file()).size(), journal_format::file_size(4));
}

TEST_F(CrashDispatcherTest, MissingStateDirectory_OneWarningAndNoCrashAccounting) {
  config_.host.state_dir = dir_.path() / "not-there";
  const std::string log = start_watch();
  EXPECT_FALSE(watch_);
  EXPECT_THAT(log, HasSubstr("does not exist"));
  EXPECT_THAT(log, HasSubstr("crash accounting is off for this run"));
}

TEST_F(CrashDispatcherTest, FullStateDirectory_OneWarningAndNoCrashAccounting) {
  testing::SmallTmpfs fs("64k");
  WARREN_SKIP_UNLESS_MOUNTED(fs);
  fs.fill();
  config_.host.state_dir = fs.path();
  const std::string log = start_watch();
  EXPECT_FALSE(watch_);
  EXPECT_THAT(log, HasSubstr("No space left on device"));
  EXPECT_THAT(log, HasSubstr("crash accounting is off for this run"));
}

}  // namespace
}  // namespace warren::runtime
