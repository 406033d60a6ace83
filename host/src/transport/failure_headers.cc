// See failure_headers.h.
#include "transport/failure_headers.h"

namespace warren::transport {
namespace {

void add_origin_headers(TextHeaders& headers, const InboundMessage& original,
                        std::string_view now) {
  set_header_if_absent(headers, "x-warren-original-exchange", original.exchange);
  set_header_if_absent(headers, "x-warren-original-routing-key", original.routing_key);
  set_header_if_absent(headers, "x-warren-first-failed-at", std::string(now));
}

void add_headers_if_absent(TextHeaders& headers, const Settlement& settlement) {
  for (const auto& [name, value] : settlement.headers_if_absent)
    set_header_if_absent(headers, name, value);
}

void add_extra_headers(TextHeaders& headers, const Settlement& settlement) {
  for (const auto& [name, value] : settlement.extra_headers)
    set_header(headers, name, value);
}

}  // namespace

std::string truncated_utf8(std::string_view text, std::size_t limit) {
  if (text.size() <= limit)
    return std::string(text);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return std::string(text.substr(0, cut));
}

void add_retry_headers(TextHeaders& headers, const InboundMessage& original,
                       const Settlement& settlement, std::string_view now) {
  set_header(headers, "x-warren-attempt", std::to_string(settlement.next_attempt));
  add_origin_headers(headers, original, now);
  add_headers_if_absent(headers, settlement);
  add_extra_headers(headers, settlement);
  if (!settlement.reason.empty())
    set_header(headers, "x-warren-last-error",
               truncated_utf8(settlement.reason, kMaxErrorHeaderBytes));
}

void add_dead_letter_headers(TextHeaders& headers, const InboundMessage& original,
                             const Settlement& settlement, std::string_view now) {
  set_header(headers, "x-warren-error", truncated_utf8(settlement.reason, kMaxErrorHeaderBytes));
  set_header(headers, "x-warren-attempt", std::to_string(settlement.attempt));
  set_header(headers, "x-warren-worker", settlement.worker);
  set_header(headers, "x-warren-queue", original.queue);
  add_origin_headers(headers, original, now);
  set_header(headers, "x-warren-dead-lettered-at", std::string(now));
  add_headers_if_absent(headers, settlement);
  add_extra_headers(headers, settlement);
}

}  // namespace warren::transport
