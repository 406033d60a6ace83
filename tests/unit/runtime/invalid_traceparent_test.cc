// Issue 19 item 17: a message whose traceparent is present but invalid (upper-case hex, garbage)
// must start one trace that follows it through all its attempts, as a message without one does.
// The dispatcher used to add its trace only when no traceparent was there at all, so each attempt
// read the same invalid header and started yet another trace, and the retried and dead-lettered
// copies kept the invalid header. Now the copies carry a valid traceparent of the host's trace
// (the invalid one kept as x-warren-invalid-traceparent). Driven through the real dispatcher and
// the in-memory transport's retry and dead-letter paths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "eventually.h"
#include "in_process_plugin.h"
#include "observability/log.h"
#include "observability/metrics.h"
#include "runtime/dispatcher.h"
#include "runtime/in_memory_transport.h"

namespace warren::runtime {
namespace {

using namespace std::chrono_literals;
using testing_support::InProcessPlugin;

constexpr auto kPatience = 60s;
constexpr std::uint32_t kAttempts = 3;

// What the handler saw as the message's traceparent, attempt by attempt.
std::mutex g_seen_mutex;
std::vector<std::string> g_seen;

class AlwaysFails final : public warren::Handler {
 public:
  explicit AlwaysFails(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    std::lock_guard lock(g_seen_mutex);
    g_seen.push_back(msg.header("traceparent").value_or("(none)"));
    throw std::runtime_error("always");
  }
};

// The consumer of the dead-letter queue: keeps what arrives and acks it.
class DeadLetterInbox final : public transport::DeliverySink {
 public:
  void deliver(std::unique_ptr<transport::Delivery> delivery) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(delivery->message());
    delivery->settle(transport::Settlement::ack());
  }
  std::vector<transport::InboundMessage> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<transport::InboundMessage> messages_;
};

config::Config work_and_dead_queues() {
  config::Config config;
  config.exchanges.push_back({});
  config.exchanges.back().name = "dlx";
  config.exchanges.back().type = config::ExchangeType::fanout;
  config::QueueConfig work;
  work.name = "work";
  work.type = config::QueueType::classic;
  work.dead_letter_exchange = "dlx";
  config.queues.push_back(work);
  config::QueueConfig dead;
  dead.name = "dead";
  dead.type = config::QueueType::classic;
  dead.bindings.push_back({"dlx", "", {}});
  config.queues.push_back(dead);
  return config;
}

bool is_valid_traceparent(const std::string& value) {
  static const std::regex format("00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}");
  return std::regex_match(value, format);
}

std::string trace_id_of(const std::string& traceparent) {
  return traceparent.substr(3, 32);
}

// The trace ids of the JSON log lines about message `id`.
std::set<std::string> logged_trace_ids(const std::string& log, const std::string& id) {
  std::set<std::string> ids;
  const std::regex line("\"message_id\":\"" + id +
                        "\",\"attempt\":\\d+,\"trace_id\":\"([0-9a-f]+)\"");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
    ids.insert((*it)[1].str());
  return ids;
}

struct Journey {
  std::vector<std::string> seen;        // traceparent per attempt, as the handler saw it
  std::set<std::string> log_trace_ids;  // on the "will retry" and "dead-lettering" lines
  transport::InboundMessage dead_letter;
};

// One message with `traceparent` through kAttempts failing attempts into the dead-letter queue.
Journey follow(const std::string& traceparent) {
  {
    std::lock_guard lock(g_seen_mutex);
    g_seen.clear();
  }
  const config::Config config = work_and_dead_queues();
  InMemoryTransport transport(config, 5s);
  DispatcherOptions options;
  options.worker = "traced";
  options.queue = "work";
  options.retry.max_attempts = kAttempts;
  options.retry.backoff = config::RetryPolicy::Backoff::none;
  observability::Metrics metrics;
  WorkerContext context(options.worker, "always_fails", {}, metrics);
  const plugin::HandlerInstance handler(InProcessPlugin::of<AlwaysFails>("always_fails"), context);
  const auto worker_metrics = metrics.worker(options.worker, options.queue);
  Dispatcher dispatcher(options, handler, context, &transport, worker_metrics, nullptr);
  dispatcher.start();
  DeadLetterInbox inbox;
  transport.start({transport::Subscription{"traced", "work", 20, &dispatcher, ""},
                   transport::Subscription{"inbox", "dead", 20, &inbox, ""}});

  observability::configure_logging("info", observability::LogFormat::json);
  ::testing::internal::CaptureStderr();
  transport::InboundMessage message;
  message.message_id = "m-1";
  message.headers = {{"traceparent", traceparent}, {"tracestate", "vendor=1"}};
  transport.enqueue("work", std::move(message));
  const bool dead = test_support::eventually([&] { return !inbox.messages().empty(); }, kPatience);
  transport.stop_consuming();
  dispatcher.drain(std::chrono::steady_clock::now() + 10s);
  const std::string log = ::testing::internal::GetCapturedStderr();
  observability::configure_logging("info", observability::LogFormat::text);
  transport.close();

  EXPECT_TRUE(dead) << "never dead-lettered";
  Journey journey;
  {
    std::lock_guard lock(g_seen_mutex);
    journey.seen = g_seen;
  }
  journey.log_trace_ids = logged_trace_ids(log, "m-1");
  if (dead)
    journey.dead_letter = inbox.messages().front();
  return journey;
}

class InvalidTraceparent : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidTraceparent, OneTraceFollowsTheMessageAcrossRetriesAndIntoTheDeadLetter) {
  const std::string invalid = GetParam();
  const Journey journey = follow(invalid);

