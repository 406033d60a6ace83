// See delay_levels.h.
#include "broker/delay_levels.h"

#include <algorithm>

#include "config/amqp_names.h"

namespace warren::broker {

// `warren check` refuses consumed queue names that would not fit after the delay bits.
static_assert(config::kMaxConsumedQueueNameBytes + 2 * kDelayLevels == 255,
              "the config's queue name limit must match the delay routing key layout");

std::string delay_level_name(int level) {
  return "warren.delay." + std::to_string(level);
}

std::uint32_t delay_units(std::chrono::milliseconds delay) {
  constexpr std::int64_t kMaxUnits = (std::int64_t{1} << kDelayLevels) - 1;
  if (delay.count() <= 0)
    return 0;
  const std::int64_t units = (delay.count() + kDelayUnit.count() - 1) / kDelayUnit.count();
  return static_cast<std::uint32_t>(std::min(units, kMaxUnits));
}

std::string delay_routing_key(std::chrono::milliseconds delay, std::string_view queue) {
  const std::uint32_t units = delay_units(delay);
  std::string key;
  key.reserve(kDelayLevels * 2 + queue.size());
  for (int level = kDelayLevels - 1; level >= 0; --level) {
    key.push_back(((units >> level) & 1U) != 0 ? '1' : '0');
    key.push_back('.');
  }
  key.append(queue);
  return key;
}

std::string delay_bit_pattern(int level, bool bit_set) {
  std::string pattern;
  for (int higher = kDelayLevels - 1; higher > level; --higher)
    pattern += "*.";
  pattern += bit_set ? "1.#" : "0.#";
  return pattern;
}

std::string delay_delivery_pattern(std::string_view queue) {
  std::string pattern;
  for (int level = 0; level < kDelayLevels; ++level)
    pattern += "*.";
  pattern.append(queue);
  return pattern;
}

}  // namespace warren::broker
