// Issue 19 item 11: the `exchange` label of warren_published_total. The exchange of a publish
// comes from application data (outbox rows, what a plugin publishes), so labelling by it made one
// series per distinct name, without bound. Only the exchanges Warren was told about are labelled
// by name; every other publish counts under exchange="other".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "observability/metrics.h"

namespace warren::observability {
namespace {

using ::testing::HasSubstr;

// The warren_published_total series in the exposition.
std::size_t published_series(const Metrics& metrics) {
  std::istringstream lines(metrics.serialize());
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("warren_published_total{"))
      ++count;
  }
  return count;
}

TEST(PublishedExchangeLabel, TenThousandDistinctUnknownExchanges_CountAsOneOtherSeries) {
  Metrics metrics;

  for (int i = 0; i < 10'000; ++i)
    metrics.published("tenant-" + std::to_string(i) + ".events", "confirmed").Increment();

  EXPECT_EQ(published_series(metrics), 1u);
  EXPECT_THAT(metrics.serialize(),
              HasSubstr("warren_published_total{exchange=\"other\",result=\"confirmed\"} 10000"));
}

TEST(PublishedExchangeLabel, LabelledExchanges_KeepTheirNamesAmongTenThousandOthers) {
  Metrics metrics({"livraria.events", "livraria.dead"});

  for (int i = 0; i < 10'000; ++i) {
    metrics.published("tenant-" + std::to_string(i), i % 2 == 0 ? "confirmed" : "returned")
        .Increment();
    metrics.published("livraria.events", "confirmed").Increment();
  }
  metrics.published("livraria.dead", "timeout").Increment();

  const std::string exposition = metrics.serialize();
  EXPECT_EQ(published_series(metrics), 4u) << exposition;
  EXPECT_THAT(exposition, HasSubstr("warren_published_total{exchange=\"livraria.events\","
                                    "result=\"confirmed\"} 10000"));
  EXPECT_THAT(exposition,
              HasSubstr("warren_published_total{exchange=\"livraria.dead\",result=\"timeout\"} 1"));
  EXPECT_THAT(exposition,
              HasSubstr("warren_published_total{exchange=\"other\",result=\"confirmed\"} 5000"));
  EXPECT_THAT(exposition,
              HasSubstr("warren_published_total{exchange=\"other\",result=\"returned\"} 5000"));
}

}  // namespace
}  // namespace warren::observability
