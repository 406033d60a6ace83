// [host], [log] and [metrics]: each refused value is reported at its file:line:col and key.
#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using test::TempFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(HostSection, RelativePluginDir_IsRefusedAsNotAbsolute) {
  EXPECT_THAT(problems_of(R"(
[host]
plugin_dir = "build/plugins"
)"),
              ElementsAre(Problem(
                  3, 14, "host.plugin_dir",
                  AllOf(HasSubstr("must be an absolute path"), HasSubstr("\"build/plugins\"")))));
}

TEST(HostSection, EmptyOrNonStringName_IsRefusedNamingTheExpectedType) {
  EXPECT_THAT(problems_of(R"(
[host]
name = ""
)"),
              ElementsAre(Problem(3, 8, "host.name", "must not be empty")));
  EXPECT_THAT(problems_of(R"(
[host]
name = 42
)"),
              ElementsAre(Problem(3, 8, "host.name", "must be a string, got an integer")));
}

TEST(HostSection, DurationWithoutUnit_IsRefusedShowingTheSyntaxAndTheValue) {
  EXPECT_THAT(problems_of(R"(
[host]
shutdown_timeout = "30"
)"),
              ElementsAre(Problem(3, 20, "host.shutdown_timeout",
                                  AllOf(HasSubstr("must be a duration"), HasSubstr("\"250ms\""),
                                        HasSubstr("got \"30\"")))));
}

TEST(HostSection, NumberInsteadOfDuration_IsRefusedNamingTheType) {
  EXPECT_THAT(
      problems_of(R"(
[host]
shutdown_timeout = 30
)"),
      ElementsAre(Problem(3, 20, "host.shutdown_timeout",
                          AllOf(HasSubstr("must be a duration"), HasSubstr("got an integer")))));
}

TEST(HostSection, ValueInsteadOfTable_IsRefused) {
  EXPECT_THAT(problems_of(R"(
host = "worker-1"
)"),
              ElementsAre(Problem(2, 8, "host", "must be a table, got a string")));
}

TEST(LogSection, UnknownLevel_IsRefusedListingTheLevels) {
  EXPECT_THAT(problems_of(R"(
[log]
level = "verbose"
)"),
              ElementsAre(Problem(3, 9, "log.level",
                                  "must be one of trace, debug, info, warn, error, critical, "
                                  "off; got \"verbose\"")));
}

TEST(LogSection, UnknownFormat_IsRefusedListingTheFormats) {
  EXPECT_THAT(problems_of(R"(
[log]
format = "xml"
)"),
              ElementsAre(Problem(3, 10, "log.format", "must be one of text, json; got \"xml\"")));
}

TEST(MetricsSection, ListenWithoutPortOrWithBadPort_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = "localhost"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("must be host:port"))));
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = "127.0.0.1:0"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("from 1 to 65535"))));
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = "127.0.0.1:http"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("from 1 to 65535"))));
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = "::1:9464"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("in brackets"))));
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = "[::1]"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("must be host:port"))));
  EXPECT_THAT(problems_of(R"(
[metrics]
listen = ":9464"
)"),
              ElementsAre(Problem(3, 10, "metrics.listen", HasSubstr("must be host:port"))));
}

TEST(MetricsSection, BracketedIpv6Listen_IsAccepted) {
  EXPECT_EQ(test::parse(R"(
[metrics]
listen = "[::1]:9464"
)")
                .metrics.listen,
            "[::1]:9464");
}

// The metrics endpoint's HTTP server may have no IPv6 (Debian's civetweb): the loader is told so
// and refuses "[::1]:9464" where it is written, rather than `warren run` failing at start.
TEST(MetricsSection, Ipv6ListenWhereTheEndpointHasNoIpv6_IsRefusedSayingWhyAndWhatToUse) {
  LoadOptions options = test::without_environment();
  options.metrics_ipv6 = false;
  EXPECT_THAT(
      problems_of(R"(
[metrics]
listen = "[::1]:9464"
)",
                  options),
      ElementsAre(Problem(3, 10, "metrics.listen",
                          AllOf(HasSubstr("no IPv6 support"), HasSubstr("127.0.0.1:9464")))));
}

TEST(MetricsSection, Ipv6ListenWithMetricsDisabled_IsAcceptedSinceNothingListens) {
  LoadOptions options = test::without_environment();
  options.metrics_ipv6 = false;
  EXPECT_THAT(problems_of(R"(
[metrics]
enabled = false
listen = "[::1]:9464"
)",
                          options),
              IsEmpty());
}

TEST(MetricsSection, NonBooleanEnabled_IsRefusedNamingTheExpectedType) {
  EXPECT_THAT(problems_of(R"(
[metrics]
enabled = "yes"
)"),
              ElementsAre(Problem(3, 11, "metrics.enabled",
                                  "must be a boolean (true or false), got a string")));
}

TEST(MetricsSection, UserWithoutPasswordFile_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[metrics]
user = "prom"
)"),
              ElementsAre(Problem(3, 8, "metrics.user", HasSubstr("set password_file too"))));
}

TEST(MetricsSection, PasswordFileWithoutUser_IsRefused) {
  const TempFile password("secret\n");
  EXPECT_THAT(problems_of(R"(
[metrics]
password_file = ")" + password.str() +
                          R"("
)"),
              ElementsAre(Problem(3, 17, "metrics.password_file", HasSubstr("set user too"))));
}

TEST(MetricsSection, MissingPasswordFile_IsRefusedNamingTheFileAndTheReason) {
  EXPECT_THAT(problems_of(R"(
[metrics]
user = "prom"
password_file = "/nonexistent/warren/metrics.password"
)"),
              ElementsAre(Problem(4, 17, "metrics.password_file",
                                  "cannot read \"/nonexistent/warren/metrics.password\": No such "
                                  "file or directory")));
}

TEST(MetricsSection, EmptyPasswordFile_IsRefused) {
  const TempFile password("\n");
  EXPECT_THAT(problems_of(R"(
[metrics]
user = "prom"
password_file = ")" + password.str() +
                          R"("
)"),
              ElementsAre(Problem(4, 17, "metrics.password_file", HasSubstr("is empty"))));
}

TEST(MetricsSection, PasswordIsReadWithTrailingNewlineStripped) {
  const TempFile password("s3cret\n");
  const Config config = test::parse(R"(
[metrics]
user = "prom"
password_file = ")" + password.str() +
                                    R"("
)");
  EXPECT_EQ(config.metrics.password, "s3cret");
  EXPECT_THAT(config_warnings(config), IsEmpty());
}

}  // namespace
}  // namespace warren::config
