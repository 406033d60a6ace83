#include "isolation/packet_assembler.h"

#include <gtest/gtest.h>

#include "isolation/frame_codec.h"

namespace warren::isolation {
namespace {

TEST(PacketAssembler, ASmallFrame_IsOnePacket) {
  auto packets = split_into_packets("abc");
  ASSERT_EQ(packets.size(), 1u);
  PacketAssembler assembler;
  EXPECT_EQ(assembler.add(packets[0]), "abc");
  EXPECT_FALSE(assembler.in_frame());
}

TEST(PacketAssembler, ALargeFrame_IsCutAndJoinedBack) {
  std::string frame(kPacketPayload * 2 + 17, 'x');
  frame[kPacketPayload] = 'y';
  auto packets = split_into_packets(frame);
  ASSERT_EQ(packets.size(), 3u);
  PacketAssembler assembler;
  EXPECT_EQ(assembler.add(packets[0]), std::nullopt);
  EXPECT_TRUE(assembler.in_frame());
  EXPECT_EQ(assembler.add(packets[1]), std::nullopt);
  EXPECT_EQ(assembler.add(packets[2]), frame);
}

TEST(PacketAssembler, AnEmptyFrame_StillTakesAPacket) {
  auto packets = split_into_packets("");
  ASSERT_EQ(packets.size(), 1u);
  PacketAssembler assembler;
  EXPECT_EQ(assembler.add(packets[0]), "");
}

TEST(PacketAssembler, AFrameOverTheLimit_IsRefused) {
  PacketAssembler assembler(10);
  std::string more(1, static_cast<char>(kMoreFollows));
  EXPECT_EQ(assembler.add(more + "12345"), std::nullopt);
  EXPECT_THROW(assembler.add(more + "123456"), FrameError);
}

TEST(PacketAssembler, EmptyPacketsAndUnknownMarkers_AreRefused) {
  PacketAssembler assembler;
  EXPECT_THROW(assembler.add(""), FrameError);
  EXPECT_THROW(assembler.add("\x05zz"), FrameError);
}

}  // namespace
}  // namespace warren::isolation
