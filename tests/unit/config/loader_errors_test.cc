// Behaviour shared by every section: TOML syntax errors, unknown keys, several problems reported
// at once in file order, the "file:line:col: key: message" form, and reading from a file.
#include <filesystem>
#include <fstream>

#include "config_test_support.h"
#include "temp_dir.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using test::TempFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Loader_TomlSyntaxError, IsReportedWithLineAndColumn) {
  EXPECT_THAT(problems_of(R"(
[host]
name =
)"),
              ElementsAre(Problem(3, 7, "",
                                  AllOf(HasSubstr("invalid TOML"), HasSubstr("expected value")))));
}

TEST(Loader_TomlSyntaxError, DuplicateKeyIsReportedAtTheRedefinedValue) {
  EXPECT_THAT(problems_of(R"(
[host]
name = "a"
name = "b"
)"),
              ElementsAre(Problem(4, 8, "",
                                  AllOf(HasSubstr("invalid TOML"), HasSubstr("cannot redefine")))));
}

TEST(Loader_UnknownKey, AtTheRoot_IsRefusedSuggestingTheNearestSection) {
  EXPECT_THAT(problems_of(R"(
[hosts]
name = "w"
)"),
              ElementsAre(Problem(2, 2, "hosts",
                                  "unknown key (did you mean \"host\"?); allowed keys: broker, "
                                  "exchanges, host, log, metrics, outbox, queues, workers")));
}

TEST(Loader_UnknownKey, InASection_IsRefusedAtTheKeyListingTheAllowedKeys) {
  EXPECT_THAT(problems_of(R"(
[host]
name = "w"
shutdown = "10s"
)"),
              ElementsAre(Problem(4, 1, "host.shutdown",
                                  "unknown key; allowed keys: name, pid_file, plugin_dir, "
                                  "shutdown_timeout, state_dir")));
}

TEST(Loader_UnknownKey, FarFromAnyAllowedKey_GetsNoSuggestion) {
  EXPECT_THAT(problems_of(R"(
[log]
colour = true
)"),
              ElementsAre(Problem(3, 1, "log.colour", "unknown key; allowed keys: format, level")));
}

TEST(Loader_SeveralProblems, AreAllReportedInFileOrderInOneError) {
  const std::string document = test::with_broker(R"(
[[workers]]
name = "w"
plugin = "Bad"
queue = "q"
prefetch = 0

[host]
plugin_dir = "relative"
colour = "blue"

[[queues]]
name = "q"
)");
  try {
    parse_config(document, "test.toml", test::without_environment());
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.problems(),
                ElementsAre(Problem(4, 10, "workers[0].plugin", HasSubstr("lowercase")),
                            Problem(6, 12, "workers[0].prefetch", HasSubstr("from 1 to 65535")),
                            Problem(9, 14, "host.plugin_dir", HasSubstr("absolute")),
                            Problem(10, 1, "host.colour", HasSubstr("unknown key")),
                            Problem(12, 1, "queues[0].dead_letter_exchange",
                                    HasSubstr("allow_message_loss"))));
    std::string expected_what;
    for (const ConfigProblem& problem : error.problems()) {
      expected_what += (expected_what.empty() ? "" : "\n") + problem.to_string();
    }
    EXPECT_EQ(error.what(), expected_what);
  }
}

TEST(ConfigProblem, ToString_IsFileLineColumnKeyMessage) {
  EXPECT_EQ((ConfigProblem{"conf/warren.toml", 12, 3, "workers[1].prefetch",
                           "must be an integer from 1 to 65535, got 0"})
                .to_string(),
            "conf/warren.toml:12:3: workers[1].prefetch: must be an integer from 1 to 65535, "
            "got 0");
  EXPECT_EQ((ConfigProblem{"w.toml", 0, 0, "", "cannot read"}).to_string(), "w.toml: cannot read");
}

TEST(LoadConfig, MissingFile_IsRefusedAtLineZeroNamingThePathAndTheOsError) {
  const std::string path = "/nonexistent/warren/warren.toml";
  try {
    load_config(path, test::without_environment());
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    ASSERT_EQ(error.problems().size(), 1u);
    const ConfigProblem& problem = error.problems()[0];
    EXPECT_EQ(problem.file, path);
    EXPECT_EQ(problem.line, 0);
    EXPECT_THAT(problem.message,
                AllOf(HasSubstr("\"" + path + "\""), HasSubstr("No such file or directory")));
    EXPECT_THAT(std::string(error.what()), StartsWith(path + ": "));
  }
}

TEST(LoadConfig, Directory_IsRefusedWithTheOsError) {
  const std::string directory = ::testing::TempDir();
  try {
    load_config(directory, test::without_environment());
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    ASSERT_EQ(error.problems().size(), 1u);
    EXPECT_THAT(error.problems()[0].message, HasSubstr("Is a directory"));
  }
}

TEST(LoadConfig, File_IsParsedWithProblemsNamingItAndRelativeSecretsBesideIt) {
  const test_support::TempDir temp;
  const std::filesystem::path& directory = temp.path();
  std::ofstream(directory / "broker.password") << "beside-the-config\n";
  std::filesystem::permissions(
      directory / "broker.password",  // a secret: the owner's only
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::ofstream(directory / "warren.toml") << "[broker]\nuri = \"amqp://guest@h/\"\n"
                                              "password_file = \"broker.password\"\n";
  std::ofstream(directory / "bad.toml")
      << "[log]\nlevel = \"loud\"\n[broker]\ntransport = \"memory\"\n";

  const Config config = load_config(directory / "warren.toml", test::without_environment());
  EXPECT_EQ(config.file, directory / "warren.toml");
  EXPECT_EQ(config.broker.password_file, directory / "broker.password");
  EXPECT_EQ(config.broker.password, "beside-the-config");

  try {
    load_config(directory / "bad.toml", test::without_environment());
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(std::string(error.what()),
                StartsWith((directory / "bad.toml").string() + ":2:9: log.level: "));
  }
}

}  // namespace
}  // namespace warren::config
