// A publish that must fail, and what it failed with: the PublishError's reason and text, and how
// long the call took. A publish that succeeds fails the test.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "broker/publisher_connection.h"
#include "transport/transport.h"

namespace warren::broker::test_support {

struct PublishFailure {
  transport::PublishError::Reason reason = transport::PublishError::Reason::unavailable;
  std::string what;
  std::chrono::steady_clock::duration took{};
};

inline PublishFailure failure_of(PublisherConnection& publisher,
                                 const transport::OutboundMessage& message) {
  const auto started = std::chrono::steady_clock::now();
  try {
    publisher.publish(message);
  } catch (const transport::PublishError& e) {
    return {e.reason(), e.what(), std::chrono::steady_clock::now() - started};
  }
  ADD_FAILURE() << "the publish succeeded; expected a PublishError";
  return {transport::PublishError::Reason::unavailable, "(no error)",
          std::chrono::steady_clock::now() - started};
}

}  // namespace warren::broker::test_support
