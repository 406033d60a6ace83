// [broker]: URIs, timeouts, TLS files, and the password, which comes from WARREN_BROKER_PASSWORD,
// else password_file, else the URI, and never appears in a message.
#include "config_test_support.h"

namespace warren::config {
namespace {

using namespace std::chrono_literals;
using test::Problem;
using test::problems_of;
using test::problems_of_document;
using test::TempFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// WARREN_BROKER_PASSWORD set to `password`; no other variable.
LoadOptions with_environment_password(std::string password) {
  LoadOptions options;
  options.environment = [password = std::move(password)](const char* name) -> const char* {
    return std::string_view(name) == "WARREN_BROKER_PASSWORD" ? password.c_str() : nullptr;
  };
  return options;
}

TEST(BrokerSection, MissingSection_IsRefusedWithoutALocation) {
  EXPECT_THAT(problems_of_document(R"(
[host]
name = "w"
)"),
              ElementsAre(Problem(0, 0, "broker",
                                  AllOf(HasSubstr("missing [broker] section"),
                                        HasSubstr("transport = \"memory\"")))));
}

TEST(BrokerSection, NeitherUriNorHosts_IsRefusedAtTheSection) {
  EXPECT_THAT(problems_of(R"(
[broker]
heartbeat = "10s"
)"),
              ElementsAre(Problem(2, 1, "broker.uri", HasSubstr("missing required key"))));
}

TEST(BrokerSection, MemoryTransport_NeedsNoUri) {
  const Config config = test::parse(R"(
[broker]
transport = "memory"
)");
  EXPECT_EQ(config.broker.transport, BrokerConfig::Transport::memory);
}

TEST(BrokerSection, UnknownTransport_IsRefusedListingTheTransports) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
transport = "kafka"
)"),
      ElementsAre(Problem(3, 13, "broker.transport",
                          "must be one of rabbitmq, memory, sqlite, postgres; got \"kafka\"")));
}

TEST(BrokerSection, BothUriAndHosts_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://a/"
hosts = ["amqp://b/"]
)"),
              ElementsAre(Problem(4, 9, "broker.hosts", "set either uri or hosts, not both")));
}

TEST(BrokerSection, HostsThatIsNotAnArray_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
hosts = "amqp://a/"
)"),
              ElementsAre(Problem(3, 9, "broker.hosts", "must be an array, got a string")));
}

TEST(BrokerSection, EmptyHosts_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
hosts = []
)"),
              ElementsAre(Problem(3, 9, "broker.hosts", HasSubstr("at least one URI"))));
}

TEST(BrokerSection, HostsAreKeptInOrderForFailover) {
  const Config config = test::parse(R"(
[broker]
hosts = ["amqp://a:5672/", "amqps://b:5671/v"]
)");
  EXPECT_THAT(config.broker.uris, ElementsAre("amqp://a:5672/", "amqps://b:5671/v"));
}

TEST(BrokerSection, NonStringHost_IsRefusedAtTheElement) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
hosts = ["amqp://a/", 5]
)"),
      ElementsAre(Problem(3, 23, "broker.hosts[1]",
                          AllOf(HasSubstr("must be a string"), HasSubstr("got an integer")))));
}

TEST(BrokerSection, MalformedUris_AreRefusedSayingWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://h/", "the scheme must be amqp:// or amqps://"},
      {"amqp://", "the host is missing"},
      {"amqp://h:0/", "the port must be a number from 1 to 65535"},
      {"amqp://h:99999/", "the port must be a number from 1 to 65535"},
      {"amqp://h:/", "the port must be a number from 1 to 65535"},
      {"amqp://[::1/", "in brackets"},
      {"amqp://[::1]x/", "unexpected text after the IPv6 host"},
      {"amqp://h/?heartbeat=5", "query parameters"},
  };
  for (const auto& [uri, why] : cases) {
    EXPECT_THAT(
        problems_of("\n[broker]\nuri = \"" + uri + "\"\n"),
        ElementsAre(Problem(3, 7, "broker.uri",
                            AllOf(HasSubstr("amqp://[user[:password]@]host"), HasSubstr(why)))))
        << uri;
  }
}

