// The services a handler reaches through PluginContext and Context, backed by the harness:
// settings, worker name, message fields and headers, logging, publishing, stop, metrics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using warren::testing::Harness;
using warren::testing::LogLevel;
using warren::testing::MetricType;
using warren::testing::Result;
using warren::testing::TestMessage;

// Echoes what it can see of its message and worker into one log line per message.
class Inspector final : public warren::Handler {
 public:
  explicit Inspector(warren::PluginContext& ctx)
      : greeting_(ctx.setting("greeting").value_or("<none>")), worker_(ctx.worker_name()) {
    ctx.log_info("started");
  }
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    ctx.log_warn(
        greeting_ + " from " + worker_ + ": body=" + std::string(msg.body()) +
        " key=" + std::string(msg.routing_key()) + " exchange=" + std::string(msg.exchange()) +
        " type=" + std::string(msg.content_type()) + " attempt=" + std::to_string(msg.attempt()) +
        " redelivered=" + (msg.redelivered() ? "yes" : "no") +
        " traceparent=" + msg.header("traceparent").value_or("<none>") +
        " missing=" + msg.header("x-missing").value_or("<none>") +
        " setting=" + ctx.setting("greeting").value_or("<none>"));
    return warren::Outcome::ack();
  }

 private:
  std::string greeting_;
  std::string worker_;
};

TEST(Context, HandlerSeesSettingsWorkerNameFieldsAndHeaders) {
  Harness harness = Harness::of<Inspector>({{"greeting", "ola"}}, "emails");
  TestMessage m;
  m.body = "{}";
  m.routing_key = "pedido.registrado";
  m.exchange = "livraria.eventos";
  m.content_type = "application/json";
  m.message_id = "id-1";
  m.headers = {{"traceparent", "00-abc-def-01"}};
  m.attempt = 3;
  m.redelivered = true;

  EXPECT_EQ(harness.deliver(m).kind, Result::Kind::ack);

  const auto logs = harness.logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].text, "started");
  EXPECT_EQ(logs[0].level, LogLevel::info);
  EXPECT_EQ(logs[0].message_id, "") << "worker-level logs carry no message id";
  EXPECT_EQ(logs[1].level, LogLevel::warn);
  EXPECT_EQ(logs[1].message_id, "id-1");
  EXPECT_EQ(logs[1].text,
            "ola from emails: body={} key=pedido.registrado exchange=livraria.eventos "
            "type=application/json attempt=3 redelivered=yes traceparent=00-abc-def-01 "
            "missing=<none> setting=ola");
}

TEST(Context, AbsentSetting_IsNullopt) {
  Harness harness = Harness::of<Inspector>();
  harness.deliver(TestMessage{});
  EXPECT_THAT(harness.logs().back().text, HasSubstr("<none> from test-worker"));
}

// Publishes the body to the exchange named by the routing key; reports a PublishError as a
// dead letter so the test sees its text.
class Forwarder final : public warren::Handler {
 public:
  explicit Forwarder(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    warren::OutgoingMessage out;
    out.exchange = "livraria.eventos";
    out.routing_key = msg.routing_key();
    out.body = msg.body();
    out.content_type = "application/json";
    out.message_id = "out-" + std::string(msg.message_id());
    out.headers = {{"x-origin", "forwarder"}};
    try {
      ctx.publish(out);
    } catch (const warren::PublishError& e) {
      return warren::Outcome::dead_letter(std::string("PublishError: ") + e.what());
    }
    return warren::Outcome::ack();
  }
};

TEST(Context, Publish_IsRecordedAsAsked) {
  Harness harness = Harness::of<Forwarder>();
  TestMessage m;
  m.body = R"({"order_id": 42})";
  m.routing_key = "email.enviado";
  m.message_id = "7";

  EXPECT_EQ(harness.deliver(m).kind, Result::Kind::ack);

  const auto published = harness.published();
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].exchange, "livraria.eventos");
  EXPECT_EQ(published[0].routing_key, "email.enviado");
  EXPECT_EQ(published[0].body, R"({"order_id": 42})");
  EXPECT_EQ(published[0].content_type, "application/json");
  EXPECT_EQ(published[0].message_id, "out-7");
  EXPECT_THAT(published[0].headers,
              ElementsAre(std::pair<std::string, std::string>("x-origin", "forwarder")));
}

