// DeadLetterBrowser, what `warren dlq` reads with, against the test broker (WARREN_TEST_AMQP_URI):
// it counts and fetches the letters of a dead-letter queue in order with their properties, holds
// them unacked (the queue shows them gone) until it acks one or closes, and then the broker
// requeues exactly the unacked ones; purge deletes every ready one. A quorum queue, like the
// dead-letter queues Warren declares. Without the broker these tests skip, unless
// WARREN_REQUIRE_SERVICES=1, where they fail.
#include "broker/dead_letter_browser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "broker/amqp_connection.h"
#include "broker/amqp_errors.h"
#include "broker/amqp_table.h"
#include "broker/publisher_connection.h"
#include "broker/rabbitmq_transport.h"
#include "eventually.h"
#include "required_services.h"

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

constexpr amqp_channel_t kChannel = 1;
// Longer than anything that should be immediate takes: liveness only.
constexpr auto kIdle = 10s;

std::optional<config::Config> test_broker_config() {
  const char* uri = std::getenv("WARREN_TEST_AMQP_URI");
  if (uri == nullptr || *uri == '\0')
    return std::nullopt;
  config::Config config;
  config.host.name = "dead-letter-browser-test";
  config.broker.uris.emplace_back(uri);
  config.broker.connect_timeout = 5s;
  return config;
}

// The test's own queue on the broker (a quorum queue of a unique name), filled through a
// confirmed publisher and read back through a connection of its own; deleted at the end.
class DeadLetterQueue {
 public:
  explicit DeadLetterQueue(const config::Config& config)
      : name_("dlb-test-" + std::to_string(std::random_device()())) {
    const auto endpoints = resolve_endpoints(config.broker);
    admin_ = AmqpConnection::open(endpoints.at(0),
                                  connection_options(config.broker, "test", config.host.name));
    amqp_channel_open(admin_->state(), kChannel);
    admin_->check(admin_->last_reply(), "opening a channel");
    AmqpTableBuilder arguments;
    arguments.add("x-queue-type", std::string_view("quorum"));
    amqp_queue_declare(admin_->state(), kChannel, bytes_of(name_), 0, 1, 0, 0, arguments.table());
    admin_->check(admin_->last_reply(), "declaring " + name_);
    PublisherOptions options;
    options.endpoints = endpoints;
    options.connection = connection_options(config.broker, "test", config.host.name);
    options.publish_timeout = 30s;
    publisher_ = std::make_unique<PublisherConnection>(options, nullptr, nullptr);
  }
  ~DeadLetterQueue() {
    publisher_.reset();
    amqp_queue_delete(admin_->state(), kChannel, bytes_of(name_), 0, 0);
    admin_->close();
  }
  DeadLetterQueue(const DeadLetterQueue&) = delete;
  DeadLetterQueue& operator=(const DeadLetterQueue&) = delete;

  const std::string& name() const { return name_; }

  // Publishes letters `<prefix>-1` .. `<prefix>-n` (message id = body), confirmed.
  std::vector<std::string> put(int n, const std::string& prefix = "letter") {
    std::vector<std::string> ids;
    for (int i = 1; i <= n; ++i) {
      transport::OutboundMessage letter;
      letter.routing_key = name_;
      letter.message_id = prefix + "-" + std::to_string(i);
      letter.body = letter.message_id;
      letter.content_type = "text/plain";
      letter.headers = {{"x-warren-error", "boom " + std::to_string(i)}};
      publisher_->publish(letter);
      ids.push_back(letter.message_id);
    }
    return ids;
  }

  // Ready messages, as the broker counts them now (a passive declare).
  std::uint32_t ready() const {
    amqp_queue_declare_ok_t* ok = amqp_queue_declare(admin_->state(), kChannel, bytes_of(name_), 1,
                                                     0, 0, 0, amqp_empty_table);
    admin_->check(admin_->last_reply(), "counting " + name_);
    return ok->message_count;
  }

 private:
  std::string name_;
  std::unique_ptr<AmqpConnection> admin_;
  std::unique_ptr<PublisherConnection> publisher_;
};

std::vector<std::string> ids_of(const std::vector<DeadLetter>& letters) {
  std::vector<std::string> ids;
  for (const auto& letter : letters)
    ids.push_back(letter.message.message_id);
  return ids;
}

