// [[queues]]: quorum/classic rules, dead-lettering that cannot silently lose messages,
// bindings to declared exchanges, and the x-arguments that must go through typed keys.
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(Queues, QuorumQueueWithoutDeadLetterExchange_IsRefusedExplainingTheLossAndTheFix) {
  EXPECT_THAT(
      problems_of(R"(
[[queues]]
name = "emails"
)"),
      ElementsAre(Problem(2, 1, "queues[0].dead_letter_exchange",
                          AllOf(HasSubstr("quorum queue \"emails\""), HasSubstr("drops a message"),
                                HasSubstr("delivery_limit"), HasSubstr("Set dead_letter_exchange"),
                                HasSubstr("allow_message_loss = true")))));
}

TEST(Queues, QuorumQueueAllowingMessageLoss_NeedsNoDeadLetterExchange) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "emails"
allow_message_loss = true
)"),
              IsEmpty());
}

TEST(Queues, ClassicQueue_NeedsNoDeadLetterExchange) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "emails"
type = "classic"
)"),
              IsEmpty());
}

TEST(Queues, UndeclaredDeadLetterExchange_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "emails"
dead_letter_exchange = "dead"
)"),
              ElementsAre(Problem(4, 24, "queues[0].dead_letter_exchange",
                                  HasSubstr("exchange \"dead\" is not declared"))));
}

TEST(Queues, PredeclaredAmqDeadLetterExchange_IsAccepted) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "emails"
dead_letter_exchange = "amq.direct"
)"),
              IsEmpty());
}

TEST(Queues, QuorumQueueThatIsExclusiveNonDurableOrAutoDelete_IsRefused) {
  EXPECT_THAT(
      problems_of(R"(
[[queues]]
name = "q"
allow_message_loss = true
exclusive = true
durable = false
auto_delete = true
)"),
      ElementsAre(Problem(5, 13, "queues[0].exclusive",
                          "quorum queues (the default type) cannot be exclusive; use "
                          "type = \"classic\""),
                  Problem(6, 11, "queues[0].durable", HasSubstr("always durable")),
                  Problem(7, 15, "queues[0].auto_delete", HasSubstr("cannot be auto-deleted"))));
}

TEST(Queues, ServerNamedQueueThatIsNotExclusiveClassic_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "replica"
type = "classic"
server_named = true
)"),
              ElementsAre(Problem(5, 16, "queues[0].server_named",
                                  HasSubstr("must be type = \"classic\" and exclusive = true"))));
}

TEST(Queues, DeliveryLimitOnClassicQueue_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
delivery_limit = 5
)"),
              ElementsAre(Problem(5, 18, "queues[0].delivery_limit",
                                  HasSubstr("only quorum queues have a delivery limit"))));
}

TEST(Queues, ZeroDeliveryLimitOrNegativeMaxLength_IsRefusedWithTheRange) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
allow_message_loss = true
delivery_limit = 0
max_length = -1
)"),
              ElementsAre(Problem(5, 18, "queues[0].delivery_limit",
                                  "must be an integer from 1 to 2147483647, got 0"),
                          Problem(6, 14, "queues[0].max_length",
                                  "must be an integer of at least 0, got -1")));
}

TEST(Queues, AtLeastOnceDeadLetteringWithoutRejectPublish_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
allow_message_loss = true
dead_letter_strategy = "at-least-once"
overflow = "drop-head"
)"),
              ElementsAre(Problem(5, 24, "queues[0].dead_letter_strategy",
                                  HasSubstr("needs type = \"quorum\" and overflow = "
                                            "\"reject-publish\""))));
}

TEST(Queues, AtLeastOnceDeadLetteringOnClassicQueue_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
dead_letter_strategy = "at-least-once"
overflow = "reject-publish"
)"),
              ElementsAre(Problem(5, 24, "queues[0].dead_letter_strategy",
                                  HasSubstr("needs type = \"quorum\""))));
}

TEST(Queues, RejectPublishDlxOverflowOnQuorumQueue_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "quorum"
allow_message_loss = true
overflow = "reject-publish-dlx"
)"),
              ElementsAre(Problem(6, 12, "queues[0].overflow",
                                  "quorum queues support overflow = \"drop-head\" or "
                                  "\"reject-publish\" only")));
}

