// Fuzz target: the headers and ids of table-queue and outbox rows, which other programs write
// (queue/headers_json.h, outbox/outbox_row.h). A row's headers JSON is read or refused with a
// reason; what is read writes back to JSON that reads back to the same headers (the round trip a
// retried or dead-lettered row makes); an outbox row becomes a message or an invalid_argument.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fuzz_support.h"
#include "outbox/outbox_row.h"
#include "queue/headers_json.h"

namespace {

using warren::fuzz::require;

// Whether `text` is valid UTF-8 (what JSON strings hold; headers_to_json replaces the rest).
bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = c < 0x80           ? 1
                               : (c >> 5) == 0x6  ? 2
                               : (c >> 4) == 0xE  ? 3
                               : (c >> 3) == 0x1E ? 4
                                                  : 0;
    if (length == 0 || i + length > text.size())
      return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80)
        return false;
    }
    i += length;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  using namespace warren;

  warren::outbox::OutboxRow row;
  row.id = input.ConsumeRandomLengthString(40);
  row.message_id = input.ConsumeRandomLengthString(40);
  row.exchange = input.ConsumeRandomLengthString(16);
  row.headers_json = input.ConsumeRemainingBytesAsString();

  std::string why;
  if (const auto headers = queue::headers_from_json(row.headers_json, why)) {
    const std::string json = queue::headers_to_json(*headers);
    std::string why_again;
    const auto again = queue::headers_from_json(json, why_again);
    require(again.has_value());
    bool all_utf8 = true;
    for (const auto& [name, value] : *headers)
      all_utf8 = all_utf8 && is_utf8(name) && is_utf8(value);
    // Duplicate names collapse in a JSON object; with none, the headers come back whole.
    if (all_utf8 && again->size() == headers->size())
      require(*again == *headers);
  } else {
    require(!why.empty());
  }

  try {
    const transport::OutboundMessage message = outbox::to_outbound_message(row, "outbox");
    require(!message.exchange.empty());
    require(message.message_id == (row.message_id.empty() ? row.id : row.message_id));
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
