// Fuzz target: the x-warren-* and x-death headers as Warren reads and writes them: the attempt a
// delivery carries (broker/inbound_delivery.h), the original route of a message back from the
// delay levels or a replay, and the failure headers of a retry or a dead letter
// (transport/failure_headers.h), whose values must say what the settlement said, in at most
// kMaxErrorHeaderBytes for the error texts, cut on a UTF-8 boundary.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "broker/amqp_table.h"
#include "broker/delay_levels.h"
#include "broker/inbound_delivery.h"
#include "fuzz_headers.h"
#include "fuzz_support.h"
#include "transport/failure_headers.h"

namespace {

using warren::fuzz::require;

using warren::transport::find_header;

// What find_header(name) must give after the settlement's headers went in, unless the
// settlement's own extra headers replace it.
void require_header(const warren::transport::TextHeaders& headers,
                    const warren::transport::Settlement& settlement, std::string_view name,
                    std::string_view expected) {
  if (find_header(settlement.extra_headers, name))
    return;
  const auto value = find_header(headers, name);
  require(value && *value == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  using namespace warren;

  transport::InboundMessage message;
  message.exchange = input.ConsumeBool() ? std::string(broker::kDelayDeliveryExchange)
                                         : input.ConsumeRandomLengthString(16);
  message.routing_key = input.ConsumeRandomLengthString(16);
  message.queue = input.ConsumeRandomLengthString(16);
  message.headers = fuzz::text_headers(input);

  message.attempt = broker::attempt_of(message.headers);
  require(message.attempt >= 1);
  broker::show_original_route(message);
  for (const auto& [name, value] : message.headers)
    (void)broker::is_broker_death_header(name);

  transport::Settlement settlement;
  settlement.kind = input.ConsumeBool() ? transport::Settlement::Kind::retry_later
                                        : transport::Settlement::Kind::dead_letter;
  settlement.next_attempt = input.ConsumeIntegral<std::uint32_t>();
  settlement.attempt = message.attempt;
  settlement.worker = input.ConsumeRandomLengthString(16);
  settlement.headers_if_absent = fuzz::text_headers(input, 2);
  settlement.extra_headers = fuzz::text_headers(input, 2);
  settlement.reason = input.ConsumeRandomLengthString(2 * transport::kMaxErrorHeaderBytes + 8);
  const std::string now = input.ConsumeRandomLengthString(32);

  const std::string truncated =
      transport::truncated_utf8(settlement.reason, transport::kMaxErrorHeaderBytes);
  require(truncated.size() <= transport::kMaxErrorHeaderBytes);
  require(std::string_view(settlement.reason).starts_with(truncated));
  // Cut before a continuation byte, never inside a sequence.
  require(truncated.size() == settlement.reason.size() ||
          (static_cast<unsigned char>(settlement.reason[truncated.size()]) & 0xC0) != 0x80);

  transport::TextHeaders headers = message.headers;
  if (settlement.kind == transport::Settlement::Kind::retry_later) {
    transport::add_retry_headers(headers, message, settlement, now);
    require_header(headers, settlement, "x-warren-attempt",
                   std::to_string(settlement.next_attempt));
    // The attempt a retry carries is the one the next delivery reads (0 reads as 1).
    if (!find_header(settlement.extra_headers, "x-warren-attempt"))
      require(broker::attempt_of(headers) == std::max<std::uint32_t>(settlement.next_attempt, 1));
    if (!settlement.reason.empty())
      require_header(headers, settlement, "x-warren-last-error", truncated);
  } else {
    transport::add_dead_letter_headers(headers, message, settlement, now);
    require_header(headers, settlement, "x-warren-error", truncated);
    require_header(headers, settlement, "x-warren-attempt", std::to_string(settlement.attempt));
    require_header(headers, settlement, "x-warren-worker", settlement.worker);
    require_header(headers, settlement, "x-warren-queue", message.queue);
    require_header(headers, settlement, "x-warren-dead-lettered-at", now);
  }
  require(find_header(headers, "x-warren-original-exchange").has_value() ||
          find_header(settlement.extra_headers, "x-warren-original-exchange").has_value());
  return 0;
}