// Waits until the broker has requeued what a closed browser held: quorum queues hand returned
// messages back asynchronously.
bool ready_becomes(const DeadLetterQueue& queue, std::uint32_t expected) {
  return test_support::eventually([&] { return queue.ready() == expected; }, 30s, 20ms);
}

class DeadLetterBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = test_broker_config();
    if (!config_) {
      WARREN_SKIP_OR_FAIL(
          "no test broker: WARREN_TEST_AMQP_URI is not set (scripts/services/rabbitmq.sh start)");
    }
    queue_ = std::make_unique<DeadLetterQueue>(*config_);
  }

  std::optional<config::Config> config_;
  std::unique_ptr<DeadLetterQueue> queue_;
};

TEST_F(DeadLetterBrowserTest, MissingQueue_IsATopologyErrorNamingIt) {
  try {
    DeadLetterBrowser browser(*config_, queue_->name() + "-missing");
    FAIL() << "opened a queue that does not exist";
  } catch (const TopologyError& error) {
    EXPECT_EQ(std::string(error.what()),
              "dead-letter queue '" + queue_->name() + "-missing' does not exist");
  }
}

TEST_F(DeadLetterBrowserTest, Fetch_ReturnsEveryLetterInOrderWithItsPropertiesHeldUnacked) {
  const auto ids = queue_->put(3);
  {
    DeadLetterBrowser browser(*config_, queue_->name());
    EXPECT_EQ(browser.message_count(), 3u);

    const auto letters = browser.fetch(10);

    EXPECT_EQ(ids_of(letters), ids);
    ASSERT_EQ(letters.size(), 3u);
    const auto& first = letters[0].message;
    EXPECT_EQ(first.queue, queue_->name());
    EXPECT_EQ(first.exchange, "");
    EXPECT_EQ(first.routing_key, queue_->name());
    EXPECT_EQ(first.body, "letter-1");
    EXPECT_EQ(first.content_type, "text/plain");
    EXPECT_EQ(transport::find_header(first.headers, "x-warren-error"), "boom 1");
    EXPECT_FALSE(first.redelivered);
    EXPECT_EQ(queue_->ready(), 0u) << "the browser holds what it read";
  }
  // Closed without acking: every letter is back, in order, marked redelivered.
  ASSERT_TRUE(ready_becomes(*queue_, 3));
  DeadLetterBrowser again(*config_, queue_->name());
  const auto letters = again.fetch(10);
  EXPECT_EQ(ids_of(letters), ids);
  for (const auto& letter : letters)
    EXPECT_TRUE(letter.message.redelivered) << letter.message.message_id;
}

TEST_F(DeadLetterBrowserTest, Fetch_StopsAtItsMaximumAndTheRestStayReady) {
  const auto ids = queue_->put(5);
  DeadLetterBrowser browser(*config_, queue_->name());

  const auto letters = browser.fetch(2);

  EXPECT_EQ(ids_of(letters), (std::vector<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(queue_->ready(), 3u);
}

TEST_F(DeadLetterBrowserTest, Ack_RemovesThatLetterForGoodAndCloseReturnsTheOthers) {
  const auto ids = queue_->put(3);
  {
    DeadLetterBrowser browser(*config_, queue_->name());
    const auto letters = browser.fetch(10);
    ASSERT_EQ(letters.size(), 3u);
    browser.ack(letters[1].tag);
  }  // closing must not drop the ack still in flight (rabbitmq-server issue 10327)

  ASSERT_TRUE(ready_becomes(*queue_, 2));
  DeadLetterBrowser again(*config_, queue_->name());
  EXPECT_EQ(ids_of(again.fetch(10)), (std::vector<std::string>{ids[0], ids[2]}));
}

TEST_F(DeadLetterBrowserTest, EmptyQueue_FetchReturnsNothingWithoutWaiting) {
  DeadLetterBrowser browser(*config_, queue_->name());
  const auto started = std::chrono::steady_clock::now();

  EXPECT_TRUE(browser.fetch(10).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - started, kIdle) << "waited for letters it knew of";
}

TEST_F(DeadLetterBrowserTest, PurgeAll_DeletesEveryReadyLetterAndCountsThem) {
  queue_->put(4);
  DeadLetterBrowser browser(*config_, queue_->name());

  EXPECT_EQ(browser.purge_all(), 4u);
  EXPECT_EQ(queue_->ready(), 0u);
}

}  // namespace
}  // namespace warren::broker
