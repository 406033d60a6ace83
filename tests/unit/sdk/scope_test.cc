// Per-message scopes: objects a handler puts in ctx.scope() live through handle() and die when
// the message is settled, newest first, whatever the outcome.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "warren/sdk.h"
#include "warren/testing/harness.h"

namespace {

using warren::testing::Harness;
using warren::testing::Result;
using warren::testing::TestMessage;

// What happened, in order, across handle() and the scope's destructors.
std::vector<std::string>& journal() {
  static std::vector<std::string> events;
  return events;
}

struct Tracked {
  explicit Tracked(std::string label) : name(std::move(label)) {
    journal().push_back("made " + name);
  }
  ~Tracked() { journal().push_back("destroyed " + name); }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  std::string name;
};

struct Connection {
  int id = 0;
};

// Makes two scoped objects, checks they are still alive and unique per message, then does what
// the body says.
class ScopedWork final : public warren::Handler {
 public:
  explicit ScopedWork(warren::PluginContext&) {}
  warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override {
    ctx.scope().make<Tracked>("first");
    ctx.scope().make<Tracked>("second");
    Connection& connection = ctx.scope().get_or_make<Connection>();
    connection.id += 1;
    if (ctx.scope().get_or_make<Connection>().id != 1) {
      throw std::logic_error("get_or_make made a second Connection in one message");
    }
    journal().push_back("handled " + std::string(msg.message_id()));
    if (msg.body() == "throw")
      throw std::runtime_error("boom");
    return warren::Outcome::ack();
  }
};

class ScopeTest : public ::testing::Test {
 protected:
  void SetUp() override { journal().clear(); }
};

TEST_F(ScopeTest, ScopedObjects_AreDestroyedWhenTheMessageSettles_NewestFirst) {
  Harness harness = Harness::of<ScopedWork>();
  TestMessage message;
  message.message_id = "m-1";

  const Result r = harness.deliver(message);

  EXPECT_EQ(r.kind, Result::Kind::ack) << r;
  EXPECT_EQ(journal(), (std::vector<std::string>{"made first", "made second", "handled m-1",
                                                 "destroyed second", "destroyed first"}));
  EXPECT_EQ(harness.live_scopes(), 0u);
}

TEST_F(ScopeTest, ScopedObjects_AreDestroyedAlsoWhenTheHandlerThrows) {
  Harness harness = Harness::of<ScopedWork>();
  TestMessage message;
  message.message_id = "m-2";
  message.body = "throw";

  const Result r = harness.deliver(message);

  EXPECT_EQ(r.kind, Result::Kind::retry) << r;
  EXPECT_EQ(journal().back(), "destroyed first");
  EXPECT_EQ(harness.live_scopes(), 0u);
}

TEST_F(ScopeTest, EachMessage_GetsItsOwnScope) {
  Harness harness = Harness::of<ScopedWork>();
  TestMessage message;
  message.message_id = "a";
  EXPECT_EQ(harness.deliver(message).kind, Result::Kind::ack);
  message.message_id = "b";
  // get_or_make<Connection> would find a stale Connection (id 2) and throw if scopes leaked.
  EXPECT_EQ(harness.deliver(message).kind, Result::Kind::ack);
  EXPECT_EQ(journal().size(), 10u);
}

// Reports, from inside handle(), how many scopes the host is holding.
class ScopeCounter final : public warren::Handler {
 public:
  explicit ScopeCounter(warren::PluginContext&) {}
  static inline Harness* harness = nullptr;
  static inline std::size_t live_during_handle = 99;
  warren::Outcome handle(const warren::Message&, warren::Context& ctx) override {
    ctx.scope().make<int>(1);
    live_during_handle = harness->live_scopes();
    return warren::Outcome::ack();
  }
};

TEST_F(ScopeTest, Scope_IsAliveDuringHandleAndGoneAfterDeliverReturns) {
  Harness harness = Harness::of<ScopeCounter>();
  ScopeCounter::harness = &harness;

  harness.deliver(TestMessage{});

  EXPECT_EQ(ScopeCounter::live_during_handle, 1u);
  EXPECT_EQ(harness.live_scopes(), 0u);
}

}  // namespace
