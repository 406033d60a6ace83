// [[exchanges]]: required keys, allowed types, names RabbitMQ accepts, and no duplicates.
#include <string>

#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Exchanges, MissingNameAndType_AreReportedAtTheSection) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
durable = true
)"),
              ElementsAre(Problem(2, 1, "exchanges[0].name", "missing required key"),
                          Problem(2, 1, "exchanges[0].type",
                                  "missing required key; one of direct, fanout, topic, headers")));
}

TEST(Exchanges, UnknownType_IsRefusedListingTheTypes) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "x"
type = "x-delayed-message"
)"),
              ElementsAre(Problem(4, 8, "exchanges[0].type",
                                  "must be one of direct, fanout, topic, headers; got "
                                  "\"x-delayed-message\"")));
}

TEST(Exchanges, DuplicateName_IsRefusedPointingAtTheFirst) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "events"
type = "topic"

[[exchanges]]
name = "events"
type = "fanout"
)"),
              ElementsAre(Problem(7, 8, "exchanges[1].name",
                                  "duplicate exchange name \"events\"; first declared at "
                                  "test.toml:2:1")));
}

TEST(Exchanges, ReservedAmqPrefix_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "amq.topic"
type = "topic"
)"),
              ElementsAre(Problem(3, 8, "exchanges[0].name", HasSubstr("reserved by RabbitMQ"))));
}

TEST(Exchanges, NameLongerThan255Bytes_IsRefused) {
  EXPECT_THAT(
      problems_of("\n[[exchanges]]\nname = \"" + std::string(256, 'x') + "\"\ntype = \"topic\"\n"),
      ElementsAre(Problem(3, 8, "exchanges[0].name", HasSubstr("at most 255 bytes long"))));
}

TEST(Exchanges, NonScalarArgument_IsRefusedAtTheArgument) {
  EXPECT_THAT(problems_of(R"(
[[exchanges]]
name = "x"
type = "topic"
arguments = { "alternate-exchange" = ["a", "b"], "x.y" = { z = 1 } }
)"),
              ElementsAre(Problem(5, 38, "exchanges[0].arguments.alternate-exchange",
                                  "must be a string, integer, float or boolean, got an array"),
                          Problem(5, 58, "exchanges[0].arguments.\"x.y\"",
                                  "must be a string, integer, float or boolean, got a table")));
}

TEST(Exchanges, SingleTableInsteadOfArrayOfTables_IsRefusedSayingHowToWriteIt) {
  EXPECT_THAT(problems_of(R"(
[exchanges]
name = "x"
)"),
              ElementsAre(Problem(
                  2, 1, "exchanges",
                  AllOf(HasSubstr("must be an array, got a table"), HasSubstr("[[exchanges]]")))));
}

TEST(Exchanges, ArrayElementThatIsNotATable_IsRefusedAtTheElement) {
  EXPECT_THAT(problems_of(R"(
exchanges = ["events"]
)"),
              ElementsAre(Problem(2, 14, "exchanges[0]", "must be a table, got a string")));
}

}  // namespace
}  // namespace warren::config
