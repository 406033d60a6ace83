// Specification of the HTTP endpoints (/metrics, /healthz, /readyz): what Prometheus and the
// kubelet see, authentication of /metrics, and clear failures when the address cannot be served.
// Every server listens on 127.0.0.1:0 and the test asks it which port it got.
#include "observability/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "eventually.h"
#include "http_client.h"

namespace warren::observability {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;
using testing::accepts_connections;
using testing::http_get;
using testing::http_request;

constexpr const char* kGoodCredentials =
    "Authorization: Basic c2NyYXBlcjpzM2NyZXQ=\r\n";  // scraper:s3cret
constexpr const char* kWrongPassword =
    "Authorization: Basic c2NyYXBlcjp3cm9uZw==\r\n";  // scraper:wrong
constexpr const char* kWrongUser =
    "Authorization: Basic aW50cnVkZXI6czNjcmV0\r\n";  // intruder:s3cret

MetricsServerOptions on_any_free_port() {
  MetricsServerOptions options;
  options.listen = "127.0.0.1:0";
  return options;
}

MetricsServerOptions with_basic_auth() {
  MetricsServerOptions options = on_any_free_port();
  options.user = "scraper";
  options.password = "s3cret";
  return options;
}

// How long a 1 ms stall allowance takes to show as a stalled loop, on a busy machine too.
constexpr auto kPatience = 30s;

class MetricsServerTest : public ::testing::Test {
 protected:
  void start(MetricsServerOptions options = on_any_free_port()) {
    server_ = std::make_unique<MetricsServer>(metrics_, health_, std::move(options));
    server_->start();
    ASSERT_NE(server_->port(), 0);
  }
  std::uint16_t port() const { return server_->port(); }

