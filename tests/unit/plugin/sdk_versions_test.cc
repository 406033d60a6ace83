// Issue 22's "an SDK 1.0 plugin still loading beside 1.1 features": one host runtime (the loader,
// the runtime's worker and message contexts, dispatchers, one metrics registry, the in-memory
// broker) runs good_abi_1_0 (built against the frozen SDK 1.0 headers) and sdk_1_2 (a labelled
// counter, log_debug, a publish without mandatory) side by side, and both do their work.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "eventually.h"
#include "fixture_plugins.h"
#include "observability/metrics.h"
#include "plugin/handler_instance.h"
#include "plugin/plugin_library.h"
#include "runtime/dispatcher.h"
#include "runtime/in_memory_transport.h"
#include "runtime/worker_context.h"

namespace warren::plugin {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

config::QueueConfig queue(std::string name, std::string exchange, std::string key) {
  config::QueueConfig q;
  q.name = std::move(name);
  q.dead_letter_exchange = "dead";
  q.bindings.push_back({std::move(exchange), std::move(key), {}});
  return q;
}

// "in" routes to the two workers' queues; "orders" is where good publishes; "notifications"
// has no queue bound; "dead" collects dead letters.
config::Config two_worker_config() {
  config::Config config;
  for (const char* name : {"in", "orders", "notifications", "dead"}) {
    config::ExchangeConfig exchange;
    exchange.name = name;
    exchange.type =
        std::string(name) == "dead" ? config::ExchangeType::fanout : config::ExchangeType::direct;
    config.exchanges.push_back(exchange);
  }
  config.queues.push_back(queue("legacy", "in", "legacy"));
  config.queues.push_back(queue("modern", "in", "modern"));
  config.queues.push_back(queue("orders-out", "orders", "order.created"));
  config::QueueConfig dead = queue("dead", "dead", "");
  dead.dead_letter_exchange.clear();
  config.queues.push_back(dead);
  return config;
}

// A worker as the host builds it over a plugin loaded from its .so.
struct Worker {
  Worker(const std::string& name, const std::string& plugin_name, observability::Metrics& metrics,
         transport::Publisher& publisher)
      : library(PluginLibrary::load(testing::fixture_plugin_dir(), plugin_name)),
        context(name, library->info().name, {}, metrics),
        handler(library, context),
        worker_metrics(metrics.worker(name, name)),
        dispatcher(options(name), handler, context, &publisher, worker_metrics, nullptr) {
    dispatcher.start();
  }
  static runtime::DispatcherOptions options(const std::string& name) {
    runtime::DispatcherOptions options;
    options.worker = name;
    options.queue = name;
    options.retry.max_attempts = 1;  // a failed publish dead-letters at once
    return options;
  }
  double settled() const {
    return worker_metrics.settled_ack->Value() + worker_metrics.settled_dead_letter->Value();
  }

  std::shared_ptr<const PluginLibrary> library;
  runtime::WorkerContext context;
  const HandlerInstance handler;
  const observability::WorkerMetrics worker_metrics;
  runtime::Dispatcher dispatcher;
};

transport::InboundMessage message(std::string id, std::string body, std::string locale = {}) {
  transport::InboundMessage m;
  m.message_id = std::move(id);
  m.body = std::move(body);
  if (!locale.empty())
    m.headers = {{"x-locale", std::move(locale)}};
  return m;
}

TEST(SdkVersions, Sdk1_0PluginRunsBesideAPluginUsingTheSdk1_2Features) {
  const config::Config config = two_worker_config();
  runtime::InMemoryTransport transport(config, 5s);
  observability::Metrics metrics;
  Worker legacy("legacy", "good_abi_1_0", metrics, transport);
  Worker modern("modern", "sdk_1_2", metrics, transport);
  EXPECT_EQ(legacy.library->info().abi_minor, 0u);
  EXPECT_EQ(modern.library->info().abi_minor, 2u);
  transport.start({{"legacy", "legacy", 20, &legacy.dispatcher, ""},
                   {"modern", "modern", 20, &modern.dispatcher, ""}});

  transport.enqueue("legacy", message("l-1", "anything"));
  transport.enqueue("legacy", message("l-2", "publish"));
  transport.enqueue("modern", message("m-1", "notify", "pt-BR"));
  transport.enqueue("modern", message("m-2", "notify"));
  transport.enqueue("modern", message("m-3", "mandatory"));

  EXPECT_TRUE(test_support::eventually(
      [&] { return legacy.settled() == 2 && modern.settled() == 3; }, 60s));
  transport.stop_consuming();
  ASSERT_TRUE(legacy.dispatcher.drain(std::chrono::steady_clock::now() + 10s));
  ASSERT_TRUE(modern.dispatcher.drain(std::chrono::steady_clock::now() + 10s));

  EXPECT_EQ(legacy.worker_metrics.settled_ack->Value(), 2) << "the 1.0 plugin works as before";
  EXPECT_EQ(transport.depth("orders-out"), 1u) << "its mandatory publish was routed";
  EXPECT_EQ(modern.worker_metrics.settled_ack->Value(), 2)
      << "two notifications to an exchange with no queue bound: dropped, the publish succeeded";
  EXPECT_EQ(modern.worker_metrics.settled_dead_letter->Value(), 1)
      << "the same publish, mandatory, failed (unroutable) and the message was dead-lettered";
  EXPECT_EQ(transport.depth("dead"), 1u);

  const std::string exposed = metrics.serialize();
  EXPECT_THAT(
      exposed,
      HasSubstr("warren_plugin_handled_total{plugin=\"good_abi_1_0\",worker=\"legacy\"} 2"));
  EXPECT_THAT(exposed, HasSubstr("warren_plugin_notes_total{locale=\"pt-BR\",plugin=\"sdk_1_2\","
                                 "worker=\"modern\"} 1"));
  EXPECT_THAT(exposed, HasSubstr("warren_plugin_notes_total{locale=\"none\",plugin=\"sdk_1_2\","
                                 "worker=\"modern\"} 2"));
}

}  // namespace
}  // namespace warren::plugin
