// ABI 1.0 plugins keep loading and behave as they did. `good` and `throwing` built against the
// SDK 1.0 headers frozen in tests/fixtures/sdk_1_0 (libgood_abi_1_0.so, libthrowing_abi_1_0.so)
// are loaded beside the same sources built against this SDK; each message is handled by both,
// in the host (HandlerInstance over the same fake services) and in the test harness, and both
// must be seen doing exactly the same things.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include "fake_services.h"
#include "fixture_plugins.h"
#include "plugin/handler_instance.h"
#include "plugin/plugin_library.h"
#include "warren/detail/abi_sizes.h"
#include "warren/detail/strings.h"
#include "warren/testing/harness.h"

namespace warren::plugin {
namespace {

using host_abi::ReportedOutcome;
using testing::FakeMessageServices;
using testing::FakeWorkerServices;
using testing::fixture_plugin_dir;
using ::testing::HasSubstr;

std::string describe(const ReportedOutcome& outcome) {
  static constexpr std::string_view kinds[] = {"ack", "retry", "dead_letter", "invalid"};
  std::string text(kinds[static_cast<int>(outcome.kind)]);
  if (outcome.delay)
    text += " after " + std::to_string(outcome.delay->count()) + " ms";
  if (outcome.threw()) {
    text += " threw " + std::string(warren::testing::to_string(outcome.error)) + " " +
            outcome.exception_type;
  }
  return text + ": " + outcome.reason;
}

// Everything the host saw a plugin do while it was constructed and handled one message (of body
// `body`, id m-1, header x-tenant=acme, in worker orders-worker with greeting=hello).
std::string host_transcript(std::string_view plugin, std::string_view body) {
  FakeWorkerServices worker;
  worker.settings["greeting"] = "hello";
  std::string transcript;
  {
    const HandlerInstance instance(PluginLibrary::load(fixture_plugin_dir(), plugin), worker);
    FakeMessageServices message;
    message.headers["x-tenant"] = "acme";
    warren_message delivery{};
    delivery.struct_size = sizeof delivery;
    delivery.body = detail::to_abi(body);
    delivery.message_id = detail::to_abi("m-1");
    delivery.attempt = 1;

    instance.handle(delivery, message);
    message.scope_slot.settle();

    for (const auto& report : message.reports)
      transcript += "report " + describe(report) + "\n";
    for (const auto& line : message.logs)
      transcript += "message log " + std::string(to_string(line.level)) + ": " + line.text + "\n";
    for (const auto& published : message.published) {
      transcript += "published " + published.exchange + "|" + published.routing_key + "|" +
                    published.body + "\n";
    }
  }
  for (const auto& line : worker.logs)
    transcript += "worker log " + std::string(to_string(line.level)) + ": " + line.text + "\n";
  for (const auto& metric : worker.metrics) {
    transcript += "metric " + metric->name + " " + std::string(to_string(metric->type())) + " (" +
                  std::to_string(metric->recorded.size()) + " records)\n";
  }
  return transcript;
}

// The same, as warren::testing::Harness reports it.
std::string harness_transcript(std::string_view plugin, std::string_view body) {
  const auto library = PluginLibrary::load(fixture_plugin_dir(), plugin);
  warren::testing::Harness harness(library->descriptor(), {{"greeting", "hello"}}, "orders-worker");
  warren::testing::TestMessage message;
  message.body = body;
  message.message_id = "m-1";
  message.headers = {{"x-tenant", "acme"}};

  std::ostringstream transcript;
  transcript << "result " << harness.deliver(message) << "\n";
  for (const auto& line : harness.logs())
    transcript << "log " << line.level << " [" << line.message_id << "]: " << line.text << "\n";
  for (const auto& published : harness.published())
    transcript << "published " << published.exchange << "|" << published.routing_key << "\n";
  for (const auto& [name, metric] : harness.metrics())
    transcript << "metric " << name << " " << metric.type << " = " << metric.sum() << "\n";
  return transcript.str();
}

TEST(AbiCompatibility, PluginBuiltWithSdk1_0_LoadsAsAbi1_0BesideA1_1Plugin) {
  const auto old_plugin = PluginLibrary::load(fixture_plugin_dir(), "good_abi_1_0");
  const auto new_plugin = PluginLibrary::load(fixture_plugin_dir(), "good");

  EXPECT_EQ(old_plugin->info().abi_major, 1u);
  EXPECT_EQ(old_plugin->info().abi_minor, 0u);
  EXPECT_EQ(old_plugin->descriptor().struct_size, detail::kDescriptorV1_0Size);
  EXPECT_EQ(new_plugin->info().abi_major, 1u);
  EXPECT_EQ(new_plugin->info().abi_minor, 2u);
  EXPECT_EQ(WARREN_ABI_MINOR, 2) << "this host speaks ABI 1.2";
}

struct Message {
  const char* plugin;  // the fixture built against this SDK; "<plugin>_abi_1_0" against 1.0
  const char* body;
  const char* shows;  // a line both transcripts must contain
};

void PrintTo(const Message& message, std::ostream* out) {
  *out << message.plugin << " <- \"" << message.body << "\"";
}

class AbiCompatibilityByMessage : public ::testing::TestWithParam<Message> {};

TEST_P(AbiCompatibilityByMessage, Sdk1_0PluginDoesInTheHostWhatTheSdk1_1PluginDoes) {
  const Message& message = GetParam();
  const std::string old_plugin = std::string(message.plugin) + "_abi_1_0";

  const std::string built_with_1_0 = host_transcript(old_plugin, message.body);
  const std::string built_with_1_1 = host_transcript(message.plugin, message.body);

  EXPECT_EQ(built_with_1_0, built_with_1_1);
  EXPECT_THAT(built_with_1_0, HasSubstr(message.shows));
}

TEST_P(AbiCompatibilityByMessage, Sdk1_0PluginDoesInTheHarnessWhatTheSdk1_1PluginDoes) {
  const Message& message = GetParam();
  const std::string old_plugin = std::string(message.plugin) + "_abi_1_0";

  EXPECT_EQ(harness_transcript(old_plugin, message.body),
            harness_transcript(message.plugin, message.body));
}

INSTANTIATE_TEST_SUITE_P(
    Messages, AbiCompatibilityByMessage,
    ::testing::Values(
        Message{"good", "anything", "report ack: \n"},
        Message{"good", "echo-setting:greeting", "message log info: greeting=hello\n"},
        Message{"good", "echo-header:x-tenant", "message log info: x-tenant=acme\n"},
        Message{"good", "stop?", "message log info: stop requested: no\n"},
        Message{"good", "retry-in-250ms", "report retry after 250 ms: \n"},
        Message{"good", "dead-letter", "report dead_letter: asked to dead-letter\n"},
        Message{"good", "publish", "published orders|order.created|payload\n"},
        Message{"good", "scope", "worker log info: scope of m-1 destroyed\n"},
        Message{"throwing", "std",
                "report retry threw std_exception std::runtime_error: payment gateway timed out"},
        Message{"throwing", "permanent",
                "report dead_letter threw permanent warren::PermanentError: order 17 has no "
                "customer"},
        Message{"throwing", "int", "report retry threw unknown : a non-std exception was thrown"}),
    [](const ::testing::TestParamInfo<Message>& param) {
      std::string name = std::string(param.param.plugin) + "_" + param.param.body;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace warren::plugin