  Metrics metrics_;
  Health health_;
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(MetricsServerTest, Metrics_ServesTheRegistryInPrometheusTextFormat) {
  start();
  metrics_.broker_reconnects().Increment(3);

  const auto response = http_get(port(), "/metrics");

  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(response.body.find("# TYPE warren_broker_reconnects_total counter"), std::string::npos);
  EXPECT_NE(response.body.find("\nwarren_broker_reconnects_total 3\n"), std::string::npos)
      << response.body;
  EXPECT_EQ(response.header("content-length"), std::to_string(response.body.size()));
}

TEST_F(MetricsServerTest, Metrics_ACounterIncrementedBetweenScrapes_ShowsItsNewValue) {
  start();
  auto worker = metrics_.worker("orders", "orders.q");
  worker.received->Increment();
  ASSERT_NE(
      http_get(port(), "/metrics")
          .body.find("warren_messages_received_total{queue=\"orders.q\",worker=\"orders\"} 1"),
      std::string::npos);

  worker.received->Increment(41);

  EXPECT_NE(
      http_get(port(), "/metrics")
          .body.find("warren_messages_received_total{queue=\"orders.q\",worker=\"orders\"} 42"),
      std::string::npos);
}

TEST_F(MetricsServerTest, Metrics_QueryString_IsIgnored) {
  start();
  EXPECT_EQ(http_get(port(), "/metrics?name[]=up").status, 200);
}

TEST_F(MetricsServerTest, Head_AnswersLikeGetWithoutABody) {
  start();
  const auto response = http_request(port(), "HEAD", "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(response.body.empty());
}

TEST_F(MetricsServerTest, Healthz_EveryLoopTicking_Is200Ok) {
  auto loop = health_.register_loop("broker-io", 1h);
  start();

  const auto response = http_get(port(), "/healthz");

  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
  EXPECT_EQ(response.header("content-type"), "text/plain; charset=utf-8");
}

TEST_F(MetricsServerTest, Healthz_ALoopStopsTicking_Is503NamingOnlyThatLoop) {
  auto healthy = health_.register_loop("dispatcher-orders", 1h);
  auto hung = health_.register_loop("broker-io", 1ms);
  start();
  ASSERT_TRUE(eventually([&] { return !health_.liveness().alive; }, kPatience));

  const auto response = http_get(port(), "/healthz");

  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "stalled: broker-io\n");
}

// A loop that runs now and then (the reading thread's help, issue 17) is alive while idle, and
// stalls again only past its allowance from its next tick.
TEST_F(MetricsServerTest, Healthz_IdleLoop_IsHealthyUntilItTicksAndStallsAgain) {
  auto loop = health_.register_loop("dispatcher orders (on the reading thread)", 1ms);
  loop->idle();
  start();
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
  EXPECT_TRUE(health_.liveness().alive);

  loop->tick();  // a handler begins, and runs past the allowance
  ASSERT_TRUE(eventually([&] { return !health_.liveness().alive; }, kPatience));
  EXPECT_EQ(http_get(port(), "/healthz").body,
            "stalled: dispatcher orders (on the reading thread)\n");
}

TEST_F(MetricsServerTest, Healthz_StalledLoopRetiredAtShutdown_IsHealthyAgain) {
  auto loop = health_.register_loop("broker-io", 1ms);
  start();
  ASSERT_TRUE(eventually([&] { return !health_.liveness().alive; }, kPatience));
  ASSERT_EQ(http_get(port(), "/healthz").status, 503);

  loop->retire();

  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
}

TEST_F(MetricsServerTest, Readyz_FollowsTheReadinessProbe) {
  std::atomic<bool> ready{false};
  health_.set_readiness_probe([&ready] { return ready.load(); });
  start();

  const auto before = http_get(port(), "/readyz");
  ready = true;
  const auto after = http_get(port(), "/readyz");
  ready = false;
  const auto stopping = http_get(port(), "/readyz");

  EXPECT_EQ(before.status, 503);
  EXPECT_EQ(before.body, "not ready\n");
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, "ready\n");
  EXPECT_EQ(stopping.status, 503);
}

TEST_F(MetricsServerTest, Readyz_NotReady_SaysWhyALineEach) {
  std::atomic<bool> ready{false};
  health_.set_readiness_probe([&ready] { return ready.load(); });
  health_.set_not_ready_reasons([] {
    return std::vector<std::string>{
        "queue 'orders' consumed by worker 'billing' does not exist",
        "the broker closed the channel of worker 'audit' on queue 'audit'"};
  });
  start();

  const auto not_ready = http_get(port(), "/readyz");
  ready = true;
  const auto now_ready = http_get(port(), "/readyz");

  EXPECT_EQ(not_ready.status, 503);
  EXPECT_EQ(not_ready.body,
            "not ready\n"
            "queue 'orders' consumed by worker 'billing' does not exist\n"
            "the broker closed the channel of worker 'audit' on queue 'audit'\n");
  EXPECT_EQ(now_ready.status, 200);
  EXPECT_EQ(now_ready.body, "ready\n");
}

TEST_F(MetricsServerTest, Readyz_NoProbeSet_IsNotReady) {
  start();
  EXPECT_EQ(http_get(port(), "/readyz").status, 503);
}

TEST_F(MetricsServerTest, BasicAuth_MetricsWithoutCredentials_Is401WithAChallenge) {
  start(with_basic_auth());

  const auto response = http_get(port(), "/metrics");

  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(response.header("www-authenticate"), "Basic realm=\"warren\", charset=\"UTF-8\"");
  EXPECT_EQ(response.body.find("warren_"), std::string::npos) << "no metric may leak";
}

TEST_F(MetricsServerTest, BasicAuth_MetricsWithTheRightCredentials_Is200) {
  start(with_basic_auth());

  const auto response = http_get(port(), "/metrics", kGoodCredentials);

  EXPECT_EQ(response.status, 200);
  EXPECT_NE(response.body.find("warren_build_info"), std::string::npos);
}

TEST_F(MetricsServerTest, BasicAuth_WrongPasswordOrWrongUser_Is401) {
  start(with_basic_auth());

  EXPECT_EQ(http_get(port(), "/metrics", kWrongPassword).status, 401);
  EXPECT_EQ(http_get(port(), "/metrics", kWrongUser).status, 401);
  EXPECT_EQ(http_get(port(), "/metrics", "Authorization: Bearer c2NyYXBlcjpzM2NyZXQ=\r\n").status,
            401);
  EXPECT_EQ(http_get(port(), "/metrics", "Authorization: Basic !!!not-base64\r\n").status, 401);
}

TEST_F(MetricsServerTest, BasicAuth_ProbesStayOpenForTheKubelet) {
  health_.set_readiness_probe([] { return true; });
  start(with_basic_auth());

  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(port(), "/readyz").status, 200);
}

