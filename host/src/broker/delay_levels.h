// Broker-side delays for retries without holding messages unacked, as NServiceBus's RabbitMQ
// transport and kombu's native delayed delivery do: 28 binary levels shared by every worker.
//
// Level k is a topic exchange `warren.delay.k` and a quorum queue of the same name whose
// queue-level TTL is 2^k units and whose dead-letter exchange is level k-1 (level 0's is
// `warren.delay.delivery`). The delay, in units, is written in binary into the routing key, most
// significant bit first, followed by the destination queue:
//
//   0.0.....0.1.1.0.1.livraria.emails        (28 bits, then the queue name)
//
// A message enters at level 27; at each level it either waits in the queue (bit set) or skips
// to the next exchange (bit clear), so it waits only in the levels whose bit is set. The
// delivery exchange routes it to the destination queue. Queues expire messages only at the head,
// which is harmless here: every message in one level queue has the same TTL.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace warren::broker {

inline constexpr int kDelayLevels = 28;
inline constexpr std::chrono::milliseconds kDelayUnit{100};
inline constexpr std::string_view kDelayDeliveryExchange = "warren.delay.delivery";

std::string delay_level_name(int level);

// The exchange every delayed message is published to.
inline std::string delay_entry_exchange() {
  return delay_level_name(kDelayLevels - 1);
}

// Units to wait for `delay`: rounded up (a delay is never shorter than asked), at most
// 2^28 - 1 units (about 310 days).
std::uint32_t delay_units(std::chrono::milliseconds delay);

std::string delay_routing_key(std::chrono::milliseconds delay, std::string_view queue);

// Binding keys.
std::string delay_bit_pattern(int level, bool bit_set);      // "*.*.1.#"-style
std::string delay_delivery_pattern(std::string_view queue);  // 28 "*." then the queue

}  // namespace warren::broker
