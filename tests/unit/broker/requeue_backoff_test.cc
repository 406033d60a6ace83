// Specification of RequeueBackoff, how long a message whose retry or dead letter could not be
// published waits before its requeue: growing with each failure of its worker, never past the
// ceiling (a quarter of the broker's consumer_timeout), started over by a success, and counted
// for each worker on its own.
#include "broker/requeue_backoff.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warren::broker {
namespace {

using namespace std::chrono_literals;

transport::BackoffPolicy exact(std::chrono::milliseconds initial, std::chrono::milliseconds max) {
  transport::BackoffPolicy policy;  // exponential, no jitter: the waits are exact
  policy.initial = initial;
  policy.max = max;
  return policy;
}

TEST(RequeueBackoff, FailuresInARow_WaitGrowsToTheMaximum) {
  RequeueBackoff backoff(1, exact(500ms, 2s), 1h);
  EXPECT_EQ(backoff.failed(0, 0.0), 500ms);
  EXPECT_EQ(backoff.failed(0, 0.0), 1s);
  EXPECT_EQ(backoff.failed(0, 0.0), 2s);
  EXPECT_EQ(backoff.failed(0, 0.0), 2s);
}

TEST(RequeueBackoff, ASuccess_TheNextFailureWaitsTheInitialStepAgain) {
  RequeueBackoff backoff(1, exact(500ms, 10s), 1h);
  backoff.failed(0, 0.0);
  backoff.failed(0, 0.0);
  backoff.succeeded(0);
  EXPECT_EQ(backoff.failed(0, 0.0), 500ms);
}

TEST(RequeueBackoff, EachWorker_HasABackoffOfItsOwn) {
  RequeueBackoff backoff(2, exact(500ms, 10s), 1h);
  backoff.failed(0, 0.0);
  backoff.failed(0, 0.0);
  EXPECT_EQ(backoff.failed(1, 0.0), 500ms) << "worker 1 slowed by worker 0's failures";
  backoff.succeeded(1);
  EXPECT_EQ(backoff.failed(0, 0.0), 2s) << "worker 0's backoff reset by worker 1's success";
}

TEST(RequeueBackoff, AboveTheCeiling_WaitsTheCeiling) {
  RequeueBackoff backoff(1, exact(10s, 60s), 15s);
  EXPECT_EQ(backoff.failed(0, 0.0), 10s);
  EXPECT_EQ(backoff.failed(0, 0.0), 15s);
}

}  // namespace
}  // namespace warren::broker
