// Array literals for batch parameters, and the parameters of the "mark failed" update.
#include "postgres/pg_array.h"

#include <gtest/gtest.h>

#include "outbox/outbox_queries.h"

namespace warren::outbox {
namespace {

TEST(PgArrayLiteral, Empty_IsEmptyBraces) {
  EXPECT_EQ(postgres::pg_array_literal({}), "{}");
}

TEST(PgArrayLiteral, Elements_AreQuotedAndCommaSeparated) {
  EXPECT_EQ(postgres::pg_array_literal({"a", "b c", ""}), R"({"a","b c",""})");
}

TEST(PgArrayLiteral, QuotesAndBackslashes_AreEscaped) {
  EXPECT_EQ(postgres::pg_array_literal({R"(say "hi")", R"(C:\path)"}),
            R"({"say \"hi\"","C:\\path"})");
}

TEST(PgArrayLiteral, BracesCommasAndTheWordNull_StayText) {
  EXPECT_EQ(postgres::pg_array_literal({"{x,y}", "NULL"}), R"({"{x,y}","NULL"})");
}

TEST(MarkFailedParams, Failures_BecomeParallelArrays) {
  const std::vector<RowFailure> failures = {
      {"id-1", "m-1", 2, false, std::chrono::milliseconds(400), "returned: \"NO_ROUTE\""},
      {"id-2", "m-2", 5, true, std::chrono::milliseconds(0), "nacked"}};
  const MarkFailedParams params = mark_failed_params(failures);
  EXPECT_EQ(params.ids, R"({"id-1","id-2"})");
  EXPECT_EQ(params.attempts, R"({"2","5"})");
  EXPECT_EQ(params.dead, R"({"false","true"})");
  EXPECT_EQ(params.retry_in_ms, R"({"400","0"})");
  EXPECT_EQ(params.errors, R"({"returned: \"NO_ROUTE\"","nacked"})");
}

}  // namespace
}  // namespace warren::outbox