TEST_F(MetricsServerTest, UnknownPath_Is404) {
  start();
  EXPECT_EQ(http_get(port(), "/").status, 404);
  EXPECT_EQ(http_get(port(), "/metricsx").status, 404);
  EXPECT_EQ(http_get(port(), "/metrics/extra").status, 404);
  EXPECT_EQ(http_get(port(), "/favicon.ico").status, 404);
}

TEST_F(MetricsServerTest, MethodOtherThanGet_Is405WithAllow) {
  start();
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    const auto response = http_request(port(), method, "/metrics");
    EXPECT_EQ(response.status, 405) << method;
    EXPECT_EQ(response.header("allow"), "GET, HEAD") << method;
  }
  EXPECT_EQ(http_request(port(), "POST", "/healthz").status, 405);
}

TEST_F(MetricsServerTest, ConcurrentScrapes_AllAnswered) {
  start();
  std::vector<std::future<int>> scrapes;
  for (int i = 0; i < 16; ++i) {
    const char* path = i % 2 == 0 ? "/metrics" : "/healthz";
    scrapes.push_back(
        std::async(std::launch::async, [this, path] { return http_get(port(), path).status; }));
  }
  for (auto& scrape : scrapes)
    EXPECT_EQ(scrape.get(), 200);
}

TEST_F(MetricsServerTest, Stop_ClosesThePortAndIsIdempotent) {
  start();
  const auto bound = port();
  ASSERT_TRUE(accepts_connections(bound));

  server_->stop();
  server_->stop();

  EXPECT_FALSE(server_->running());
  EXPECT_EQ(server_->port(), 0);
  EXPECT_FALSE(accepts_connections(bound));
}

TEST_F(MetricsServerTest, PortInUse_StartFailsNamingTheAddressAndTheReason) {
  start();
  MetricsServerOptions same_port;
  same_port.listen = "127.0.0.1:" + std::to_string(port());
  MetricsServer second(metrics_, health_, same_port);

  try {
    second.start();
    FAIL() << "a second server started on a port in use";
  } catch (const MetricsServerError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(same_port.listen), std::string::npos) << message;
    EXPECT_NE(message.find("Address already in use"), std::string::npos) << message;
    EXPECT_NE(message.find("[metrics] listen"), std::string::npos) << message;
  }
  EXPECT_FALSE(second.running());
  EXPECT_EQ(http_get(port(), "/healthz").status, 200) << "the first server keeps serving";
}

TEST_F(MetricsServerTest, MalformedListenAddress_StartFailsNamingIt) {
  MetricsServerOptions options;
  options.listen = "127.0.0.1:9464s";  // civetweb would read the "s" as "serve TLS"
  MetricsServer server(metrics_, health_, options);

  try {
    server.start();
    FAIL() << "started on a malformed address";
  } catch (const MetricsServerError& error) {
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:9464s"), std::string::npos) << error.what();
  }
}

TEST_F(MetricsServerTest, AllInterfaces_ServesOnLoopbackToo) {
  MetricsServerOptions options;
  options.listen = "0.0.0.0:0";
  start(options);
  EXPECT_EQ(http_get(port(), "/healthz").status, 200);
}

TEST_F(MetricsServerTest, Ipv6Loopback_Serves) {
  if (!MetricsServer::supports_ipv6())
    GTEST_SKIP() << "the linked civetweb has no IPv6 support";
  MetricsServerOptions options;
  options.listen = "[::1]:0";
  start(options);
  EXPECT_TRUE(server_->running());

  const auto response = http_request(port(), "GET", "/healthz", {}, /*ipv6=*/true);

  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
}

TEST_F(MetricsServerTest, Ipv6WithoutCivetwebSupport_StartFailsSayingSoAndSuggestingIpv4) {
  if (MetricsServer::supports_ipv6())
    GTEST_SKIP() << "the linked civetweb supports IPv6";
  MetricsServerOptions options;
  options.listen = "[::1]:9464";
  MetricsServer server(metrics_, health_, options);

  try {
    server.start();
    FAIL() << "started on IPv6 without IPv6 support";
  } catch (const MetricsServerError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[::1]:9464"), std::string::npos) << message;
    EXPECT_NE(message.find("IPv6"), std::string::npos) << message;
    EXPECT_NE(message.find("127.0.0.1:9464"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace warren::observability
