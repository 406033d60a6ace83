// RoundPacing: which way of pacing a worker's rounds the SQLite queue engine uses, from what it
// measured (round_pacing.h). Time is given, not waited for.
#include "queue/round_pacing.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warren::queue {
namespace {

using namespace std::chrono_literals;
using Mode = RoundPacing::Mode;

class RoundPacingTest : public ::testing::Test {
 protected:
  RoundPacing::Timing timing() const {
    RoundPacing::Timing t;
    t.trial = 100ms;
    t.keep = 1s;
    t.warmup_rounds = 1;
    return t;
  }

  // Rounds of `rows` each `every` apart, with a backlog, for `how_long`.
  void rounds(RoundPacing& pacing, std::size_t rows, std::chrono::milliseconds every,
              std::chrono::milliseconds how_long) {
    const auto end = now_ + how_long;
    while (now_ < end) {
      now_ += every;
      pacing.record_round(rows, true, now_);
    }
  }

  RoundPacing::Clock::time_point now_{};
};

TEST_F(RoundPacingTest, NoBacklog_OverlapsAndMeasuresNothing) {
  RoundPacing pacing(timing());
  for (int i = 0; i < 100; ++i) {
    now_ += 10ms;
    pacing.record_round(16, false, now_);
    EXPECT_EQ(pacing.mode(), Mode::overlap);
  }
}

TEST_F(RoundPacingTest, WholeBatchesFaster_AreKeptAfterBothWereTried) {
  RoundPacing pacing(timing());
  pacing.record_round(16, true, now_);  // a backlog: the trial of overlap begins
  EXPECT_EQ(pacing.mode(), Mode::overlap);
  rounds(pacing, 16, 1ms, 110ms);  // 16 000 rows/s
  ASSERT_EQ(pacing.mode(), Mode::whole_batches) << "the second trial did not start";
  rounds(pacing, 32, 1ms, 110ms);  // 32 000 rows/s
  EXPECT_EQ(pacing.mode(), Mode::whole_batches);
  rounds(pacing, 32, 1ms, 800ms);  // kept...
  EXPECT_EQ(pacing.mode(), Mode::whole_batches);
  rounds(pacing, 32, 1ms, 300ms);  // ...until both are tried again
  EXPECT_EQ(pacing.mode(), Mode::whole_batches) << "tried again and whole batches still win";
}

TEST_F(RoundPacingTest, OverlapFaster_IsKept) {
  RoundPacing pacing(timing());
  pacing.record_round(16, true, now_);
  rounds(pacing, 16, 1ms, 110ms);  // 16 000 rows/s
  ASSERT_EQ(pacing.mode(), Mode::whole_batches);
  rounds(pacing, 32, 4ms, 110ms);  // 8 000 rows/s
  EXPECT_EQ(pacing.mode(), Mode::overlap);
  rounds(pacing, 16, 1ms, 500ms);
  EXPECT_EQ(pacing.mode(), Mode::overlap);
}

TEST_F(RoundPacingTest, BacklogGone_BackToOverlapAtOnce) {
  RoundPacing pacing(timing());
  pacing.record_round(16, true, now_);
  rounds(pacing, 16, 1ms, 110ms);
  ASSERT_EQ(pacing.mode(), Mode::whole_batches);
  now_ += 1ms;
  pacing.record_round(3, false, now_);
  EXPECT_EQ(pacing.mode(), Mode::overlap);
}

TEST_F(RoundPacingTest, WarmUpRoundsAfterASwitch_AreNotMeasured) {
  RoundPacing::Timing t = timing();
  t.warmup_rounds = 3;
  RoundPacing pacing(t);
  pacing.record_round(16, true, now_);
  while (pacing.mode() == Mode::overlap && now_ < RoundPacing::Clock::time_point(1s)) {
    now_ += 1ms;
    pacing.record_round(16, true, now_);  // overlap: 16 000 rows/s
  }
  ASSERT_EQ(pacing.mode(), Mode::whole_batches);
  // Three huge rounds right after the switch (rows the other way had settled) are not counted:
  // whole batches then run at 8 000 rows/s, and overlap wins.
  for (int i = 0; i < 3; ++i) {
    now_ += 1ms;
    pacing.record_round(1000, true, now_);
  }
  rounds(pacing, 8, 1ms, 110ms);
  EXPECT_EQ(pacing.mode(), Mode::overlap);
}

}  // namespace
}  // namespace warren::queue
