// HandlerInstance: a real plugin's handler created, called and destroyed through the C ABI,
// with fake worker and message services standing in for the runtime.
#include "plugin/handler_instance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fake_services.h"
#include "fixture_plugins.h"
#include "warren/host_abi/host_table.h"
#include "warren/host_abi/services.h"

namespace warren::plugin {
namespace {

using host_abi::HandlerError;
using host_abi::MessageServices;
using host_abi::ReportedOutcome;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeMessageServices;
using testing::FakeWorkerServices;
using ::testing::Field;
using testing::fixture_plugin_dir;
using testing::fixture_plugin_file;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::LogLine;
using ::testing::Not;
using testing::refusal_of;
using ::testing::SizeIs;

warren_str abi(std::string_view text) {
  return warren_str{text.data(), text.size()};
}

// One delivery as the runtime would hand it over; `body` must outlive the returned struct.
warren_message delivery(std::string_view body) {
  warren_message message{};
  message.struct_size = sizeof message;
  message.body = abi(body);
  message.routing_key = abi("order.created");
  message.exchange = abi("orders");
  message.message_id = abi("m-1");
  message.content_type = abi("application/json");
  message.attempt = 1;
  message.redelivered = 0;
  return message;
}

auto log_line(LogLevel level, const std::string& text) {
  return AllOf(Field(&LogLine::level, level), Field(&LogLine::text, text));
}

class HandlerInstanceTest : public ::testing::Test {
 protected:
  // Handles one message with a fresh FakeMessageServices and returns it for inspection.
  std::unique_ptr<FakeMessageServices> handle(const HandlerInstance& instance,
                                              std::string_view body) {
    auto message_services = std::make_unique<FakeMessageServices>();
    instance.handle(delivery(body), *message_services);
    return message_services;
  }

  FakeWorkerServices worker_;
};

TEST_F(HandlerInstanceTest, GoodHandler_AcksTheMessage) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "anything");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::ack);
  EXPECT_EQ(message->reports[0].error, HandlerError::none);
  EXPECT_EQ(instance.info().name, "good");
}

TEST_F(HandlerInstanceTest, Constructor_LogsThroughTheWorkerServices) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  EXPECT_THAT(worker_.logs,
              ElementsAre(log_line(LogLevel::info, "good constructed for worker orders-worker")));
}

TEST_F(HandlerInstanceTest, PluginMetric_IsCreatedInTheWorkerAndRecordedPerMessage) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);
  handle(instance, "one");
  handle(instance, "two");

  const testing::FakeMetric* handled = worker_.find_metric("warren_plugin_handled_total");
  ASSERT_NE(handled, nullptr);
  EXPECT_EQ(handled->type(), MetricType::counter);
  EXPECT_EQ(handled->help, "Messages the good fixture handled");
  EXPECT_THAT(handled->recorded, ElementsAre(1.0, 1.0));
}

TEST_F(HandlerInstanceTest, WorkerSetting_ReachesThePlugin) {
  worker_.settings["greeting"] = "hello";
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "echo-setting:greeting");

  EXPECT_THAT(message->logs, ElementsAre(log_line(LogLevel::info, "greeting=hello")));
  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::ack);
}

TEST_F(HandlerInstanceTest, MissingSetting_IsAbsentForThePlugin) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "echo-setting:greeting");

  EXPECT_THAT(message->logs, ElementsAre(log_line(LogLevel::info, "greeting is not set")));
}

TEST_F(HandlerInstanceTest, MessageHeader_ReachesThePlugin) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);
  FakeMessageServices message;
  message.headers["x-tenant"] = "acme";

  instance.handle(delivery("echo-header:x-tenant"), message);
  instance.handle(delivery("echo-header:x-missing"), message);

  EXPECT_THAT(message.logs, ElementsAre(log_line(LogLevel::info, "x-tenant=acme"),
                                        log_line(LogLevel::info, "x-missing is absent")));
}

TEST_F(HandlerInstanceTest, StopRequest_ReachesThePlugin) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);
  FakeMessageServices message;
  message.stop = true;

  instance.handle(delivery("stop?"), message);

  EXPECT_THAT(message.logs, ElementsAre(log_line(LogLevel::info, "stop requested: yes")));
}

TEST_F(HandlerInstanceTest, RetryWithDelay_ReportsTheDelay) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "retry-in-250ms");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::retry);
  EXPECT_EQ(message->reports[0].delay, std::chrono::milliseconds(250));
  EXPECT_FALSE(message->reports[0].threw());
}

TEST_F(HandlerInstanceTest, DeadLetter_ReportsTheReason) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "dead-letter");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::dead_letter);
  EXPECT_EQ(message->reports[0].reason, "asked to dead-letter");
  EXPECT_EQ(message->reports[0].error, HandlerError::none);
}

TEST_F(HandlerInstanceTest, Publish_ReachesTheMessageServices) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);

  const auto message = handle(instance, "publish");

  ASSERT_THAT(message->published, SizeIs(1));
  const OutgoingMessage& published = message->published[0];
  EXPECT_EQ(published.exchange, "orders");
  EXPECT_EQ(published.routing_key, "order.created");
  EXPECT_EQ(published.body, "payload");
  EXPECT_EQ(published.content_type, "");
  EXPECT_EQ(published.message_id, "");
  EXPECT_THAT(published.headers, IsEmpty());
  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::ack);
}