TEST(Context, FailedPublish_ThrowsPublishErrorWithTheReasonAndRecordsNothing) {
  Harness harness = Harness::of<Forwarder>();
  harness.fail_next_publish("broker nacked the message");

  const Result failed = harness.deliver(TestMessage{});
  const Result next = harness.deliver(TestMessage{});

  EXPECT_EQ(failed.kind, Result::Kind::dead_letter);
  EXPECT_EQ(failed.reason, "PublishError: broker nacked the message");
  EXPECT_EQ(next.kind, Result::Kind::ack) << "only the next publish fails";
  EXPECT_EQ(harness.published().size(), 1u);
}

class StopAware final : public warren::Handler {
 public:
  explicit StopAware(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message&, warren::Context& ctx) override {
    return ctx.stop_requested() ? warren::Outcome::retry() : warren::Outcome::ack();
  }
};

TEST(Context, StopRequested_BecomesTrueAfterRequestStop) {
  Harness harness = Harness::of<StopAware>();
  EXPECT_EQ(harness.deliver(TestMessage{}).kind, Result::Kind::ack);
  harness.request_stop();
  EXPECT_EQ(harness.deliver(TestMessage{}).kind, Result::Kind::retry);
}

class Measured final : public warren::Handler {
 public:
  explicit Measured(warren::PluginContext& ctx)
      : handled_(ctx.counter("handled_total", "Messages handled")),
        size_(ctx.histogram("body_bytes", "Body sizes", {10, 100, 1000})),
        last_(ctx.gauge("warren_plugin_last_body_bytes", "Size of the last body")),
        refused_(ctx.counter("bad name!", "refused")),
        clash_(ctx.gauge("handled_total", "same name, other type")) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context&) override {
    handled_.inc();
    size_.observe(static_cast<double>(msg.body().size()));
    last_.set(static_cast<double>(msg.body().size()));
    refused_.inc();  // a refused metric is a harmless no-op
    return clash_.valid() ? warren::Outcome::retry() : warren::Outcome::ack();
  }

 private:
  warren::Counter handled_;
  warren::Histogram size_;
  warren::Gauge last_;
  warren::Counter refused_;
  warren::Gauge clash_;
};

TEST(Context, Metrics_AreRecordedUnderTheirExportedNames) {
  Harness harness = Harness::of<Measured>();
  TestMessage m;
  m.body = "12345";
  EXPECT_EQ(harness.deliver(m).kind, Result::Kind::ack);
  m.body = "123";
  EXPECT_EQ(harness.deliver(m).kind, Result::Kind::ack);

  const auto metrics = harness.metrics();
  ASSERT_EQ(metrics.size(), 3u);
  const auto& handled = metrics.at("warren_plugin_handled_total");
  EXPECT_EQ(handled.type, MetricType::counter);
  EXPECT_EQ(handled.sum(), 2.0);
  const auto& sizes = metrics.at("warren_plugin_body_bytes");
  EXPECT_EQ(sizes.type, MetricType::histogram);
  EXPECT_THAT(sizes.buckets, ElementsAre(10, 100, 1000));
  EXPECT_THAT(sizes.values, ElementsAre(5, 3));
  EXPECT_EQ(metrics.at("warren_plugin_last_body_bytes").last(), 3.0);
}

TEST(Context, InvalidOrClashingMetric_IsRefusedWithTheHostsLoggedReason) {
  Harness harness = Harness::of<Measured>();
  const auto logs = harness.logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].level, LogLevel::warn);
  EXPECT_EQ(logs[0].text,
            "plugin metric 'warren_plugin_bad name!' refused: invalid metric name "
            "'warren_plugin_bad name!': use [a-zA-Z_:][a-zA-Z0-9_:]*");
  EXPECT_EQ(logs[1].level, LogLevel::warn);
  EXPECT_EQ(logs[1].text,
            "plugin metric 'warren_plugin_handled_total' refused: metric "
            "'warren_plugin_handled_total' is already a counter, not a gauge");
}

}  // namespace
