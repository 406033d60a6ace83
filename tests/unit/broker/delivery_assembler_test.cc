// DeliveryAssembler: deliveries put together from their frames as librabbitmq decodes them,
// frames of two channels interleaved, and frames out of order refused (the connection is lost).
#include "broker/delivery_assembler.h"

#include <amqp_framing.h>
#include <gtest/gtest.h>

#include <string>

#include "broker/amqp_errors.h"

namespace warren::broker {
namespace {

amqp_bytes_t bytes(const std::string& text) {
  return {text.size(), const_cast<char*>(text.data())};
}

class DeliveryAssemblerTest : public ::testing::Test {
 protected:
  amqp_basic_deliver_t deliver(std::uint64_t tag) {
    amqp_basic_deliver_t method{};
    method.delivery_tag = tag;
    method.exchange = bytes(exchange_);
    method.routing_key = bytes(routing_key_);
    method.redelivered = 1;
    return method;
  }

  // A header frame announcing `size` bytes, with a message id and an x-warren-attempt header.
  amqp_frame_t header(amqp_channel_t channel, std::uint64_t size) {
    entry_.key = bytes(attempt_name_);
    entry_.value.kind = AMQP_FIELD_KIND_UTF8;
    entry_.value.value.bytes = bytes(attempt_value_);
    properties_ = {};
    properties_._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
    properties_.message_id = bytes(message_id_);
    properties_.headers = {1, &entry_};
    amqp_frame_t frame{};
    frame.frame_type = AMQP_FRAME_HEADER;
    frame.channel = channel;
    frame.payload.properties.class_id = AMQP_BASIC_CLASS;
    frame.payload.properties.body_size = size;
    frame.payload.properties.decoded = &properties_;
    return frame;
  }

  static amqp_frame_t body(amqp_channel_t channel, const std::string& fragment) {
    amqp_frame_t frame{};
    frame.frame_type = AMQP_FRAME_BODY;
    frame.channel = channel;
    frame.payload.body_fragment = bytes(fragment);
    return frame;
  }

  std::string exchange_ = "orders", routing_key_ = "order.created", message_id_ = "m-1";
  std::string attempt_name_ = "x-warren-attempt", attempt_value_ = "3";
  amqp_table_entry_t entry_{};
  amqp_basic_properties_t properties_{};
  DeliveryAssembler assembler_{2};
};

TEST_F(DeliveryAssemblerTest, DeliverHeaderAndTwoBodyFrames_MakeOneMessageWithEverything) {
  const std::string first = "hello, ", second = "world";
  assembler_.on_deliver(0, deliver(7), "q");
  EXPECT_FALSE(assembler_.on_content(0, header(1, 12)));
  EXPECT_FALSE(assembler_.on_content(0, body(1, first)));
  const auto done = assembler_.on_content(0, body(1, second));

  ASSERT_TRUE(done);
  EXPECT_EQ(done->delivery_tag, 7u);
  const transport::InboundMessage& message = done->message;
  EXPECT_EQ(message.queue, "q");
  EXPECT_EQ(message.exchange, "orders");
  EXPECT_EQ(message.routing_key, "order.created");
  EXPECT_TRUE(message.redelivered);
  EXPECT_EQ(message.message_id, "m-1");
  EXPECT_EQ(message.body, "hello, world");
  EXPECT_EQ(message.attempt, 3u);
  EXPECT_FALSE(message.wire_properties.empty());
}

TEST_F(DeliveryAssemblerTest, EmptyBody_IsCompleteAtItsHeader) {
  assembler_.on_deliver(1, deliver(1), "q");
  const auto done = assembler_.on_content(1, header(2, 0));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->message.body, "");
}

TEST_F(DeliveryAssemblerTest, TwoChannelsInterleaved_EachGetsItsOwnFrames) {
  const std::string a = "aaaa", b = "bb";
  assembler_.on_deliver(0, deliver(10), "q0");
  assembler_.on_deliver(1, deliver(20), "q1");
  EXPECT_FALSE(assembler_.on_content(1, header(2, 2)));
  EXPECT_FALSE(assembler_.on_content(0, header(1, 4)));
  const auto second = assembler_.on_content(1, body(2, b));
  const auto first = assembler_.on_content(0, body(1, a));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->delivery_tag, 10u);
  EXPECT_EQ(first->message.body, "aaaa");
  EXPECT_EQ(first->message.queue, "q0");
  EXPECT_EQ(second->delivery_tag, 20u);
  EXPECT_EQ(second->message.body, "bb");
}

TEST_F(DeliveryAssemblerTest, FramesOutOfOrder_LoseTheConnection) {
  const std::string text = "xyz";
  EXPECT_THROW(assembler_.on_content(0, header(1, 3)), ConnectionLost) << "no deliver began";
  assembler_.on_deliver(0, deliver(1), "q");
  EXPECT_THROW(assembler_.on_content(0, body(1, text)), ConnectionLost) << "body before header";

  DeliveryAssembler other(1);
  other.on_deliver(0, deliver(1), "q");
  EXPECT_THROW(other.on_deliver(0, deliver(2), "q"), ConnectionLost) << "content never came";

  DeliveryAssembler third(1);
  third.on_deliver(0, deliver(1), "q");
  third.on_content(0, header(1, 2));
  EXPECT_THROW(third.on_content(0, body(1, text)), ConnectionLost) << "more body than announced";
}

TEST_F(DeliveryAssemblerTest, ChannelDropped_ItsDeliveryInProgressIsGone) {
  assembler_.on_deliver(0, deliver(1), "q");
  assembler_.on_content(0, header(1, 5));
  assembler_.drop(0);
  assembler_.on_deliver(0, deliver(2), "q");  // a new channel incarnation starts clean
  const auto done = assembler_.on_content(0, header(1, 0));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->delivery_tag, 2u);
}

}  // namespace
}  // namespace warren::broker