TEST_F(HandlerInstanceTest, FailedPublish_ReachesThePluginAsPublishErrorWithTheHostsReason) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);
  FakeMessageServices message;
  message.publish_failure = "exchange \"orders\" returned the message: no queue bound";

  instance.handle(delivery("publish"), message);

  ASSERT_THAT(message.reports, SizeIs(1));
  EXPECT_EQ(message.reports[0].kind, ReportedOutcome::Kind::retry);
  EXPECT_EQ(message.reports[0].error, HandlerError::std_exception);
  EXPECT_EQ(message.reports[0].reason, "exchange \"orders\" returned the message: no queue bound");
  EXPECT_EQ(message.reports[0].exception_type, "warren::PublishError");
}

TEST_F(HandlerInstanceTest, ScopeSetByThePlugin_IsWhatTheHostReturnsAndDiesAtSettlement) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "good"), worker_);
  FakeMessageServices message;

  instance.handle(delivery("scope"), message);

  // The plugin created its scope once and found its object in it again through message_scope.
  EXPECT_EQ(message.set_scope_calls, 1);
  ASSERT_NE(message.scope_slot.get(), nullptr);
  EXPECT_EQ(host_abi::host_table().message_scope(&static_cast<MessageServices&>(message)),
            message.scope_slot.get());
  ASSERT_THAT(message.reports, SizeIs(1));
  EXPECT_EQ(message.reports[0].kind, ReportedOutcome::Kind::ack);
  const auto destroyed = log_line(LogLevel::info, "scope of m-1 destroyed");
  EXPECT_THAT(worker_.logs, Not(Contains(destroyed))) << "alive until the message settles";

  // Settling runs the plugin's own destroy function: its object's destructor logs.
  message.scope_slot.settle();
  EXPECT_THAT(worker_.logs, Contains(destroyed));
  EXPECT_EQ(message.scope_slot.get(), nullptr);
}

TEST_F(HandlerInstanceTest, StdException_ArrivesAsThrewWithItsWhat) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "throwing"), worker_);

  const auto message = handle(instance, "std");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::retry);
  EXPECT_EQ(message->reports[0].error, HandlerError::std_exception);
  EXPECT_EQ(message->reports[0].reason, "payment gateway timed out");
  EXPECT_EQ(message->reports[0].exception_type, "std::runtime_error");
  EXPECT_FALSE(message->reports[0].delay.has_value());
}

TEST_F(HandlerInstanceTest, PermanentError_ArrivesAsADeadLetterThatWasThrown) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "throwing"), worker_);

  const auto message = handle(instance, "permanent");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::dead_letter);
  EXPECT_EQ(message->reports[0].error, HandlerError::permanent);
  EXPECT_EQ(message->reports[0].reason, "order 17 has no customer");
  EXPECT_EQ(message->reports[0].exception_type, "warren::PermanentError");
}

TEST_F(HandlerInstanceTest, NonStdException_ArrivesAsThrewOfUnknownKind) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "throwing"), worker_);

  const auto message = handle(instance, "int");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::retry);
  EXPECT_EQ(message->reports[0].error, HandlerError::unknown);
  EXPECT_EQ(message->reports[0].reason, "a non-std exception was thrown");
  EXPECT_EQ(message->reports[0].exception_type, "");
}

TEST_F(HandlerInstanceTest, HandlerThatThrew_KeepsHandlingLaterMessages) {
  const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), "throwing"), worker_);
  handle(instance, "std");
  handle(instance, "int");

  const auto message = handle(instance, "fine");

  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::ack);
}

TEST_F(HandlerInstanceTest, ConstructorThatThrows_IsRefusedWithItsReason) {
  auto library = PluginLibrary::load(fixture_plugin_dir(), "constructor_throws");

  const PluginLoadError error =
      refusal_of([&] { const HandlerInstance instance(library, worker_); });

  EXPECT_EQ(error.file(), fixture_plugin_file("constructor_throws"));
  EXPECT_EQ(error.reason(), "the handler's constructor failed: database unreachable");
}

TEST_F(HandlerInstanceTest, Instance_KeepsItsLibraryLoadedAfterTheLoaderLetsGo) {
  auto library = PluginLibrary::load(fixture_plugin_dir(), "good");
  const std::weak_ptr<PluginLibrary> watcher = library;
  const HandlerInstance instance(std::move(library), worker_);

  EXPECT_FALSE(watcher.expired());
  const auto message = handle(instance, "anything");
  ASSERT_THAT(message->reports, SizeIs(1));
  EXPECT_EQ(message->reports[0].kind, ReportedOutcome::Kind::ack);
}

TEST_F(HandlerInstanceTest, MissingLibrary_IsAnInvalidArgument) {
  EXPECT_THROW(HandlerInstance(nullptr, worker_), std::invalid_argument);
}

}  // namespace
}  // namespace warren::plugin
