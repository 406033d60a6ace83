// Issue 19 item 10: the name of a queue a worker consumes ends every routing key of its retry
// delay levels (56 bytes of delay bits, then the name). A binding or routing key is an AMQP short
// string (at most 255 bytes), so a name over 199 bytes passed `warren check` and then could never
// be bound: the host reconnected forever. The loader refuses it, with the limit and the reason.
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string worker_on(const std::string& queue) {
  return "\n[[workers]]\nname = \"w\"\nplugin = \"p\"\nqueue = \"" + queue + "\"\n";
}

TEST(ConsumedQueueNames, ExternalQueueOf200Bytes_IsRefusedWithTheLimitAndTheReason) {
  EXPECT_THAT(problems_of(worker_on(std::string(200, 'q'))),
              ElementsAre(Problem(5, 9, "workers[0].queue",
                                  AllOf(HasSubstr("at most 199 bytes"), HasSubstr("got 200"),
                                        HasSubstr("retry delay"), HasSubstr("255")))));
}

TEST(ConsumedQueueNames, DeclaredQueueOf230Bytes_IsRefusedAtTheWorker) {
  const std::string name(230, 'q');
  std::string document = worker_on(name);
  document += "\n[[queues]]\nname = \"" + name + "\"\ntype = \"classic\"\n";
  EXPECT_THAT(problems_of(document),
              ElementsAre(Problem(5, 9, "workers[0].queue", HasSubstr("at most 199 bytes"))));
}

TEST(ConsumedQueueNames, QueueOf199Bytes_Loads) {
  EXPECT_THAT(problems_of(worker_on(std::string(199, 'q'))), IsEmpty());
}

TEST(ConsumedQueueNames, ServerNamedQueue_IsNotLimitedByItsLocalName) {
  // The broker picks the real name (amq.gen-..., 30 bytes); the configured one is only a label.
  const std::string name(230, 'q');
  std::string document = worker_on(name);
  document += "\n[[queues]]\nname = \"" + name +
              "\"\ntype = \"classic\"\nexclusive = true\nserver_named = true\n"
              "allow_message_loss = true\n";
  EXPECT_THAT(problems_of(document), IsEmpty());
}

TEST(ConsumedQueueNames, SqliteTableQueue_HasNoDelayKeyAndNoSuchLimit) {
  const std::string name(230, 'q');
  std::string document = worker_on(name);
  document += "\n[[queues]]\nname = \"" + name +
              "\"\n\n[broker]\ntransport = \"sqlite\"\n[broker.sqlite]\npath = \"/tmp/q.db\"\n";
  EXPECT_THAT(problems_of(document), IsEmpty());
}

}  // namespace
}  // namespace warren::config
