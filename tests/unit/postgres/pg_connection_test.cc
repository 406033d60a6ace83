// What PgConnection and describe_dsn say about a dsn: enough to find the server, never the
// password, even when libpq cannot parse the string (its own messages quote the string).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "postgres/pg_connection.h"

namespace warren::postgres {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(DescribeDsn, Uri_NamesHostPortDatabaseAndUserButNotThePassword) {
  const std::string text = describe_dsn("postgresql://warren:s3cret@db.example:5433/orders");
  EXPECT_EQ(text, "host=db.example port=5433 dbname=orders user=warren");
}

TEST(DescribeDsn, KeywordString_LeavesThePasswordOut) {
  EXPECT_EQ(describe_dsn("host=db.example password=s3cret dbname=orders"),
            "host=db.example dbname=orders");
}

TEST(DescribeDsn, PlainWord_IsTheDatabaseNameAsLibpqReadsIt) {
  EXPECT_EQ(describe_dsn("orders"), "dbname=orders");
}

TEST(DescribeDsn, UnparsableUri_SaysWhyWithoutQuotingTheUriOrItsPassword) {
  const std::string text = describe_dsn("postgresql://warren:s3cret@[::1/orders");
  EXPECT_THAT(text, AllOf(HasSubstr("unparsable"), HasSubstr("IPv6"), Not(HasSubstr("s3cret")),
                          Not(HasSubstr("warren"))));
}

TEST(DescribeDsn, MalformedPercentEscapeInThePassword_IsNotQuoted) {
  const std::string text = describe_dsn("postgresql://warren:pa%zzss@db/orders");
  EXPECT_THAT(text,
              AllOf(HasSubstr("percent-encoded"), Not(HasSubstr("pa%zz")), Not(HasSubstr("zzss"))));
}

TEST(DescribeDsn, KeywordStringWithAnUnquotedSpaceInThePassword_DoesNotShowItsTail) {
  // libpq reads "def" as a keyword without '=' and names it.
  const std::string text = describe_dsn("host=db password=abc def");
  EXPECT_THAT(text,
              AllOf(HasSubstr("missing \"=\""), Not(HasSubstr("def")), Not(HasSubstr("abc"))));
}

TEST(PgConnection, UnparsableDsn_IsRefusedWithoutThePasswordInTheError) {
  PgConnectOptions options;
  options.dsn = "postgresql://warren:s3cret@[::1/orders";
  try {
    PgConnection connection(options);
    FAIL() << "expected PgError";
  } catch (const PgError& error) {
    EXPECT_THAT(error.what(),
                AllOf(HasSubstr("not a valid connection string"), Not(HasSubstr("s3cret"))));
    EXPECT_TRUE(error.connection_lost());
  }
}

}  // namespace
}  // namespace warren::postgres
