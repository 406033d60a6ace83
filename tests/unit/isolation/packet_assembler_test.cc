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

// Every frame in order, out of the writer's packets.
std::vector<std::string> frames_of(const PacketWriter& writer) {
  PacketAssembler assembler;
  std::vector<std::string> frames;  // copied at once: a view lasts until the next add_all
  for (const std::string& packet : writer.packets()) {
    std::vector<std::string_view> views;
    assembler.add_all(packet, views);
    frames.insert(frames.end(), views.begin(), views.end());
  }
  return frames;
}

TEST(PacketWriter, SmallFrames_ShareOnePacket_AndComeBackInOrder) {
  PacketWriter writer;
  writer.add("first");
  writer.add("");
  writer.add(std::string(1000, 'm'));
  ASSERT_EQ(writer.packets().size(), 1u);
  EXPECT_EQ(writer.packets()[0][0], static_cast<char>(kBatch));
  PacketAssembler assembler;
  std::vector<std::string_view> frames;
  assembler.add_all(writer.packets()[0], frames);
  EXPECT_EQ(frames, (std::vector<std::string_view>{"first", "", std::string(1000, 'm')}));
  EXPECT_FALSE(assembler.in_frame());
}

TEST(PacketWriter, ALargeFrameAmongSmallOnes_TravelsCutAndAlone_OrderKept) {
  const std::string large(kPacketPayload + 100, 'L');
  PacketWriter writer;
  writer.add("a");
  writer.add(large);
  writer.add("b");
  writer.add("c");
  ASSERT_EQ(writer.packets().size(), 4u) << "a | large in two | b c";
  EXPECT_EQ(frames_of(writer), (std::vector<std::string>{"a", large, "b", "c"}));
}

TEST(PacketWriter, ManySmallFrames_FillPacketsUpToThePayload) {
  PacketWriter writer;
  const std::string frame(1000, 'f');
  for (int i = 0; i < 200; ++i)
    writer.add(frame);
  EXPECT_EQ(writer.packets().size(), 4u);  // 65 frames of 1004 bytes fit a 64 KiB payload
  for (const std::string& packet : writer.packets())
    EXPECT_LE(packet.size(), kPacketPayload + 1);
  std::vector<std::string_view> frames;
  PacketAssembler assembler;
  for (const std::string& packet : writer.packets())
    assembler.add_all(packet, frames);
  EXPECT_EQ(frames.size(), 200u);
  writer.clear();
  EXPECT_TRUE(writer.empty());
}

// Writes BYTES as a frame through add_encoded.
void add_encoded_bytes(PacketWriter& writer, const std::string& bytes) {
  writer.add_encoded([&](FrameWriter& out) {
    for (char c : bytes)
      out.u8(static_cast<std::uint8_t>(c));
  });
}

TEST(PacketWriter, EncodedInPlace_TheSamePacketsAsAddingTheBytes) {
  PacketWriter added, encoded;
  const std::vector<std::string> frames{"one", "", std::string(3000, 'x'), "two"};
  for (const std::string& frame : frames) {
    added.add(frame);
    add_encoded_bytes(encoded, frame);
  }
  ASSERT_EQ(encoded.packets().size(), added.packets().size());
  for (std::size_t i = 0; i < added.packets().size(); ++i)
    EXPECT_EQ(encoded.packets()[i], added.packets()[i]);
  EXPECT_EQ(frames_of(encoded), frames);
}

TEST(PacketWriter, EncodedFramesPastABatchOrAPacket_GoWhereAddWouldPutThem) {
  PacketWriter writer;
  const std::string nearly_full(kPacketPayload - 8, 'n');
  const std::string large(kPacketPayload + 10, 'L');
  add_encoded_bytes(writer, "a");
  add_encoded_bytes(writer, nearly_full);  // does not fit after "a": a batch of its own
  add_encoded_bytes(writer, "b");          // nor does this after it
  add_encoded_bytes(writer, large);        // cut in two, alone
  add_encoded_bytes(writer, "c");
  EXPECT_EQ(writer.packets().size(), 6u) << "a | nearly full | b | large in two | c";
  for (const std::string& packet : writer.packets())
    EXPECT_LE(packet.size(), kPacketPayload + 1);
  EXPECT_EQ(frames_of(writer), (std::vector<std::string>{"a", nearly_full, "b", large, "c"}));
}

TEST(PacketWriter, AnEncodingThatThrows_LeavesThePacketsAsTheyWere) {
  PacketWriter writer;
  add_encoded_bytes(writer, "kept");
  const auto throwing = [](FrameWriter& out) {
    out.u32(7);
    throw FrameError("a field too large");
  };
  EXPECT_THROW(writer.add_encoded(throwing), FrameError);
  add_encoded_bytes(writer, "after");
  EXPECT_EQ(frames_of(writer), (std::vector<std::string>{"kept", "after"}));

  PacketWriter empty;
  EXPECT_THROW(empty.add_encoded(throwing), FrameError);
  EXPECT_TRUE(empty.empty()) << "a batch opened for the frame alone is dropped";
}

TEST(PacketWriter, Cleared_ItsBuffersServeTheNextFramesWithNothingOfTheOld) {
  PacketWriter writer;
  for (int i = 0; i < 100; ++i)
    add_encoded_bytes(writer, std::string(1000, 'o'));
  writer.add(std::string(kPacketPayload * 2, 'L'));
  writer.clear();
  EXPECT_TRUE(writer.empty());
  EXPECT_EQ(writer.packets().size(), 0u);
  add_encoded_bytes(writer, "new");
  writer.add("er");
  EXPECT_EQ(frames_of(writer), (std::vector<std::string>{"new", "er"}));
}

TEST(PacketAssembler, ABatchCutShortOrInsideALargeFrame_IsRefused) {
  PacketAssembler assembler;
  std::vector<std::string_view> frames;
  EXPECT_THROW(assembler.add_all(std::string("\x02\x05\0\0\0abc", 8), frames), FrameError);
  EXPECT_THROW(assembler.add_all(std::string("\x02\x05\0", 3), frames), FrameError);
  PacketAssembler midway;
  midway.add_all(std::string("\x01part"), frames);
  EXPECT_THROW(midway.add_all(std::string("\x02\x01\0\0\0x", 6), frames), FrameError);
  PacketAssembler small(4);
  EXPECT_THROW(small.add_all(std::string("\x02\x05\0\0\0abcde", 10), frames), FrameError);
  EXPECT_TRUE(frames.empty());
  EXPECT_THROW(PacketAssembler().add(std::string("\x02\0\0\0\0", 5)), FrameError)
      << "add() takes one frame: a batch is add_all's";
}

}  // namespace
}  // namespace warren::isolation
