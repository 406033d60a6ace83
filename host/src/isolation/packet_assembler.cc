#include "isolation/packet_assembler.h"

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

std::optional<std::string> PacketAssembler::add(std::string_view packet) {
  if (packet.empty())
    throw FrameError("empty packet (no marker byte)");
  auto marker = static_cast<std::uint8_t>(packet[0]);
  if (marker != kLastPacket && marker != kMoreFollows)
    throw FrameError("packet marker " + std::to_string(marker) + " is unknown");
  packet.remove_prefix(1);
  if (pending_.size() + packet.size() > max_frame_)
    throw FrameError("frame over " + std::to_string(max_frame_) + " bytes");
  pending_.append(packet);
  if (marker == kMoreFollows)
    return std::nullopt;
  std::string frame;
  frame.swap(pending_);
  return frame;
}

}  // namespace warren::isolation
