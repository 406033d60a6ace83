// HeldFrames: frames kept back by a worker process are sent together, in order, each once; a
// fatal-signal handler can send them too, with no allocation.
#include "isolation/worker/held_frames.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;

std::vector<Frame> read_all(FrameSocket& socket) {
  std::vector<Frame> frames;
  Frame frame;
  while (socket.receive(frame) == FrameSocket::Status::frame)
    frames.push_back(frame);
  return frames;
}

Outcome ack(std::uint64_t sequence) {
  Outcome outcome;
  outcome.sequence = sequence;
  outcome.outcome.kind = host_abi::ReportedOutcome::Kind::ack;
  outcome.ran_for_ns = 1000 * sequence;
  return outcome;
}

TEST(HeldFrames, KeptFrames_AreSentTogetherInOrderThenForgotten) {
  auto [child, host] = FrameSocket::pair();
  HeldFrames held;
  EXPECT_TRUE(held.empty());
  held.keep(LogLine{1, LogLevel::info, "one"}, false);
  held.keep(ack(1), true);
  held.keep(ack(2), true);
  EXPECT_FALSE(held.empty());
  EXPECT_EQ(held.outcomes(), 2u);
  EXPECT_LE(held.since(), std::chrono::steady_clock::now());
  EXPECT_TRUE(read_all(host).empty()) << "nothing leaves before send()";

  ASSERT_TRUE(held.send(child, 1s));
  const std::vector<Frame> expected = {LogLine{1, LogLevel::info, "one"}, ack(1), ack(2)};
  EXPECT_EQ(read_all(host), expected);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(held.outcomes(), 0u);
  ASSERT_TRUE(held.send(child, 1s));
  EXPECT_TRUE(read_all(host).empty()) << "sent once";
}

TEST(HeldFrames, AFrameLargerThanAPacket_IsHeldAndSentWhole) {
  auto [child, host] = FrameSocket::pair();
  HeldFrames held;
  LogLine large{3, LogLevel::warn, std::string(3 * kPacketPayload / 2, 'x')};
  held.keep(ack(2), true);
  held.keep(large, false);
  ASSERT_TRUE(held.send(child, 1s));
  const std::vector<Frame> expected = {ack(2), large};
  EXPECT_EQ(read_all(host), expected);
}

TEST(HeldFrames, SendFromSignal_WritesWhatIsHeld) {
  auto [child, host] = FrameSocket::pair();
  HeldFrames held;
  held.keep(ack(7), true);
  held.keep(ack(8), true);
  held.send_from_signal(child.fd());
  const std::vector<Frame> expected = {ack(7), ack(8)};
  EXPECT_EQ(read_all(host), expected);
}

TEST(HeldFrames, SendToAPeerThatIsGone_FailsAndForgets) {
  auto [child, host] = FrameSocket::pair();
  HeldFrames held;
  held.keep(ack(1), true);
  { FrameSocket gone = std::move(host); }
  EXPECT_FALSE(held.send(child, 1s));
  EXPECT_TRUE(held.empty());
}

}  // namespace
}  // namespace warren::isolation
