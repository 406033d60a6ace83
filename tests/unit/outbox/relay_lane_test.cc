// RelayLane: one claim -> publish -> record round, against fakes of the table and the broker.
#include "outbox/relay_lane.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>

#include "fake_outbox.h"

namespace warren::outbox {
namespace {

using ::testing::ElementsAre;
using testing::FakeOutboxStore;
using testing::FakeRowPublisher;
using ::testing::HasSubstr;
using testing::make_rows;

class RelayLaneTest : public ::testing::Test {
 protected:
  RelayLane make_lane(int batch = 10) {
    return RelayLane(RelayLaneOptions{"orders", "livraria.eventos", batch, 0}, store_, publisher_,
                     schedule_, &relayed_);
  }

  std::vector<std::string> events_;
  FakeOutboxStore store_{&events_};
  FakeRowPublisher publisher_{&events_};
  RetrySchedule schedule_{3, std::chrono::milliseconds(100), std::chrono::seconds(10)};
  prometheus::Counter relayed_;
};

TEST_F(RelayLaneTest, ConfirmedRows_AreRecordedSentAfterPublishingInTheClaimingTransaction) {
  store_.add_rows(make_rows(3));
  auto lane = make_lane();

  EXPECT_EQ(lane.step(), RelayLane::Step::batch_partial);

  EXPECT_THAT(events_, ElementsAre("claim", "publish 3", "complete"));
  ASSERT_EQ(store_.verdicts.size(), 1u);
  EXPECT_THAT(store_.verdicts[0].sent, ElementsAre("row-0", "row-1", "row-2"));
  EXPECT_EQ(relayed_.Value(), 3);
}

TEST_F(RelayLaneTest, PublishedMessage_CarriesTheRowsIdAndGoesToTheDefaultExchange) {
  store_.add_rows(make_rows(1));
  auto lane = make_lane();
  lane.step();
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].message_id, "msg-0");
  EXPECT_EQ(publisher_.published[0].exchange, "livraria.eventos");
  EXPECT_EQ(publisher_.published[0].body, "payload 0");
  EXPECT_TRUE(publisher_.published[0].mandatory);
}

TEST_F(RelayLaneTest, FullBatch_AsksToGoAgainAtOnce) {
  store_.add_rows(make_rows(15));
  auto lane = make_lane(10);
  EXPECT_EQ(lane.step(), RelayLane::Step::batch_full);
  EXPECT_EQ(lane.step(), RelayLane::Step::batch_partial);
  EXPECT_EQ(publisher_.published.size(), 15u);
}

TEST_F(RelayLaneTest, NothingDue_RollsBackAndPublishesNothing) {
  auto lane = make_lane();
  EXPECT_EQ(lane.step(), RelayLane::Step::nothing_due);
  EXPECT_THAT(events_, ElementsAre("claim", "abandon"));
}

TEST_F(RelayLaneTest, PublisherNotReady_ClaimsNothing) {
  store_.add_rows(make_rows(2));
  publisher_.is_ready = false;
  auto lane = make_lane();
  EXPECT_EQ(lane.step(), RelayLane::Step::publisher_not_ready);
  EXPECT_TRUE(events_.empty());
  EXPECT_EQ(store_.pending(), 2u);
}

TEST_F(RelayLaneTest, ReturnedRow_IsRecordedFailedWithBackoffAndNeverSent) {
  store_.add_rows(make_rows(2));
  publisher_.verdict = [](const transport::OutboundMessage& message) {
    return message.message_id == "msg-1" ? PublishOutcome::failed("returned: 312 NO_ROUTE")
                                         : PublishOutcome::confirmed();
  };
  auto lane = make_lane();
  lane.step();
  ASSERT_EQ(store_.verdicts.size(), 1u);
  EXPECT_THAT(store_.verdicts[0].sent, ElementsAre("row-0"));
  ASSERT_EQ(store_.verdicts[0].failed.size(), 1u);
  const RowFailure& failure = store_.verdicts[0].failed[0];
  EXPECT_EQ(failure.id, "row-1");
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_FALSE(failure.dead);
  EXPECT_EQ(failure.retry_in, std::chrono::milliseconds(100));
  EXPECT_THAT(failure.error, HasSubstr("NO_ROUTE"));
  EXPECT_EQ(relayed_.Value(), 1);
}

