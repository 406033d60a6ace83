// A frame travels as one or more packets of a SOCK_SEQPACKET socket: a socket buffer caps one
// packet (about 200 KiB by default), a message body does not. Each packet starts with one byte,
// kMoreFollows or kLastPacket; PacketAssembler joins them back and refuses a frame larger than
// its limit, so a child that writes without end costs the host that limit, not its memory.
// Small frames sent together share a packet (kBatch: each frame after its u32 length), so that a
// window of Delivers or a child's held Outcomes cost the kernel one packet, not one each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "isolation/frame_codec.h"

namespace warren::isolation {

inline constexpr std::uint8_t kLastPacket = 0;
inline constexpr std::uint8_t kMoreFollows = 1;
inline constexpr std::uint8_t kBatch = 2;
// Payload bytes per packet: well under the default socket buffer, large enough that a 256-byte
// message or a 1 MiB one takes few system calls.
inline constexpr std::size_t kPacketPayload = 64 * 1024;
// The largest frame either side accepts by default (a message body, headers included).
inline constexpr std::size_t kDefaultMaxFrame = 256u * 1024 * 1024;

// FRAME cut into packets, each with its marker byte.
std::vector<std::string> split_into_packets(std::string_view frame);

// Frames packed into packets in order: small ones together into kBatch packets, a large one cut
// by split_into_packets.
class PacketWriter {
 public:
  void add(std::string_view frame);
  // Adds the frame ENCODE writes (encode(FrameWriter&)), written straight into the batch packet
  // being filled: no copy of it, and no buffer of its own.
  // An ENCODE that throws adds nothing: the packet is as it was.
  template <class Encode>
  void add_encoded(Encode&& encode) {
    const std::size_t at = begin_encoded();
    try {
      FrameWriter out(packets_[used_ - 1]);
      encode(out);
    } catch (...) {
      abandon_encoded(at);
      throw;
    }
    end_encoded(at);
  }
  std::span<const std::string> packets() const noexcept { return {packets_.data(), used_}; }
  bool empty() const noexcept { return used_ == 0; }
  // Empties the writer; the packets' buffers are kept for the next frames.
  void clear() noexcept;

 private:
  std::string& next_packet();                       // a packet to fill, emptied
  std::string& open_batch(std::size_t frame_size);  // the batch a frame that size goes into
  std::size_t begin_encoded();                      // where the frame's length goes
  void end_encoded(std::size_t at);
  void abandon_encoded(std::size_t at) noexcept;

  std::vector<std::string> packets_;  // [0, used_) are this writer's packets; the rest spare
  std::size_t used_ = 0;
  bool last_is_batch_ = false;  // frames may still be added to packets_[used_ - 1]
};

class PacketAssembler {
 public:
  explicit PacketAssembler(std::size_t max_frame = kDefaultMaxFrame) : max_frame_(max_frame) {}

  // The frame PACKET completes, if it is the last of one. Throws FrameError for an empty packet,
  // an unknown marker or a frame over the limit (the socket is then beyond repair: close it),
  // and for a kBatch packet (add_all takes those).
  std::optional<std::string> add(std::string_view packet);
  // The frames PACKET completes, appended to FRAMES in order: none (a part of a large frame),
  // one, or those of a batch. Throws FrameError as add() does, and for a batch that is cut short
  // or comes in the middle of a large frame. The views point into PACKET or into this assembler:
  // valid until the next call, and while PACKET's bytes are (no copy of a frame that fits).
  void add_all(std::string_view packet, std::vector<std::string_view>& frames);
  bool in_frame() const noexcept { return !pending_.empty(); }

 private:
  std::size_t max_frame_;
  std::string pending_;
  std::string whole_;  // the last large frame joined, for add_all's view of it
};

}  // namespace warren::isolation
