// [[outbox]]: relays from a PostgreSQL outbox table to a declared exchange.
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

TEST(Outbox, MissingNameAndDsn_AreReportedAtTheSection) {
  EXPECT_THAT(problems_of(R"(
[[outbox]]
batch = 10
)"),
              ElementsAre(Problem(2, 1, "outbox[0].name", "missing required key"),
                          Problem(2, 1, "outbox[0].dsn", HasSubstr("set dsn or dsn_file"))));
}

TEST(Outbox, BothDsnAndDsnFile_IsRefused) {
  EXPECT_THAT(
      problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
dsn_file = "/etc/warren/dsn"
)"),
      ElementsAre(Problem(5, 12, "outbox[0].dsn_file", "set either dsn or dsn_file, not both")));
}

TEST(Outbox, DsnFile_IsReadWithoutItsTrailingNewline) {
  const test::TempFile dsn("postgresql://relay@db/livraria\n");
  const Config config = test::parse(R"(
[[outbox]]
name = "o"
dsn_file = ")" + dsn.str() + R"("
)");
  EXPECT_EQ(config.outboxes.at(0).dsn, "postgresql://relay@db/livraria");
}

TEST(Outbox, BatchAndPollIntervalOutOfRange_AreRefused) {
  EXPECT_THAT(
      problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
batch = 20000
poll_interval = "0s"
max_attempts = 0
)"),
      ElementsAre(Problem(5, 9, "outbox[0].batch", "must be an integer from 1 to 10000, got 20000"),
                  Problem(6, 17, "outbox[0].poll_interval", "must be at least 1ms, got \"0s\""),
                  Problem(7, 16, "outbox[0].max_attempts",
                          "must be an integer from 1 to 2147483647, got 0")));
}

TEST(Outbox, Retention_IsReadAndBelowOneSecondRefused) {
  EXPECT_EQ(test::parse(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
retention = "2d"
)")
                .outboxes.at(0)
                .retention,
            48h);
  EXPECT_THAT(problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
retention = "10ms"
)"),
              ElementsAre(Problem(5, 13, "outbox[0].retention", HasSubstr("must be at least 1s"))));
}

TEST(Outbox, UndeclaredExchange_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
exchange = "events"
)"),
              ElementsAre(Problem(5, 12, "outbox[0].exchange",
                                  HasSubstr("exchange \"events\" is not declared"))));
}

TEST(Outbox, DeclaredOrPredeclaredExchange_IsAccepted) {
  EXPECT_THAT(problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
exchange = "events"

[[outbox]]
name = "p"
dsn = "postgresql:///y"
exchange = "amq.topic"

[[exchanges]]
name = "events"
type = "topic"
)"),
              IsEmpty());
}

TEST(Outbox, BackoffMaxBelowInitialOrUnknownKey_IsRefused) {
  EXPECT_THAT(
      problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"
backoff = { initial = "1m", max = "1s", factor = 2 }
)"),
      ElementsAre(
          Problem(5, 35, "outbox[0].backoff.max", "must be at least initial (1m), got \"1s\""),
          Problem(5, 41, "outbox[0].backoff.factor",
                  AllOf(HasSubstr("unknown key"), HasSubstr("allowed keys: initial, max")))));
}

TEST(Outbox, DuplicateName_IsRefusedPointingAtTheFirst) {
  EXPECT_THAT(problems_of(R"(
[[outbox]]
name = "o"
dsn = "postgresql:///x"

[[outbox]]
name = "o"
dsn = "postgresql:///x"
)"),
              ElementsAre(Problem(7, 8, "outbox[1].name",
                                  "duplicate outbox name \"o\"; first declared at test.toml:2:1")));
}

TEST(Outbox, TwoRelaysOfOneDatabaseWithDifferentExchanges_AreRefusedWithoutShowingTheDsn) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "a"
type = "topic"
[[exchanges]]
name = "b"
type = "topic"

[[outbox]]
name = "first"
dsn = "postgresql://relay:s3cret@db/shop"
exchange = "a"

[[outbox]]
name = "second"
dsn = "postgresql://relay:s3cret@db/shop"
exchange = "b"
)"),
              ElementsAre(Problem(
                  16, 7, "outbox[1].dsn",
                  AllOf(HasSubstr("the same database as outbox \"first\" (test.toml:9:1)"),
                        HasSubstr("one [[outbox]] per database"), Not(HasSubstr("s3cret"))))));
}

TEST(Outbox, TwoRelaysOfOneDatabaseWithTheSameExchange_AreAccepted) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "a"
type = "topic"

[[outbox]]
name = "first"
dsn = "postgresql:///shop"
exchange = "a"

[[outbox]]
name = "second"
dsn = "postgresql:///shop"
exchange = "a"
)"),
              IsEmpty());
}

}  // namespace
}  // namespace warren::config
