// Issue 19 item 9: a copy Warren publishes again (retry, dead letter, replay) keeps every property
// of the delivered message and its headers with their types, through the transport seam's opaque
// wire_properties (broker/wire_properties.h). No broker: properties as rabbitmq-c reads them, in,
// then the properties the publisher would send, out.
#include "broker/wire_properties.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "broker/inbound_delivery.h"

namespace warren::broker {
namespace {

amqp_table_entry_t entry(const char* key, amqp_field_value_t value) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value = value;
  return e;
}

amqp_field_value_t i64(std::int64_t v) {
  amqp_field_value_t f{};
  f.kind = AMQP_FIELD_KIND_I64;
  f.value.i64 = v;
  return f;
}

amqp_field_value_t i32(std::int32_t v) {
  amqp_field_value_t f{};
  f.kind = AMQP_FIELD_KIND_I32;
  f.value.i32 = v;
  return f;
}

amqp_field_value_t boolean(bool v) {
  amqp_field_value_t f{};
  f.kind = AMQP_FIELD_KIND_BOOLEAN;
  f.value.boolean = v ? 1 : 0;
  return f;
}

amqp_field_value_t utf8(const char* v) {
  amqp_field_value_t f{};
  f.kind = AMQP_FIELD_KIND_UTF8;
  f.value.bytes = amqp_cstring_bytes(v);
  return f;
}

// The message of the test, as a RabbitMQ consumer reads it after a broker dead-lettering
// (x-death), with every property set.
class Delivered {
 public:
  Delivered() {
    table_entries_[0] = entry("sku", utf8("B-1"));
    table_entries_[1] = entry("quantity", i32(3));
    amqp_field_value_t table{};
    table.kind = AMQP_FIELD_KIND_TABLE;
    table.value.table = {2, table_entries_};

    list_items_[0] = i32(1);
    list_items_[1] = utf8("two");
    amqp_field_value_t list{};
    list.kind = AMQP_FIELD_KIND_ARRAY;
    list.value.array = {2, list_items_};

    amqp_field_value_t decimal{};
    decimal.kind = AMQP_FIELD_KIND_DECIMAL;
    decimal.value.decimal = {2, 12345};

    death_entries_[0] = entry("reason", utf8("expired"));
    death_tables_[0].kind = AMQP_FIELD_KIND_TABLE;
    death_tables_[0].value.table = {1, death_entries_};
    amqp_field_value_t death{};
    death.kind = AMQP_FIELD_KIND_ARRAY;
    death.value.array = {1, death_tables_};

    headers_[0] = entry("x-int", i64(42));
    headers_[1] = entry("x-negative", i32(-7));
    headers_[2] = entry("x-flag", boolean(true));
    headers_[3] = entry("x-table", table);
    headers_[4] = entry("x-list", list);
    headers_[5] = entry("x-decimal", decimal);
    headers_[6] = entry("x-death", death);
    headers_[7] = entry("x-changed", i32(5));
    headers_[8] = entry("x-text", utf8("as sent"));

    properties._flags =
        AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_HEADERS_FLAG |
        AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_PRIORITY_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
        AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_EXPIRATION_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
        AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_USER_ID_FLAG |
        AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_CLUSTER_ID_FLAG;
    properties.content_type = amqp_cstring_bytes("application/json");
    properties.content_encoding = amqp_cstring_bytes("gzip");
    properties.headers = {9, headers_};
    properties.delivery_mode = 2;
    properties.priority = 3;
    properties.correlation_id = amqp_cstring_bytes("corr-42");
    properties.reply_to = amqp_cstring_bytes("replies");
    properties.expiration = amqp_cstring_bytes("600000");
    properties.message_id = amqp_cstring_bytes("m-1");
    properties.timestamp = 1700000000;
    properties.type = amqp_cstring_bytes("order.created");
    properties.user_id = amqp_cstring_bytes("alice");
    properties.app_id = amqp_cstring_bytes("shop");
    properties.cluster_id = amqp_cstring_bytes("c1");
  }

