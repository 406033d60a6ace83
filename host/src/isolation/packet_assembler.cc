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

void PacketWriter::add(std::string_view frame) {
  if (1 + kLength + frame.size() > kPacketPayload) {
    for (std::string& packet : split_into_packets(frame))
      packets_.push_back(std::move(packet));
    last_is_batch_ = false;
    return;
  }
  if (!last_is_batch_ || packets_.back().size() + kLength + frame.size() > kPacketPayload) {
    std::string packet;
    packet.reserve(std::max<std::size_t>(1 + kLength + frame.size(), 512));
    packet.push_back(static_cast<char>(kBatch));
    packets_.push_back(std::move(packet));
    last_is_batch_ = true;
  }
  std::string& batch = packets_.back();
  put_u32(batch, static_cast<std::uint32_t>(frame.size()));
  batch.append(frame);
}

void PacketWriter::clear() noexcept {
  packets_.clear();
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
