// Fuzz target: AMQP field tables as a broker sends them (message headers), decoded by
// rabbitmq-c's amqp_decode_table (every field type, nesting, truncation) and rendered to the
// text headers handlers see (broker/amqp_table.h). Two round trips must hold: the text headers
// written as a table (AmqpTableBuilder::add_all) read back to themselves, and the received
// entries copied as they are (add_entry, what a republished copy does) read back to the same
// text headers.
#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "broker/amqp_table.h"
#include "broker/wire_properties.h"
#include "fuzz_support.h"

namespace {

using warren::fuzz::require;

using warren::broker::AmqpTableBuilder;
using warren::broker::render_headers;
using warren::broker::ScopedPool;

// `table` encoded into `buffer` and decoded again into `pool` (the decoded table points into
// both); false when rabbitmq-c cannot encode it.
bool reencode(amqp_table_t table, amqp_pool_t* pool, std::vector<char>& buffer, amqp_table_t& out) {
  buffer.resize(4096);
  for (;;) {
    std::size_t offset = 0;
    const int status =
        amqp_encode_table(amqp_bytes_t{buffer.size(), buffer.data()}, &table, &offset);
    if (status == AMQP_STATUS_OK) {
      std::size_t read = 0;
      require(amqp_decode_table(amqp_bytes_t{offset, buffer.data()}, pool, &out, &read) ==
              AMQP_STATUS_OK);
      require(read == offset);
      return true;
    }
    if (status != AMQP_STATUS_TABLE_TOO_BIG || buffer.size() >= (std::size_t{1} << 22))
      return false;
    buffer.resize(buffer.size() * 4);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ScopedPool pool;
  amqp_table_t received{};
  std::size_t offset = 0;
  // rabbitmq-c takes a non-const pointer; it only reads.
  const amqp_bytes_t encoded{size, const_cast<std::uint8_t*>(data)};
  if (amqp_decode_table(encoded, pool.get(), &received, &offset) != AMQP_STATUS_OK)
    return 0;

  const warren::transport::TextHeaders headers = render_headers(received);
  for (int i = 0; i < received.num_entries; ++i)
    (void)warren::broker::is_broker_death_header(
        warren::broker::string_of(received.entries[i].key));

  AmqpTableBuilder as_text;
  as_text.add_all(headers);
  std::vector<char> text_buffer;
  amqp_table_t text_back{};
  if (reencode(as_text.table(), pool.get(), text_buffer, text_back))
    require(render_headers(text_back) == headers);

  AmqpTableBuilder as_received;
  for (int i = 0; i < received.num_entries; ++i)
    as_received.add_entry(received.entries[i]);
  std::vector<char> typed_buffer;
  amqp_table_t typed_back{};
  if (reencode(as_received.table(), pool.get(), typed_buffer, typed_back))
    require(render_headers(typed_back) == headers);
  return 0;
}