  transport::InboundMessage message() const {
    transport::InboundMessage inbound;
    take_properties(inbound, properties);
    return inbound;
  }

  amqp_basic_properties_t properties{};

 private:
  amqp_table_entry_t table_entries_[2];
  amqp_field_value_t list_items_[2];
  amqp_table_entry_t death_entries_[1];
  amqp_field_value_t death_tables_[1]{};
  amqp_table_entry_t headers_[9];
};

bool drop_x_death(std::string_view name) {
  return name == "x-death";
}

std::string text(amqp_bytes_t bytes) {
  return string_of(bytes);
}

std::optional<amqp_field_value_t> header(const amqp_basic_properties_t& properties,
                                         std::string_view name) {
  if ((properties._flags & AMQP_BASIC_HEADERS_FLAG) == 0)
    return std::nullopt;
  for (int i = 0; i < properties.headers.num_entries; ++i) {
    if (string_of(properties.headers.entries[i].key) == name)
      return properties.headers.entries[i].value;
  }
  return std::nullopt;
}

std::vector<std::string> header_names(const amqp_basic_properties_t& properties) {
  std::vector<std::string> names;
  for (int i = 0; i < properties.headers.num_entries; ++i)
    names.push_back(string_of(properties.headers.entries[i].key));
  return names;
}

TEST(WireProperties, ACopyKeepsEveryPropertyAndTypedHeader_DroppedAndChangedHeadersAsTheCopySays) {
  const Delivered delivered;
  const transport::InboundMessage inbound = delivered.message();
  ASSERT_FALSE(inbound.wire_properties.empty());
  EXPECT_EQ(inbound.message_id, "m-1");
  EXPECT_EQ(inbound.content_type, "application/json");

  transport::OutboundMessage copy = transport::republished_copy(inbound, drop_x_death);
  transport::set_header(copy.headers, "x-changed", "6");
  transport::set_header(copy.headers, "x-warren-attempt", "2");
  const PublishProperties out(copy);
  const amqp_basic_properties_t& p = *out.get();

  constexpr amqp_flags_t kAllButUserId =
      AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_HEADERS_FLAG |
      AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_PRIORITY_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
      AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_EXPIRATION_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
      AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG |
      AMQP_BASIC_CLUSTER_ID_FLAG;
  EXPECT_EQ(p._flags, kAllButUserId) << "user_id: the broker refuses another user's";
  EXPECT_EQ(text(p.content_type), "application/json");
  EXPECT_EQ(text(p.content_encoding), "gzip");
  EXPECT_EQ(p.delivery_mode, 2);
  EXPECT_EQ(p.priority, 3);
  EXPECT_EQ(text(p.correlation_id), "corr-42");
  EXPECT_EQ(text(p.reply_to), "replies");
  EXPECT_EQ(text(p.expiration), "600000");
  EXPECT_EQ(text(p.message_id), "m-1");
  EXPECT_EQ(p.timestamp, 1700000000u) << "the original's, not the time of the copy";
  EXPECT_EQ(text(p.type), "order.created");
  EXPECT_EQ(text(p.app_id), "shop");
  EXPECT_EQ(text(p.cluster_id), "c1");

  EXPECT_EQ(header_names(p),
            (std::vector<std::string>{"x-int", "x-negative", "x-flag", "x-table", "x-list",
                                      "x-decimal", "x-changed", "x-text", "x-warren-attempt"}))
      << "the original's order, x-death dropped, the new header last";
  const auto x_int = header(p, "x-int");
  ASSERT_TRUE(x_int);
  EXPECT_EQ(x_int->kind, AMQP_FIELD_KIND_I64);
  EXPECT_EQ(x_int->value.i64, 42);
  EXPECT_EQ(header(p, "x-negative")->kind, AMQP_FIELD_KIND_I32);
  EXPECT_EQ(header(p, "x-negative")->value.i32, -7);
  EXPECT_EQ(header(p, "x-flag")->kind, AMQP_FIELD_KIND_BOOLEAN);
  const auto table = header(p, "x-table");
  ASSERT_EQ(table->kind, AMQP_FIELD_KIND_TABLE);
  ASSERT_EQ(table->value.table.num_entries, 2);
  EXPECT_EQ(string_of(table->value.table.entries[1].key), "quantity");
  EXPECT_EQ(table->value.table.entries[1].value.kind, AMQP_FIELD_KIND_I32);
  EXPECT_EQ(table->value.table.entries[1].value.value.i32, 3);
  const auto list = header(p, "x-list");
  ASSERT_EQ(list->kind, AMQP_FIELD_KIND_ARRAY);
  ASSERT_EQ(list->value.array.num_entries, 2);
  EXPECT_EQ(list->value.array.entries[0].kind, AMQP_FIELD_KIND_I32);
  const auto decimal = header(p, "x-decimal");
  ASSERT_EQ(decimal->kind, AMQP_FIELD_KIND_DECIMAL) << "no text form: travels unchanged";
  EXPECT_EQ(decimal->value.decimal.value, 12345u);
  const auto changed = header(p, "x-changed");
  ASSERT_EQ(changed->kind, AMQP_FIELD_KIND_UTF8) << "changed by the copy: its text";
  EXPECT_EQ(string_of(changed->value.bytes), "6");
  EXPECT_EQ(header(p, "x-text")->kind, AMQP_FIELD_KIND_UTF8);
  EXPECT_EQ(string_of(header(p, "x-warren-attempt")->value.bytes), "2");
}

TEST(WireProperties, ACopyThatDropsEveryTextHeader_KeepsOnlyThoseWithNoTextForm) {
  const Delivered delivered;
  transport::OutboundMessage copy =
      transport::republished_copy(delivered.message(), [](std::string_view) { return true; });
  const PublishProperties out(copy);

  EXPECT_EQ(header_names(*out.get()), (std::vector<std::string>{"x-table", "x-decimal"}))
      << "a handler never sees them, so nothing could mean to drop them";
  EXPECT_EQ(string_of(out.get()->correlation_id), "corr-42");
}

// A header with no text form (here a table) that the copy sets as text (as a retry sets
// x-warren-attempt): the text value takes its place. A table's entries are named, not ordered, so
// the copy's header list and what is sent may differ in order, never in what each name holds
// (found by fuzz_wire_properties, whose check now compares names and values, not positions).
TEST(WireProperties, AHeaderWithNoTextFormSetAsText_IsSentAsTheTextInItsPlace) {
  const Delivered delivered;
  transport::OutboundMessage copy = transport::republished_copy(delivered.message(), drop_x_death);
  transport::set_header(copy.headers, "x-table", "2");
  const PublishProperties out(copy);

  const auto table = header(*out.get(), "x-table");
  ASSERT_TRUE(table);
  EXPECT_EQ(render_field(*table), "2");
  const std::vector<std::string> names = header_names(*out.get());
  EXPECT_EQ(std::count(names.begin(), names.end(), "x-table"), 1);
  EXPECT_EQ(names.at(3), "x-table") << "in the place of the table it replaces";
}

TEST(WireProperties, ACopyOfAMessageWithoutHeaders_SendsNone) {
  Delivered delivered;
  delivered.properties._flags &= ~AMQP_BASIC_HEADERS_FLAG;
  const transport::OutboundMessage copy =
      transport::republished_copy(delivered.message(), drop_x_death);
  const PublishProperties out(copy);

  EXPECT_EQ(out.get()->_flags & AMQP_BASIC_HEADERS_FLAG, 0);
  EXPECT_EQ(string_of(out.get()->content_encoding), "gzip");
}

TEST(WireProperties, AFreshMessage_GetsWarrensDefaultsAndTextHeaders) {
  transport::OutboundMessage fresh;
  fresh.message_id = "m-2";
  fresh.headers = {{"x-count", "42"}};
  fresh.persistent = false;
  const PublishProperties out(fresh);
  const amqp_basic_properties_t& p = *out.get();

  EXPECT_EQ(p._flags, AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG |
                          AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                          AMQP_BASIC_TIMESTAMP_FLAG);
  EXPECT_EQ(text(p.content_type), "application/octet-stream");
  EXPECT_EQ(p.delivery_mode, 1);
  EXPECT_GT(p.timestamp, 1700000000u);
  EXPECT_EQ(header(p, "x-count")->kind, AMQP_FIELD_KIND_UTF8);
}

TEST(WireProperties, ACopyKeptByWarrenHasNoExpiration_AReplayPutsItBack) {
  const Delivered delivered;
  transport::OutboundMessage dead = transport::republished_copy(delivered.message(), drop_x_death);
  suspend_expiration(dead);

  const PublishProperties kept(dead);
  EXPECT_EQ(kept.get()->_flags & AMQP_BASIC_EXPIRATION_FLAG, 0);
  EXPECT_EQ(string_of(header(*kept.get(), "x-warren-original-expiration")->value.bytes), "600000");
  EXPECT_EQ(string_of(kept.get()->correlation_id), "corr-42") << "nothing else changes";

  // The dead letter as `warren dlq replay` reads it, and its copy without the failure headers.
  transport::InboundMessage letter;
  letter.headers = dead.headers;
  letter.wire_properties = dead.wire_properties;
  transport::OutboundMessage replayed = transport::republished_copy(
      letter, [](std::string_view name) { return name.starts_with("x-warren-"); });
  restore_expiration(replayed, letter);

  const PublishProperties out(replayed);
  ASSERT_NE(out.get()->_flags & AMQP_BASIC_EXPIRATION_FLAG, 0);
  EXPECT_EQ(string_of(out.get()->expiration), "600000");
  EXPECT_FALSE(header(*out.get(), "x-warren-original-expiration"));
}

TEST(WireProperties, PropertiesLargerThanTheFirstBuffer_AreKeptWhole) {
  const std::string big(100000, 'b');
  amqp_field_value_t bytes{};
  bytes.kind = AMQP_FIELD_KIND_BYTES;
  bytes.value.bytes = bytes_of(big);
  amqp_table_entry_t headers[1] = {entry("x-blob", bytes)};
  amqp_basic_properties_t properties{};
  properties._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG;
  properties.headers = {1, headers};
  properties.correlation_id = amqp_cstring_bytes("corr-big");
  transport::InboundMessage inbound;
  take_properties(inbound, properties);
  const transport::OutboundMessage copy = transport::republished_copy(inbound, drop_x_death);
  const PublishProperties out(copy);

  const auto blob = header(*out.get(), "x-blob");
  ASSERT_TRUE(blob);
  EXPECT_EQ(blob->kind, AMQP_FIELD_KIND_BYTES) << "a byte array stays one";
  EXPECT_EQ(string_of(blob->value.bytes), big);
  EXPECT_EQ(string_of(out.get()->correlation_id), "corr-big");
}

TEST(WireProperties, WithoutAnExpiration_NothingIsSuspended) {
  Delivered delivered;
  delivered.properties._flags &= ~AMQP_BASIC_EXPIRATION_FLAG;
  transport::OutboundMessage copy = transport::republished_copy(delivered.message(), drop_x_death);
  const std::string before = copy.wire_properties;
  suspend_expiration(copy);

  EXPECT_EQ(copy.wire_properties, before);
  EXPECT_FALSE(transport::find_header(copy.headers, "x-warren-original-expiration"));
}

}  // namespace
}  // namespace warren::broker
