// Unit tests that need something outside the process (the test PostgreSQL or RabbitMQ that
// scripts/test starts, promtool): without it they skip, unless WARREN_REQUIRE_SERVICES=1
// (scripts/test sets it), where they fail, so CI never passes by skipping. The one place that
// decides; the integration tests' counterpart is skip_or_fail() in testkit_env.py.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace warren::test_support {

// WARREN_REQUIRE_SERVICES=1: a missing service fails the test instead of skipping it.
inline bool services_required() {
  const char* required = std::getenv("WARREN_REQUIRE_SERVICES");
  return required != nullptr && std::string_view(required) == "1";
}

}  // namespace warren::test_support

// In a test body: skips the test saying `why` (what is missing and how to get it), or fails it
// when WARREN_REQUIRE_SERVICES=1. Returns from the test either way.
#define WARREN_SKIP_OR_FAIL(why)                               \
  do {                                                         \
    if (::warren::test_support::services_required())           \
      GTEST_FAIL() << "WARREN_REQUIRE_SERVICES=1 but " << why; \
    GTEST_SKIP() << why;                                       \
  } while (false)