  ASSERT_EQ(journey.seen.size(), kAttempts);
  EXPECT_EQ(journey.seen[0], invalid) << "the first attempt sees the message as published";
  ASSERT_TRUE(is_valid_traceparent(journey.seen[1])) << journey.seen[1];
  EXPECT_EQ(journey.seen[2].substr(0, 36), journey.seen[1].substr(0, 36))
      << "the second retry carries the trace of the first";
  const std::string trace_id = trace_id_of(journey.seen[1]);
  EXPECT_EQ(journey.log_trace_ids, std::set<std::string>{trace_id})
      << "every log line of every attempt carries the one trace id";

  const auto traceparent = transport::find_header(journey.dead_letter.headers, "traceparent");
  ASSERT_TRUE(traceparent);
  EXPECT_TRUE(is_valid_traceparent(std::string(*traceparent))) << *traceparent;
  EXPECT_EQ(trace_id_of(std::string(*traceparent)), trace_id);
  EXPECT_EQ(transport::find_header(journey.dead_letter.headers, "x-warren-invalid-traceparent"),
            invalid)
      << "the invalid header is kept, under another name";
}

INSTANTIATE_TEST_SUITE_P(
    UpperCaseAndGarbage, InvalidTraceparent,
    ::testing::Values("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "garbage"),
    [](const ::testing::TestParamInfo<std::string>& param) {
      return param.index == 0 ? std::string("UpperCaseHex") : std::string("Garbage");
    });

TEST(ValidTraceparent, IsKeptUnchangedAcrossRetriesAndIntoTheDeadLetter) {
  const std::string valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const Journey journey = follow(valid);

  EXPECT_THAT(journey.seen, ::testing::Each(valid));
  EXPECT_EQ(journey.log_trace_ids, std::set<std::string>{"4bf92f3577b34da6a3ce929d0e0e4736"});
  EXPECT_EQ(transport::find_header(journey.dead_letter.headers, "traceparent"), valid);
  EXPECT_EQ(transport::find_header(journey.dead_letter.headers, "tracestate"), "vendor=1");
  EXPECT_FALSE(transport::find_header(journey.dead_letter.headers, "x-warren-invalid-traceparent"));
}

}  // namespace
}  // namespace warren::runtime
