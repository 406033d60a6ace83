// Specification of EndpointRotation, the order in which a connection tries the [broker] hosts:
// the first entry first, the next one after each failure (so that the one that failed comes
// round again only after all the others), and a working endpoint is kept (issue 21).
#include "broker/endpoint_rotation.h"

#include <gtest/gtest.h>

#include <vector>

namespace warren::broker {
namespace {

TEST(EndpointRotation, NoEndpoint_IsRefused) {
  EXPECT_THROW(EndpointRotation(0), std::invalid_argument);
}

TEST(EndpointRotation, New_TriesTheFirstEntryFirst) {
  EXPECT_EQ(EndpointRotation(3).current(), 0U);
}

TEST(EndpointRotation, OwnNodeFails_EveryOtherIsTriedBeforeItComesRoundAgain) {
  EndpointRotation rotation(3);  // own node first, as each host of a cluster lists them
  std::vector<std::size_t> tried;
  for (int failure = 0; failure < 4; ++failure) {
    rotation.failed();
    tried.push_back(rotation.current());
  }
  EXPECT_EQ(tried, (std::vector<std::size_t>{1, 2, 0, 1}));
}

TEST(EndpointRotation, ConnectionLostAfterAFailover_GoesOnToTheNextNotBackToTheFirst) {
  EndpointRotation rotation(3);
  rotation.failed();  // node 0 frozen: the host moved to 1, which works for a while
  ASSERT_EQ(rotation.current(), 1U);
  rotation.failed();  // then 1 is lost too: 2, which never failed, before 0, which did
  EXPECT_EQ(rotation.current(), 2U);
}

TEST(EndpointRotation, OneEndpoint_IsAlwaysTheOneTried) {
  EndpointRotation rotation(1);
  rotation.failed();
  rotation.failed();
  EXPECT_EQ(rotation.current(), 0U);
}

}  // namespace
}  // namespace warren::broker
