// Fuzz target: what a worker process (isolation = "process") may leave on its socket, as the
// host reads it (isolation/frames.h, packet_assembler.h). Any bytes are a frame or a FrameError,
// never a crash or an allocation the input cannot back; a frame that decodes encodes to bytes
// that decode to a frame with the same encoding (nothing read is lost or invented); and packets
// cut anywhere join back into the frame they carried.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "isolation/frame_codec.h"
#include "isolation/frames.h"
#include "isolation/packet_assembler.h"

namespace {

using warren::fuzz::require;
using namespace warren::isolation;

void check_round_trip(std::string_view bytes) {
  Frame frame;
  try {
    frame = decode(bytes);
  } catch (const FrameError&) {
    return;
  }
  const std::string encoded = encode(frame);
  require(encode(decode(encoded)) == encoded);
  require(frame_name(decode(encoded)) == frame_name(frame));
}

// The input cut into packets (lengths from the input itself) and fed to an assembler with a small
// limit: it either joins them back or refuses with a FrameError.
void check_packets(std::string_view bytes) {
  PacketAssembler assembler(4096);
  std::string joined;
  try {
    while (!bytes.empty()) {
      std::size_t size = 1 + static_cast<unsigned char>(bytes[0]) % 64;
      std::string_view packet = bytes.substr(0, size);
      bytes.remove_prefix(packet.size());
      std::vector<std::string_view> frames;
      assembler.add_all(packet, frames);
      for (std::string_view frame : frames)
        require(frame.size() <= 4096);
    }
  } catch (const FrameError&) {
  }
  // What split_into_packets cuts, the assembler joins back whole.
  std::string whole(bytes);
  PacketAssembler fresh;
  std::optional<std::string> rejoined;
  for (const std::string& packet : split_into_packets(whole))
    rejoined = fresh.add(packet);
  require(rejoined && *rejoined == whole);
  // What PacketWriter packs (here the input cut in three frames), add_all gives back in order.
  const std::vector<std::string> parts = {whole.substr(0, whole.size() / 3),
                                          whole.substr(whole.size() / 3, whole.size() / 3),
                                          whole.substr(2 * (whole.size() / 3))};
  PacketWriter writer;
  for (const std::string& part : parts)
    writer.add(part);
  PacketAssembler unpacker;
  std::vector<std::string> unpacked;
  for (const std::string& packet : writer.packets()) {
    std::vector<std::string_view> frames;
    unpacker.add_all(packet, frames);
    unpacked.insert(unpacked.end(), frames.begin(), frames.end());
  }
  require(unpacked == parts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_round_trip(bytes);
  check_packets(bytes);
  return 0;
}