TEST(Queues, UnknownTypeStrategyOrOverflow_IsRefusedListingTheChoices) {
  EXPECT_THAT(
      problems_of(R"(
[[queues]]
name = "q"
type = "stream"
dead_letter_strategy = "exactly-once"
overflow = "drop-tail"
allow_message_loss = true
)"),
      ElementsAre(Problem(4, 8, "queues[0].type", "must be one of classic, quorum; got \"stream\""),
                  Problem(5, 24, "queues[0].dead_letter_strategy",
                          "must be one of at-most-once, at-least-once; got "
                          "\"exactly-once\""),
                  Problem(6, 12, "queues[0].overflow",
                          "must be one of drop-head, reject-publish, "
                          "reject-publish-dlx; got \"drop-tail\"")));
}

TEST(Queues, DeadLetterRoutingKeyWithoutExchange_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
dead_letter_routing_key = "failed"
)"),
              ElementsAre(Problem(5, 27, "queues[0].dead_letter_routing_key",
                                  HasSubstr("set dead_letter_exchange too"))));
}

TEST(Queues, BadMessageTtl_IsRefusedAsADuration) {
  EXPECT_THAT(
      problems_of(R"(
[[queues]]
name = "q"
type = "classic"
message_ttl = 600000
)"),
      ElementsAre(Problem(5, 15, "queues[0].message_ttl",
                          AllOf(HasSubstr("must be a duration"), HasSubstr("got an integer")))));
}

TEST(Queues, DuplicateName_IsRefusedPointingAtTheFirst) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"

[[queues]]
name = "q"
type = "classic"
)"),
              ElementsAre(Problem(7, 8, "queues[1].name",
                                  "duplicate queue name \"q\"; first declared at test.toml:2:1")));
}

TEST(Queues, ReservedAmqPrefix_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "amq.q"
type = "classic"
)"),
              ElementsAre(Problem(3, 8, "queues[0].name", HasSubstr("reserved by RabbitMQ"))));
}

TEST(Queues, MissingName_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
type = "classic"
)"),
              ElementsAre(Problem(2, 1, "queues[0].name", "missing required key")));
}

TEST(QueueBindings, BindingToUndeclaredExchange_IsRefusedAtTheExchange) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
bindings = [ { exchange = "events", routing_key = "a" },
             { exchange = "evnets", routing_key = "b" } ]

[[exchanges]]
name = "events"
type = "topic"
)"),
              ElementsAre(Problem(6, 27, "queues[0].bindings[1].exchange",
                                  AllOf(HasSubstr("exchange \"evnets\" is not declared"),
                                        HasSubstr("[[exchanges]]")))));
}

TEST(QueueBindings, BindingToAmqExchange_IsAccepted) {
  const Config config = test::parse(R"(
[[queues]]
name = "q"
type = "classic"
bindings = [ { exchange = "amq.topic", routing_key = "a.#" } ]
)");
  EXPECT_EQ(config.queues.at(0).bindings.at(0).exchange, "amq.topic");
}

TEST(QueueBindings, BindingToDefaultExchange_IsRefusedAsRabbitMqWould) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
bindings = [ { exchange = "", routing_key = "q" } ]
)"),
              ElementsAre(Problem(5, 27, "queues[0].bindings[0].exchange",
                                  HasSubstr("cannot bind to the default exchange"))));
}

TEST(QueueBindings, BindingWithoutExchangeOrWithUnknownKey_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
type = "classic"
bindings = [ { routingkey = "a" } ]
)"),
              ElementsAre(Problem(5, 14, "queues[0].bindings[0].exchange", "missing required key"),
                          Problem(5, 16, "queues[0].bindings[0].routingkey",
                                  "unknown key (did you mean \"routing_key\"?); allowed keys: "
                                  "arguments, exchange, routing_key")));
}

TEST(QueueBindings, BindingsAsArrayOfTableSections_AreRead) {
  const Config config = test::parse(R"(
[[exchanges]]
name = "h"
type = "headers"

[[queues]]
name = "q"
type = "classic"
[[queues.bindings]]
exchange = "h"
arguments = { "x-match" = "any", kind = "order" }
)");
  ASSERT_EQ(config.queues.at(0).bindings.size(), 1u);
  EXPECT_EQ(config.queues[0].bindings[0].arguments.at("x-match"), ArgumentValue("any"));
}

TEST(QueueArguments, ArgumentThatHasATypedKey_IsRefusedNamingTheKey) {
  EXPECT_THAT(problems_of(R"(
[[queues]]
name = "q"
allow_message_loss = true
arguments = { "x-dead-letter-exchange" = "dlx", "x-max-priority" = 10 }
)"),
              ElementsAre(Problem(5, 42, "queues[0].arguments.x-dead-letter-exchange",
                                  HasSubstr("`dead_letter_exchange`"))));
}

}  // namespace
}  // namespace warren::config
