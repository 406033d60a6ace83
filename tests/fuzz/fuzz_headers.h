// Text headers built from fuzz input for the targets that read headers (x-warren-*, x-death,
// traceparent): names are mostly the ones Warren reads, so the fuzzer reaches the code behind
// them instead of guessing names byte by byte.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <string>
#include <string_view>

#include "transport/message.h"

namespace warren::fuzz {

inline constexpr std::array<std::string_view, 20> kKnownHeaderNames = {
    "x-warren-attempt",
    "x-warren-original-exchange",
    "x-warren-original-routing-key",
    "x-warren-error",
    "x-warren-last-error",
    "x-warren-worker",
    "x-warren-queue",
    "x-warren-first-failed-at",
    "x-warren-dead-lettered-at",
    "x-warren-replay-count",
    "x-warren-original-expiration",
    "x-warren-crashes",
    "x-warren-invalid-traceparent",
    "x-death",
    "x-first-death-reason",
    "x-first-death-queue",
    "x-first-death-exchange",
    "x-delivery-count",
    "traceparent",
    "tracestate"};

inline std::string header_name(FuzzedDataProvider& input) {
  if (input.ConsumeBool())
    return std::string(input.PickValueInArray(kKnownHeaderNames));
  return input.ConsumeRandomLengthString(32);
}

inline transport::TextHeaders text_headers(FuzzedDataProvider& input, std::size_t max_count = 8) {
  transport::TextHeaders headers;
  const std::size_t count = input.ConsumeIntegralInRange<std::size_t>(0, max_count);
  for (std::size_t i = 0; i < count && input.remaining_bytes() > 0; ++i) {
    std::string name = header_name(input);
    headers.emplace_back(std::move(name), input.ConsumeRandomLengthString(96));
  }
  return headers;
}

}  // namespace warren::fuzz
