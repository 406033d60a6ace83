// Every frame survives encode -> decode unchanged, and a damaged frame is a FrameError that says
// what is wrong: the host reads whatever a dying child left on its socket.
#include "isolation/frames.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "isolation/frame_codec.h"

namespace warren::isolation {
namespace {

std::vector<Frame> one_of_each() {
  host_abi::ReportedOutcome retried;
  retried.kind = host_abi::ReportedOutcome::Kind::retry;
  retried.delay = std::chrono::milliseconds(1500);
  retried.reason = "db busy";
  retried.error = host_abi::HandlerError::std_exception;
  retried.exception_type = "std::runtime_error";
  host_abi::ReportedOutcome acked;
  acked.kind = host_abi::ReportedOutcome::Kind::ack;
  OutgoingMessage published{"orders",
                            "order.created",
                            std::string("b\0dy", 4),
                            "application/json",
                            "id-1",
                            {{"x-a", "1"}, {"", ""}},
                            false};
  return {
      Start{kProtocolVersion,
            "orders",
            "/opt/p/liborders.so",
            {{"dsn", "x"}, {"", ""}},
            LogLevel::debug,
            "orders"},
      Hello{kProtocolVersion, 1, 2, "echo", "1.0.0"},
      Ready{},
      InitFailed{"init: missing setting 'dsn'"},
      Deliver{42,
              std::string("\0\1\2", 3),
              "rk",
              "ex",
              "mid",
              "text/plain",
              3,
              true,
              {{"traceparent", "00-ab"}, {"x-warren-attempt", "3"}},
              true},
      Outcome{42, retried, 1'500'000},
      Outcome{43, acked},
      PublishRequest{42, 7, published},
      PublishResult{7, std::nullopt},
      PublishResult{8, std::string("unroutable")},
      LogLine{0, LogLevel::critical, "worker line"},
      LogLine{42, LogLevel::trace, ""},
      MetricDeclare{1, MetricType::histogram, "orders_seconds", "help", {0.1, 1, 10}, {"shop"}},
      MetricDeclared{1, ""},
      MetricDeclared{2, "name belongs to a counter"},
      MetricRecord{1, {"eu"}, 0.25},
      MetricRecord{2, {}, std::numeric_limits<double>::quiet_NaN()},
      Cancel{42},
      Ping{9},
      Pong{9},
      Shutdown{},
  };
}

TEST(Frames, EveryFrame_DecodesToWhatWasEncoded) {
  for (const Frame& frame : one_of_each()) {
    Frame decoded = decode(encode(frame));
    EXPECT_EQ(decoded, frame) << frame_name(frame);
    EXPECT_EQ(frame_name(decoded), frame_name(frame));
  }
}

TEST(Frames, EveryTruncation_IsAFrameErrorNeverACrash) {
  for (const Frame& frame : one_of_each()) {
    std::string bytes = encode(frame);
    for (std::size_t size = 0; size < bytes.size(); ++size)
      EXPECT_THROW(decode(std::string_view(bytes).substr(0, size)), FrameError)
          << frame_name(frame) << " cut to " << size << " of " << bytes.size() << " bytes";
  }
}

TEST(Frames, BytesPastTheEnd_AreRefused) {
  std::string bytes = encode(Ping{1}) + "x";
  try {
    decode(bytes);
    FAIL() << "decoded";
  } catch (const FrameError& error) {
    EXPECT_STREQ(error.what(), "Ping frame has 1 bytes past its end");
  }
}

TEST(Frames, UnknownTypeAndOutOfRangeEnums_AreRefusedByName) {
  EXPECT_THROW(decode(std::string(1, '\x7f')), FrameError);
  std::string log = encode(LogLine{1, LogLevel::info, "x"});
  log[9] = 9;  // the level byte, after the type and the sequence
  try {
    decode(log);
    FAIL() << "decoded";
  } catch (const FrameError& error) {
    EXPECT_STREQ(error.what(), "log level 9 is out of range");
  }
  std::string flag = encode(Deliver{});
  flag[flag.size() - 6] = 2;  // redelivered, before the header count and report_at_once
  EXPECT_THROW(decode(flag), FrameError);
  flag = encode(Deliver{});
  flag[flag.size() - 1] = 2;  // report_at_once
  EXPECT_THROW(decode(flag), FrameError);
}

TEST(Frames, AHugeCount_IsRefusedBeforeAnyAllocation) {
  FrameWriter out;
  out.u8(static_cast<std::uint8_t>(Frame(MetricRecord{}).index()));
  out.u32(1);
  out.u32(0xffffffffu);  // label values: four billion strings in a few bytes
  std::string bytes = std::move(out).take();
  try {
    decode(bytes);
    FAIL() << "decoded";
  } catch (const FrameError& error) {
    EXPECT_NE(std::string(error.what()).find("4294967295 label values"), std::string::npos)
        << error.what();
  }
}

TEST(Frames, EncodeDeliver_GivesTheBytesOfTheDeliverItViews) {
  for (const Frame& frame : one_of_each()) {
    const auto* f = std::get_if<Deliver>(&frame);
    if (f == nullptr)
      continue;
    EXPECT_EQ(encode_deliver(DeliverFields{f->sequence, f->body, f->routing_key, f->exchange,
                                           f->message_id, f->content_type, f->attempt,
                                           f->redelivered, f->headers, f->report_at_once}),
              encode(frame));
  }
}

}  // namespace
}  // namespace warren::isolation