TEST_F(RelayLaneTest, RowFailingItsLastAttempt_IsRecordedDead) {
  store_.add_rows(make_rows(1, "rk", 2));
  publisher_.verdict = [](const transport::OutboundMessage&) {
    return PublishOutcome::failed("nacked");
  };
  auto lane = make_lane();
  lane.step();
  ASSERT_EQ(store_.verdicts.at(0).failed.size(), 1u);
  EXPECT_TRUE(store_.verdicts[0].failed[0].dead);
  EXPECT_EQ(store_.verdicts[0].failed[0].attempts, 3);
}

TEST_F(RelayLaneTest, BrokerLostDuringTheBatch_ConfirmedRowsAreRecordedTheOthersStayPending) {
  store_.add_rows(make_rows(3));
  publisher_.verdict = [](const transport::OutboundMessage& message) {
    return message.message_id == "msg-0" ? PublishOutcome::confirmed()
                                         : PublishOutcome::unavailable("connection lost");
  };
  auto lane = make_lane();
  EXPECT_EQ(lane.step(), RelayLane::Step::publisher_not_ready);
  ASSERT_EQ(store_.verdicts.size(), 1u);
  EXPECT_THAT(store_.verdicts[0].sent, ElementsAre("row-0"));
  EXPECT_TRUE(store_.verdicts[0].failed.empty());  // no attempt counted against them
  EXPECT_EQ(store_.pending(), 2u);
}

TEST_F(RelayLaneTest, NoRowPublished_RecordsNothingAndRollsBack) {
  store_.add_rows(make_rows(2));
  publisher_.verdict = [](const transport::OutboundMessage&) {
    return PublishOutcome::unavailable("connection lost");
  };
  auto lane = make_lane();
  lane.step();
  EXPECT_THAT(events_, ElementsAre("claim", "publish 2", "abandon"));
  EXPECT_EQ(store_.pending(), 2u);
}

TEST_F(RelayLaneTest, RecordingFails_ReportsTheStoreAndCountsNothingRelayed) {
  store_.add_rows(make_rows(2));
  store_.fail_complete = true;
  auto lane = make_lane();
  EXPECT_EQ(lane.step(), RelayLane::Step::store_failed);
  EXPECT_THAT(lane.last_error(), HasSubstr("COMMIT"));
  EXPECT_THAT(events_, ElementsAre("claim", "publish 2", "complete", "abandon"));
  EXPECT_EQ(relayed_.Value(), 0);
  EXPECT_EQ(store_.pending(), 2u);  // published, not marked: they go out again (at least once)
}

TEST_F(RelayLaneTest, ClaimFails_ReportsTheStoreAndPublishesNothing) {
  store_.add_rows(make_rows(2));
  store_.fail_claims = true;
  auto lane = make_lane();
  EXPECT_EQ(lane.step(), RelayLane::Step::store_failed);
  EXPECT_THAT(lane.last_error(), HasSubstr("unreachable"));
  EXPECT_TRUE(publisher_.published.empty());
}

TEST_F(RelayLaneTest, RowWithBadHeaders_FailsWithoutBeingPublishedWhileTheOthersGoOut) {
  auto rows = make_rows(2);
  rows[0].headers_json = "\"not an object\"";
  store_.add_rows(rows);
  auto lane = make_lane();
  lane.step();
  ASSERT_EQ(publisher_.published.size(), 1u);
  EXPECT_EQ(publisher_.published[0].message_id, "msg-1");
  ASSERT_EQ(store_.verdicts.at(0).failed.size(), 1u);
  EXPECT_EQ(store_.verdicts[0].failed[0].id, "row-0");
  EXPECT_THAT(store_.verdicts[0].sent, ElementsAre("row-1"));
}

}  // namespace
}  // namespace warren::outbox
