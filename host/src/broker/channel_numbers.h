// Which AMQP channel does what on Warren's two connections. The consuming connection declares the
// topology on one channel (opened and closed around each declaration) and gives every
// subscription a channel of its own, so that basic.qos and delivery tags are per worker; the
// publishing connection publishes on one confirm channel and checks that exchanges exist on
// another (a missing one closes that channel, not the confirm channel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace warren::broker {

using ChannelNumber = std::uint16_t;  // amqp_channel_t

// Consuming connection: declarations.
inline constexpr ChannelNumber kTopologyChannel = 1;
// Consuming connection: subscription i consumes on kFirstConsumerChannel + i.
inline constexpr ChannelNumber kFirstConsumerChannel = 2;
// Publishing connection: the one channel in confirm mode.
inline constexpr ChannelNumber kPublishChannel = 1;
// Publishing connection: passive exchange.declare before the first publish to an exchange.
inline constexpr ChannelNumber kExchangeCheckChannel = 2;

constexpr ChannelNumber consumer_channel(std::size_t subscription) noexcept {
  return static_cast<ChannelNumber>(kFirstConsumerChannel + subscription);
}

// The subscription consuming on `channel`, or nullopt when no subscription of `count` does.
constexpr std::optional<std::size_t> subscription_on(ChannelNumber channel,
                                                     std::size_t count) noexcept {
  if (channel < kFirstConsumerChannel ||
      static_cast<std::size_t>(channel - kFirstConsumerChannel) >= count)
    return std::nullopt;
  return static_cast<std::size_t>(channel - kFirstConsumerChannel);
}

}  // namespace warren::broker
