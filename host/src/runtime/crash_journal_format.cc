// See crash_journal_format.h.
#include "runtime/crash_journal_format.h"

#include <atomic>
#include <cstring>

#include "runtime/checksum.h"

namespace warren::runtime::journal_format {
namespace {

std::string_view bytes_of(const void* data, std::size_t size) {
  return {static_cast<const char*>(data), size};
}

// What the slot checksum covers: the time, the sizes and the texts they span.
std::uint32_t slot_checksum(const Slot& slot) {
  const std::size_t texts =
      std::size_t{slot.worker_size} + std::size_t{slot.queue_size} + std::size_t{slot.key_size};
  const std::size_t end = offsetof(Slot, text) + std::min(texts, sizeof(Slot::text));
  const std::size_t begin = offsetof(Slot, started_unix_ms);
  return crc32(bytes_of(reinterpret_cast<const char*>(&slot) + begin, end - begin));
}

std::uint32_t header_checksum(const Header& header) {
  return crc32(bytes_of(&header, kHeaderChecksummed));
}

}  // namespace

Header make_header(std::uint32_t slot_count, std::uint32_t pid, std::int64_t now_unix_ms) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.slot_size = kSlotSize;
  header.slot_count = slot_count;
  header.pid = pid;
  header.opened_unix_ms = now_unix_ms;
  header.checksum = header_checksum(header);
  return header;
}

void enter_slot(Slot& slot, const CrashIdentity& identity, std::int64_t now_unix_ms) noexcept {
  slot.started_unix_ms = now_unix_ms;
  slot.worker_size = static_cast<std::uint16_t>(identity.worker.size());
  slot.queue_size = static_cast<std::uint16_t>(identity.queue.size());
  slot.key_size = static_cast<std::uint16_t>(identity.key.size());
  slot.reserved = 0;
  char* out = slot.text;
  for (const std::string* part : {&identity.worker, &identity.queue, &identity.key}) {
    std::memcpy(out, part->data(), part->size());
    out += part->size();
  }
  slot.checksum = slot_checksum(slot);
  std::atomic_ref<std::uint32_t>(slot.state).store(kSlotRunning, std::memory_order_release);
}

void clear_slot(Slot& slot) noexcept {
  std::atomic_ref<std::uint32_t>(slot.state).store(kSlotEmpty, std::memory_order_release);
}

std::variant<Snapshot, Defect> parse(std::string_view bytes) {
  if (bytes.size() < kHeaderSize)
    return Defect{"it is " + std::to_string(bytes.size()) + " bytes long, shorter than a header"};
  Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0)
    return Defect{"it does not begin like a crash journal"};
  if (header.checksum != header_checksum(header))
    return Defect{"its header does not match its checksum"};
  if (header.version != kVersion || header.slot_size != kSlotSize) {
    return Defect{"it is of another version (" + std::to_string(header.version) + ", slots of " +
                  std::to_string(header.slot_size) + " bytes; this host writes " +
                  std::to_string(kVersion) + ")"};
  }
  if (bytes.size() != file_size(header.slot_count)) {
    return Defect{"it is " + std::to_string(bytes.size()) + " bytes long where its " +
                  std::to_string(header.slot_count) + " slots need " +
                  std::to_string(file_size(header.slot_count)) + " (truncated or extended)"};
  }

  Snapshot snapshot;
  snapshot.pid = header.pid;
  snapshot.opened_unix_ms = header.opened_unix_ms;
  snapshot.fatal_signal = header.fatal_signal;
  for (std::size_t i = 0; i < header.slot_count; ++i) {
    Slot slot;
    std::memcpy(&slot, bytes.data() + kHeaderSize + i * kSlotSize, sizeof slot);
    if (slot.state == kSlotEmpty)
      continue;
    if (slot.state != kSlotRunning) {
      snapshot.garbled.push_back(i);
      continue;
    }
    const std::size_t texts =
        std::size_t{slot.worker_size} + std::size_t{slot.queue_size} + std::size_t{slot.key_size};
    if (texts > sizeof(Slot::text) || slot.checksum != slot_checksum(slot)) {
      snapshot.torn.push_back(i);
      continue;
    }
    const std::string_view text(slot.text, texts);
    const auto worker = text.substr(0, slot.worker_size);
    const auto queue = text.substr(slot.worker_size, slot.queue_size);
    const auto key = text.substr(std::size_t{slot.worker_size} + slot.queue_size);
    snapshot.running.push_back(
        {i, CrashIdentity::from_parts(worker, queue, key), slot.started_unix_ms});
  }
  return snapshot;
}

}  // namespace warren::runtime::journal_format