// The broker code parses the stored URIs with rabbitmq-c's amqp_parse_url: a URI it refuses
// must be a config error (exit 2, file:line:col), not a failure of `warren run` at start.
TEST(BrokerSection, UrisTheBrokerLibraryRefuses_AreRefusedSayingWhatToEncode) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"amqp://guest@h:5672/a/b", "the vhost holds '/': percent-encode it as %2F"},
      {"amqp://guest@h/a:b", "the vhost holds ':': percent-encode it as %3A"},
      {"amqp://us@er@h/", "the user holds '@': percent-encode it as %40"},
      {"amqp://guest@h/%zz", "the vhost holds a malformed or non-ASCII %-escape"},
      {"amqp://guest@h/caf%C3%A9", "the vhost holds a malformed or non-ASCII %-escape"},
      {"amqp://gu%zzest@h/", "the user holds a malformed or non-ASCII %-escape"},
  };
  for (const auto& [uri, why] : cases) {
    EXPECT_THAT(problems_of("\n[broker]\nuri = \"" + uri + "\"\n"),
                ElementsAre(Problem(3, 7, "broker.uri", HasSubstr(why))))
        << uri;
  }
}

TEST(BrokerSection, UrisWithEncodedVhostOrNoPath_AreAccepted) {
  EXPECT_THAT(
      test::parse("\n[broker]\nhosts = [\"amqp://guest@h/%2F\", \"amqp://h\"]\n").broker.uris,
      ElementsAre("amqp://guest@h/%2F", "amqp://h"));
}

TEST(BrokerSection, Ipv6HostUri_IsAccepted) {
  EXPECT_THAT(test::parse("\n[broker]\nuri = \"amqp://[::1]:5672/\"\n").broker.uris,
              ElementsAre("amqp://[::1]:5672/"));
}

TEST(BrokerSection, SubSecondOrFractionalHeartbeat_IsRefused) {
  for (const char* heartbeat : {"500ms", "1s500ms", "65536s"}) {
    EXPECT_THAT(
        problems_of(std::string("\n[broker]\nuri = \"amqp://h/\"\nheartbeat = \"") + heartbeat +
                    "\"\n"),
        ElementsAre(Problem(4, 13, "broker.heartbeat", HasSubstr("whole number of seconds"))))
        << heartbeat;
  }
}

TEST(BrokerSection, ZeroHeartbeat_DisablesIt) {
  EXPECT_EQ(test::parse("\n[broker]\nuri = \"amqp://h/\"\nheartbeat = \"0s\"\n").broker.heartbeat,
            Duration::zero());
}

TEST(BrokerSection, ZeroTimeout_IsRefused) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
uri = "amqp://h/"
connect_timeout = "0s"
)"),
      ElementsAre(Problem(4, 19, "broker.connect_timeout", "must be at least 1ms, got \"0s\"")));
}

TEST(BrokerSection, ReconnectMaxBelowInitial_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://h/"
reconnect_initial = "5s"
reconnect_max = "1s"
)"),
              ElementsAre(Problem(5, 17, "broker.reconnect_max",
                                  "must be at least reconnect_initial (5s), got \"1s\"")));
}

TEST(BrokerSection, CertFileWithoutKeyFile_IsRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqps://h/"
cert_file = "/etc/warren/client.pem"
)"),
              ElementsAre(Problem(4, 13, "broker.cert_file", HasSubstr("set key_file too"))));
  const TempFile key_file("-----BEGIN PRIVATE KEY-----\n");
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqps://h/"
key_file = ")" + key_file.str() +
                          R"("
)"),
              ElementsAre(Problem(4, 12, "broker.key_file", HasSubstr("set cert_file too"))));
}

TEST(BrokerSection, TlsFilesWithoutAmqpsUri_AreRefused) {
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://h/"
ca_file = "/etc/warren/ca.pem"
)"),
              ElementsAre(Problem(4, 11, "broker.ca_file", HasSubstr("only with amqps://"))));
}

TEST(BrokerPassword, EnvironmentVariable_WinsOverPasswordFile) {
  const TempFile password_file("from-file\n");
  const Config config = test::parse(R"(
[broker]
uri = "amqp://guest@h/"
password_file = ")" + password_file.str() +
                                        R"("
)",
                                    with_environment_password("from-env"));
  EXPECT_EQ(config.broker.password, "from-env");
  EXPECT_EQ(config.broker.password_file, password_file.path());
}

