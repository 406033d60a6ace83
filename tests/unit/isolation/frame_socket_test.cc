// Frames over a real socket pair: boundaries kept, large frames cut and joined, a closed peer an
// EOF (never a SIGPIPE), a peer that stops reading a timeout.
#include "isolation/frame_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "isolation/frame_codec.h"

namespace warren::isolation {
namespace {

using namespace std::chrono_literals;

TEST(FrameSocket, FramesArriveWholeAndInOrder) {
  auto [host, child] = FrameSocket::pair();
  ASSERT_TRUE(host.send(Ping{1}, 1s));
  ASSERT_TRUE(host.send(Deliver{2, "body", "rk", "ex", "id", "", 1, false, {}}, 1s));
  EXPECT_EQ(child.receive_within(1s), Frame(Ping{1}));
  auto second = child.receive_within(1s);
  ASSERT_TRUE(second);
  EXPECT_EQ(std::get<Deliver>(*second).body, "body");
  Frame none;
  EXPECT_EQ(child.receive(none), FrameSocket::Status::would_block);
}

TEST(FrameSocket, AFrameLargerThanTheSocketBuffer_ArrivesWhole) {
  auto [host, child] = FrameSocket::pair();
  Deliver big{1, std::string(3 * 1024 * 1024, 'b'), "rk", "ex", "id", "", 1, false, {}};
  big.body[1234567] = 'c';
  std::thread reader([&child = child, &big] {
    auto got = child.receive_within(10s);
    ASSERT_TRUE(got);
    EXPECT_EQ(std::get<Deliver>(*got), big);
  });
  EXPECT_TRUE(host.send(big, 10s));
  reader.join();
}

TEST(FrameSocket, APeerGone_IsEndOfStreamAndAFailedSend) {
  auto [host, child] = FrameSocket::pair();
  { FrameSocket gone = std::move(child); }
  EXPECT_FALSE(host.send(Ping{1}, 1s));  // EPIPE, and no SIGPIPE killed the test
  auto [a, b] = FrameSocket::pair();
  { FrameSocket gone = std::move(b); }
  EXPECT_EQ(a.receive_within(1s), std::nullopt);
  EXPECT_TRUE(a.closed());
  EXPECT_EQ(a.closed_reason(), "end of stream");
}

TEST(FrameSocket, APeerGoneWithOurFramesUnread_ItsLastFramesAreStillRead) {
  // A child that dies with a window of Delivers unread: the kernel reports ECONNRESET, but the
  // outcomes it sent before dying are still queued, and they say which messages ran.
  auto [host, child] = FrameSocket::pair();
  ASSERT_TRUE(host.send(Ping{1}, 1s));
  ASSERT_TRUE(host.send(Ping{2}, 1s));
  ASSERT_TRUE(child.send(Pong{1}, 1s));
  ASSERT_TRUE(child.send(Pong{2}, 1s));
  { FrameSocket gone = std::move(child); }
  Frame frame;
  ASSERT_EQ(host.receive_waiting(frame, 1s), FrameSocket::Status::frame);
  EXPECT_EQ(frame, Frame(Pong{1}));
  ASSERT_EQ(host.receive(frame), FrameSocket::Status::frame);
  EXPECT_EQ(frame, Frame(Pong{2}));
  EXPECT_EQ(host.receive_waiting(frame, 1s), FrameSocket::Status::closed);
  EXPECT_EQ(host.closed_reason().substr(0, 13), "end of stream");
}

TEST(FrameSocket, APeerThatDoesNotRead_TimesTheSendOut) {
  auto [host, child] = FrameSocket::pair();
  Deliver big{1, std::string(8 * 1024 * 1024, 'b'), "", "", "", "", 1, false, {}};
  EXPECT_FALSE(host.send(big, 100ms));
  EXPECT_TRUE(host.closed());
  EXPECT_EQ(host.closed_reason(), "the peer did not read a frame within its time");
}

TEST(FrameSocket, AMalformedFrame_IsAFrameError) {
  auto [host, child] = FrameSocket::pair();
  std::string packet = std::string(1, static_cast<char>(kLastPacket)) + "\x7f";
  ASSERT_EQ(::send(host.fd(), packet.data(), packet.size(), MSG_NOSIGNAL), 2);
  EXPECT_THROW(child.receive_within(1s), FrameError);
}

TEST(FrameSocket, SendAll_SeveralFramesInOnePacket_AreReadOneByOneInOrder) {
  auto [a, b] = FrameSocket::pair();
  const std::vector<Frame> frames = {Ping{1}, LogLine{2, LogLevel::warn, "two"}, Pong{3}};
  ASSERT_TRUE(a.send_all(frames, 1s));
  std::vector<Frame> read;
  Frame frame;
  while (b.receive(frame) == FrameSocket::Status::frame)
    read.push_back(frame);
  EXPECT_EQ(read, frames);
  // The rest of a batch comes first even after the peer is gone.
  ASSERT_TRUE(a.send_all(frames, 1s));
  { FrameSocket gone = std::move(a); }
  read.clear();
  while (b.receive(frame) == FrameSocket::Status::frame)
    read.push_back(frame);
  EXPECT_EQ(read, frames);
  EXPECT_EQ(b.receive(frame), FrameSocket::Status::closed);
}

TEST(FrameSocket, MovedMidBatch_TheRestOfTheBatchComesFromTheNewOwner) {
  auto [a, b] = FrameSocket::pair();
  const std::vector<Frame> frames = {Ping{1}, Ping{2}, Ping{3}};
  ASSERT_TRUE(a.send_all(frames, 1s));
  Frame frame;
  ASSERT_EQ(b.receive(frame), FrameSocket::Status::frame);
  EXPECT_EQ(frame, Frame(Ping{1}));
  FrameSocket moved = std::move(b);
  std::vector<Frame> rest;
  while (moved.receive(frame) == FrameSocket::Status::frame)
    rest.push_back(frame);
  EXPECT_EQ(rest, (std::vector<Frame>{Ping{2}, Ping{3}}));
}

}  // namespace
}  // namespace warren::isolation
