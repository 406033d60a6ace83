// Fuzz target: a delivery's basic properties as a broker sends them (content header frame),
// decoded by rabbitmq-c's amqp_decode_properties, taken into an InboundMessage
// (broker/inbound_delivery.h) and published again as a copy (broker/wire_properties.h). The copy
// must say what its text fields say: its headers read back as the copy's text headers (by name),
// its message id and content type are the copy's; and an expiration suspended while Warren keeps a
// copy comes back whole at the replay.
#include <amqp.h>
#include <amqp_framing.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "broker/amqp_table.h"
#include "broker/inbound_delivery.h"
#include "broker/wire_properties.h"
#include "fuzz_support.h"

namespace {

using warren::fuzz::require;

using namespace warren;

const amqp_basic_properties_t* decode(const std::string& wire, amqp_pool_t* pool) {
  void* decoded = nullptr;
  if (amqp_decode_properties(AMQP_BASIC_CLASS, pool, broker::bytes_of(wire), &decoded) !=
      AMQP_STATUS_OK)
    return nullptr;
  return static_cast<const amqp_basic_properties_t*>(decoded);
}

// The same headers: each name with the same values in the same order. Entries of different
// names may change places (a text value set for a header with no text form takes that header's
// place); an AMQP table is read by name.
bool same_headers(transport::TextHeaders a, transport::TextHeaders b) {
  const auto by_name = [](const auto& x, const auto& y) { return x.first < y.first; };
  std::stable_sort(a.begin(), a.end(), by_name);
  std::stable_sort(b.begin(), b.end(), by_name);
  return a == b;
}

bool drop_death_headers(std::string_view name) {
  return broker::is_broker_death_header(name) || name == "x-delivery-count";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  broker::ScopedPool pool;
  void* decoded = nullptr;
  const amqp_bytes_t encoded{size, const_cast<std::uint8_t*>(data)};
  if (amqp_decode_properties(AMQP_BASIC_CLASS, pool.get(), encoded, &decoded) != AMQP_STATUS_OK)
    return 0;
  const auto& received = *static_cast<const amqp_basic_properties_t*>(decoded);

  transport::InboundMessage message;
  broker::take_properties(message, received);
  message.attempt = broker::attempt_of(message.headers);

  transport::OutboundMessage copy = transport::republished_copy(message, drop_death_headers);
  transport::set_header(copy.headers, "x-warren-attempt", std::to_string(message.attempt + 1));

  const broker::PublishProperties publish(copy);
  const amqp_basic_properties_t& sent = *publish.get();
  const std::string wire = broker::encode_wire_properties(sent);
  if (wire.empty())
    return 0;  // too large to encode: the publisher sends fresh properties then
  broker::ScopedPool pool_back;
  const amqp_basic_properties_t* back = decode(wire, pool_back.get());
  require(back != nullptr);
  require((back->_flags & AMQP_BASIC_USER_ID_FLAG) == 0);
  require(broker::string_of(back->message_id) == copy.message_id);
  if (!copy.content_type.empty())
    require(broker::string_of(back->content_type) == copy.content_type);
  const transport::TextHeaders headers_back = (back->_flags & AMQP_BASIC_HEADERS_FLAG) != 0
                                                  ? broker::render_headers(back->headers)
                                                  : transport::TextHeaders{};
  require(same_headers(headers_back, copy.headers));

  // Parked in a dead-letter queue without its expiration, and given it back at the replay.
  if ((received._flags & AMQP_BASIC_EXPIRATION_FLAG) != 0) {
    transport::OutboundMessage parked = copy;
    broker::suspend_expiration(parked);
    transport::InboundMessage letter;
    broker::ScopedPool parked_pool;
    const amqp_basic_properties_t* parked_properties =
        decode(parked.wire_properties, parked_pool.get());
    require(parked_properties != nullptr);
    require((parked_properties->_flags & AMQP_BASIC_EXPIRATION_FLAG) == 0);
    letter.headers = parked.headers;
    transport::OutboundMessage replayed = parked;
    broker::restore_expiration(replayed, letter);
    broker::ScopedPool replayed_pool;
    const amqp_basic_properties_t* replayed_properties =
        decode(replayed.wire_properties, replayed_pool.get());
    require(replayed_properties != nullptr);
    require((replayed_properties->_flags & AMQP_BASIC_EXPIRATION_FLAG) != 0);
    require(broker::string_of(replayed_properties->expiration) ==
            broker::string_of(received.expiration));
  }
  return 0;
}