TEST(BrokerPassword, EnvironmentVariableSet_UnreadablePasswordFileIsNotRead) {
  const Config config = test::parse(R"(
[broker]
uri = "amqp://guest@h/"
password_file = "/nonexistent/warren/broker"
)",
                                    with_environment_password("from-env"));
  EXPECT_EQ(config.broker.password, "from-env");
}

TEST(BrokerPassword, EmptyEnvironmentVariable_FallsBackToPasswordFile) {
  const TempFile password_file("from-file\n");
  const Config config = test::parse(R"(
[broker]
uri = "amqp://guest@h/"
password_file = ")" + password_file.str() +
                                        R"("
)",
                                    with_environment_password(""));
  EXPECT_EQ(config.broker.password, "from-file");
}

TEST(BrokerPassword, PasswordFile_WinsOverUriPassword) {
  const TempFile password_file("from-file\n");
  const Config config = test::parse(R"(
[broker]
uri = "amqp://guest:from-uri@h/"
password_file = ")" + password_file.str() +
                                    R"("
)");
  EXPECT_EQ(config.broker.password, "from-file");
  EXPECT_TRUE(config.broker.password_in_uri);
}

TEST(BrokerPassword, UnreadablePasswordFile_IsRefusedNamingTheFile) {
  EXPECT_THAT(problems_of(R"(
[broker]
uri = "amqp://guest@h/"
password_file = "/nonexistent/warren/broker"
)"),
              ElementsAre(Problem(4, 17, "broker.password_file",
                                  "cannot read \"/nonexistent/warren/broker\": No such file or "
                                  "directory")));
}

TEST(BrokerPassword, UriPassword_IsTakenOutOfTheUriAndWarnedAboutWithoutShowingIt) {
  const Config config = test::parse(R"(
[broker]
hosts = ["amqp://guest:p%40ss-w0rd@a:5672/", "amqps://guest:p%40ss-w0rd@b/v"]
)");
  EXPECT_EQ(config.broker.password, "p@ss-w0rd");
  EXPECT_TRUE(config.broker.password_in_uri);
  EXPECT_THAT(config.broker.uris, ElementsAre("amqp://guest@a:5672/", "amqps://guest@b/v"));
  const std::vector<std::string> warnings = config_warnings(config);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], AllOf(HasSubstr("test.toml"), HasSubstr("password_file"),
                                 HasSubstr("WARREN_BROKER_PASSWORD"), Not(HasSubstr("p%40ss")),
                                 Not(HasSubstr("p@ss"))));
}

TEST(BrokerPassword, UrisWithDifferentPasswords_AreRefusedWithoutShowingThem) {
  EXPECT_THAT(
      problems_of(R"(
[broker]
hosts = ["amqp://u:first-secret@a/", "amqp://u:second-secret@b/"]
)"),
      ElementsAre(Problem(3, 38, "broker.hosts[1]",
                          AllOf(HasSubstr("different password"), Not(HasSubstr("secret"))))));
}

TEST(BrokerPassword, NeverAppearsInErrorMessages) {
  const char* document = R"(
[broker]
hosts = ["amqp://u:uri-secret@h:99999/", "ftp://u:uri-secret@h/", "amqp://u:bad%zz@h/"]
heartbeat = "1ms"
)";
  try {
    test::parse(document, with_environment_password("env-secret"));
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.problems(), SizeIs(4));
    const std::string text = error.what();
    EXPECT_THAT(text, Not(HasSubstr("uri-secret")));
    EXPECT_THAT(text, Not(HasSubstr("bad%zz")));
    EXPECT_THAT(text, Not(HasSubstr("env-secret")));
    EXPECT_THAT(text, HasSubstr("malformed %-escape"));
  }
}

TEST(BrokerPassword, NoPasswordAnywhere_LeavesItEmptyWithoutWarning) {
  const Config config = test::parse("\n[broker]\nuri = \"amqp://guest@h/\"\n");
  EXPECT_EQ(config.broker.password, "");
  EXPECT_FALSE(config.broker.password_in_uri);
  EXPECT_THAT(config_warnings(config), IsEmpty());
}

}  // namespace
}  // namespace warren::config
