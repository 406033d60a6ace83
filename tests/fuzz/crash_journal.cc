// Fuzz target: the crash journal a previous run left on disk (runtime/crash_journal_format.h).
// Any bytes (short, garbled, half written) parse to a snapshot or a defect, never a fault; every
// running slot found lies inside the file. Each input is parsed as it is and again with its
// checksums made right, so that the fuzzer gets past them to the slots.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_support.h"
#include "runtime/checksum.h"
#include "runtime/crash_journal_format.h"

namespace {

namespace format = warren::runtime::journal_format;

void parse_and_check(std::string_view bytes) {
  const auto parsed = format::parse(bytes);
  const auto* snapshot = std::get_if<format::Snapshot>(&parsed);
  if (snapshot == nullptr)
    return;
  const std::size_t slots = (bytes.size() - format::kHeaderSize) / format::kSlotSize;
  for (const auto& entry : snapshot->running)
    warren::fuzz::require(entry.slot < slots);
}

// `bytes` with the header's and every slot's checksum as a writer computes them.
std::string with_checksums(std::string bytes) {
  if (bytes.size() < format::kHeaderSize)
    return bytes;
  std::uint32_t checksum =
      warren::runtime::crc32(std::string_view(bytes).substr(0, format::kHeaderChecksummed));
  std::memcpy(bytes.data() + offsetof(format::Header, checksum), &checksum, sizeof checksum);
  for (std::size_t at = format::kHeaderSize; at + format::kSlotSize <= bytes.size();
       at += format::kSlotSize) {
    format::Slot slot;
    std::memcpy(&slot, bytes.data() + at, sizeof slot);
    const std::size_t texts = std::size_t{slot.worker_size} + slot.queue_size + slot.key_size;
    const std::size_t begin = offsetof(format::Slot, started_unix_ms);
    const std::size_t end = offsetof(format::Slot, text) + std::min(texts, sizeof slot.text);
    checksum = warren::runtime::crc32(std::string_view(bytes).substr(at + begin, end - begin));
    std::memcpy(bytes.data() + at + offsetof(format::Slot, checksum), &checksum, sizeof checksum);
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  parse_and_check(bytes);
  parse_and_check(with_checksums(bytes));
  return 0;
}
