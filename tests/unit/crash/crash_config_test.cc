// The configuration of crash accounting: [host] state_dir (systemd's STATE_DIRECTORY, else
// /var/lib/warren; ${VAR:-default} expanded), [[workers]] max_crashes (default 3), and the warning
// when a quorum queue's delivery limit does not come after max_crashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "config_test_support.h"
#include "runtime/crash_watch.h"

namespace warren::config {
namespace {

using test::parse;
using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

LoadOptions with_environment(std::map<std::string, std::string> variables) {
  static std::map<std::string, std::string> current;
  current = std::move(variables);
  LoadOptions options;
  options.environment = [](const char* name) -> const char* {
    const auto it = current.find(name);
    return it == current.end() ? nullptr : it->second.c_str();
  };
  return options;
}

TEST(StateDir, Default_IsVarLibWarren) {
  EXPECT_EQ(parse("").host.state_dir, "/var/lib/warren");
}

TEST(StateDir, UnderSystemd_IsTheFirstStateDirectory) {
  EXPECT_EQ(
      parse("", with_environment({{"STATE_DIRECTORY", "/var/lib/warren/orders"}})).host.state_dir,
      "/var/lib/warren/orders");
  EXPECT_EQ(
      parse("", with_environment({{"STATE_DIRECTORY", "/var/lib/a:/var/lib/b"}})).host.state_dir,
      "/var/lib/a");
}

TEST(StateDir, Set_ExpandsTheEnvironmentLikeWorkerSettings) {
  const char* text = R"(
[host]
state_dir = "${WARREN_STATE_DIR:-/srv/warren}/crashes"
)";
  EXPECT_EQ(parse(text).host.state_dir, "/srv/warren/crashes");
  EXPECT_EQ(parse(text, with_environment({{"WARREN_STATE_DIR", "/run/w"}})).host.state_dir,
            "/run/w/crashes");
}

TEST(StateDir, UnsetVariableWithoutDefault_IsAProblemAtTheKey) {
  EXPECT_THAT(problems_of(R"(
[host]
state_dir = "${NOT_SET_ANYWHERE}"
)"),
              ElementsAre(Problem(3, 13, "host.state_dir", HasSubstr("NOT_SET_ANYWHERE"))));
}

TEST(StateDir, Empty_IsAProblem) {
  EXPECT_THAT(problems_of(R"(
[host]
state_dir = ""
)"),
              ElementsAre(Problem(3, 13, "host.state_dir", "must not be empty")));
}

TEST(StateDir, NamesTheHostsFiles) {
  EXPECT_EQ(runtime::CrashWatch::journal_path("/var/lib/warren", "orders-1"),
            "/var/lib/warren/orders-1.crash-journal");
  EXPECT_EQ(runtime::CrashWatch::ledger_path("/var/lib/warren", "a/b c"),
            "/var/lib/warren/a_b_c.crash-ledger");
}

TEST(MaxCrashes, Default_Is3) {
  const Config config = parse(R"(
[[workers]]
name = "w"
plugin = "p"
queue = "q"
)");
  EXPECT_EQ(config.workers.at(0).max_crashes, 3);
}

TEST(MaxCrashes, OutOfRange_IsAProblemAtTheKey) {
  EXPECT_THAT(problems_of(R"(
[[workers]]
name = "w"
plugin = "p"
queue = "q"
max_crashes = 0
)"),
              ElementsAre(Problem(6, 15, "workers[0].max_crashes", HasSubstr("0"))));
}

// A RabbitMQ config: worker "w" with `worker_keys` on quorum queue "q" with `queue_keys`.
std::string on_rabbitmq(const std::string& queue_keys, const std::string& worker_keys) {
  return R"(
[broker]
uri = "amqp://guest@localhost/"

[[exchanges]]
name = "dlx"
type = "fanout"

[[queues]]
name = "q"
type = "quorum"
)" + queue_keys +
         R"(

[[workers]]
name = "w"
plugin = "p"
queue = "q"
)" + worker_keys +
         "\n";
}

TEST(CrashLimitWarning, DeliveryLimitNotAboveMaxCrashes_IsWarnedAbout) {
  const Config config =
      parse(on_rabbitmq("dead_letter_exchange = \"dlx\"\ndelivery_limit = 3", "max_crashes = 3"));
  const auto warnings = config_warnings(config);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0],
              AllOf(HasSubstr("test.toml:15:1"), HasSubstr("worker \"w\" has max_crashes = 3"),
                    HasSubstr("delivery_limit = 3"), HasSubstr("higher than max_crashes"),
                    HasSubstr("crash accounting")));
}

TEST(CrashLimitWarning, DeliveryLimitAboveMaxCrashes_IsFine) {
  EXPECT_THAT(config_warnings(parse(on_rabbitmq(
                  "dead_letter_exchange = \"dlx\"\ndelivery_limit = 5", "max_crashes = 3"))),
              IsEmpty());
  EXPECT_THAT(config_warnings(parse(on_rabbitmq("dead_letter_exchange = \"dlx\"", ""))), IsEmpty());
}

TEST(CrashLimitWarning, TheDefaultLimitOf20_CountsToo) {
  const auto warnings =
      config_warnings(parse(on_rabbitmq("dead_letter_exchange = \"dlx\"", "max_crashes = 20")));
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("delivery_limit = 20 (the default)"));
}

TEST(CrashLimitWarning, NoLimitAtAll_IsNotThisWarning) {
  // Without a dead-letter exchange Warren sets no limit (the queue then needs
  // allow_message_loss); there is no backstop to come before.
  EXPECT_THAT(config_warnings(parse(on_rabbitmq("allow_message_loss = true", "max_crashes = 50"))),
              IsEmpty());
}

}  // namespace
}  // namespace warren::config
