#include "isolation/packet_assembler.h"

#include <algorithm>

#include "isolation/frame_codec.h"

namespace warren::isolation {

std::vector<std::string> split_into_packets(std::string_view frame) {
  std::vector<std::string> packets;
  do {
    std::string_view part = frame.substr(0, kPacketPayload);
    frame.remove_prefix(part.size());
    std::string packet;
    packet.reserve(part.size() + 1);
    packet.push_back(static_cast<char>(frame.empty() ? kLastPacket : kMoreFollows));
    packet.append(part);
    packets.push_back(std::move(packet));
  } while (!frame.empty());
  return packets;
}

namespace {
void put_u32(std::string& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8)
    out.push_back(static_cast<char>((value >> shift) & 0xff));
}
std::uint32_t get_u32(std::string_view in) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}
constexpr std::size_t kLength = 4;
}  // namespace

std::string& PacketWriter::next_packet() {
  if (used_ == packets_.size())
    packets_.emplace_back().reserve(512);
  std::string& packet = packets_[used_++];
  packet.clear();
  return packet;
}

std::string& PacketWriter::open_batch(std::size_t frame_size) {
  if (!last_is_batch_ || packets_[used_ - 1].size() + kLength + frame_size > kPacketPayload) {
    next_packet().push_back(static_cast<char>(kBatch));
    last_is_batch_ = true;
  }
  return packets_[used_ - 1];
}

void PacketWriter::add(std::string_view frame) {
  if (1 + kLength + frame.size() > kPacketPayload) {
    for (std::string& packet : split_into_packets(frame))
      next_packet() = std::move(packet);
    last_is_batch_ = false;
    return;
  }
  std::string& batch = open_batch(frame.size());
  put_u32(batch, static_cast<std::uint32_t>(frame.size()));
  batch.append(frame);
}

std::size_t PacketWriter::begin_encoded() {
  std::string& batch = open_batch(0);
  const std::size_t at = batch.size();
  put_u32(batch, 0);  // the length, once the frame is written
  return at;
}

void PacketWriter::end_encoded(std::size_t at) {
  std::string& batch = packets_[used_ - 1];
  const std::size_t size = batch.size() - at - kLength;
  if (batch.size() <= kPacketPayload) {
    for (std::size_t i = 0; i < kLength; ++i)
      batch[at + i] = static_cast<char>((size >> (8 * i)) & 0xff);
    return;
  }
  // It did not fit what the batch had left: out again, and added as add() would have.
  std::string frame(batch, at + kLength);
  abandon_encoded(at);
  last_is_batch_ = false;
  add(frame);
}

void PacketWriter::abandon_encoded(std::size_t at) noexcept {
  std::string& batch = packets_[used_ - 1];
  batch.resize(at);
  if (batch.size() == 1) {  // the batch held only this frame
    --used_;
    last_is_batch_ = false;
  }
}

void PacketWriter::clear() noexcept {
  // The packets' buffers stay for the next frames, but not those a large frame grew: a writer
  // keeps a few batches' worth at most.
  constexpr std::size_t kKept = 4;
  for (std::size_t i = 0; i < packets_.size(); ++i) {
    if (i >= kKept || packets_[i].capacity() > kPacketPayload + 1)
      std::string().swap(packets_[i]);
  }
  if (packets_.size() > kKept)
    packets_.resize(kKept);
  used_ = 0;
  last_is_batch_ = false;
}

std::optional<std::string> PacketAssembler::add(std::string_view packet) {
  if (!packet.empty() && static_cast<std::uint8_t>(packet[0]) == kBatch)
    throw FrameError("a batch packet where one frame was expected");
  std::vector<std::string_view> frames;
  add_all(packet, frames);
  if (frames.empty())
    return std::nullopt;
  return std::string(frames.front());
}

void PacketAssembler::add_all(std::string_view packet, std::vector<std::string_view>& frames) {
  if (packet.empty())
    throw FrameError("empty packet (no marker byte)");
  auto marker = static_cast<std::uint8_t>(packet[0]);
  if (marker != kLastPacket && marker != kMoreFollows && marker != kBatch)
    throw FrameError("packet marker " + std::to_string(marker) + " is unknown");
  packet.remove_prefix(1);
  if (marker == kBatch) {
    if (!pending_.empty())
      throw FrameError("a batch packet in the middle of a frame");
    while (!packet.empty()) {
      if (packet.size() < kLength)
        throw FrameError("a batch packet cut short in a frame's length");
      const std::uint32_t size = get_u32(packet);
      packet.remove_prefix(kLength);
      if (size > packet.size())
        throw FrameError("a batch packet cut short in a frame of " + std::to_string(size) +
                         " bytes");
      if (size > max_frame_)
        throw FrameError("frame over " + std::to_string(max_frame_) + " bytes");
      frames.push_back(packet.substr(0, size));
      packet.remove_prefix(size);
    }
    return;
  }
  if (pending_.size() + packet.size() > max_frame_)
    throw FrameError("frame over " + std::to_string(max_frame_) + " bytes");
  if (marker == kLastPacket && pending_.empty()) {
    frames.push_back(packet);  // a frame in one packet: no copy
    return;
  }
  pending_.append(packet);
  if (marker == kMoreFollows)
    return;
  whole_.swap(pending_);
  pending_.clear();
  frames.push_back(whole_);
}

}  // namespace warren::isolation
