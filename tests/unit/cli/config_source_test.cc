// load_config_for_cli: the file, then the environment's overrides. WARREN_BROKER_URI is held to
// the same rules as [broker] uri: checked, and never kept (or shown) with its password.
#include "cli/config_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "observability/http_server.h"
#include "temp_dir.h"

namespace warren::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Sets (or unsets, with std::nullopt) an environment variable for one test.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedVariable() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class ConfigForCli : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.file = dir_ / "warren.toml";
    std::ofstream(options_.file) << "[broker]\nuri = \"amqp://guest@127.0.0.1:5672/\"\n";
  }

  test_support::TempDir dir_;
  ConfigOptions options_;
  ScopedVariable no_password_variable_{"WARREN_BROKER_PASSWORD", std::nullopt};
};

TEST_F(ConfigForCli, BrokerUriFromTheEnvironment_IsKeptWithoutItsPasswordWhichIsUsed) {
  ScopedVariable uri("WARREN_BROKER_URI", "amqp://warren:s3cret@broker.example:5673/prod");
  const auto config = load_config_for_cli(options_);
  ASSERT_TRUE(config.has_value());
  EXPECT_THAT(config->broker.uris, ElementsAre("amqp://warren@broker.example:5673/prod"));
  EXPECT_EQ(config->broker.password, "s3cret");
}

TEST_F(ConfigForCli, PasswordVariable_WinsOverThePasswordInTheEnvironmentsUri) {
  ScopedVariable uri("WARREN_BROKER_URI", "amqp://warren:s3cret@broker.example/");
  ScopedVariable password("WARREN_BROKER_PASSWORD", "from-variable");
  const auto config = load_config_for_cli(options_);
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(config->broker.password, "from-variable");
  EXPECT_THAT(config->broker.uris, ElementsAre("amqp://warren@broker.example/"));
}

TEST_F(ConfigForCli,
       MalformedBrokerUriFromTheEnvironment_IsRefusedNamingTheVariableNotThePassword) {
  ScopedVariable uri("WARREN_BROKER_URI", "amqp://warren:s3cret@broker.example:99999/");
  ::testing::internal::CaptureStderr();
  const auto config = load_config_for_cli(options_);
  const std::string errors = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(config.has_value());
  EXPECT_THAT(errors,
              AllOf(HasSubstr("WARREN_BROKER_URI"), HasSubstr("port"), Not(HasSubstr("s3cret"))));
}

// `warren check` and `warren run` load through here: an IPv6 [metrics] listen that the linked
// civetweb cannot open is refused at load with its file:line:col, not when the endpoint starts.
TEST_F(ConfigForCli, Ipv6MetricsListen_IsRefusedAtLoadExactlyWhenTheEndpointCannotOpenIt) {
  std::ofstream(options_.file) << "[broker]\nuri = \"amqp://guest@127.0.0.1:5672/\"\n"
                               << "[metrics]\nlisten = \"[::1]:9464\"\n";
  ::testing::internal::CaptureStderr();
  const auto config = load_config_for_cli(options_);
  const std::string errors = ::testing::internal::GetCapturedStderr();
  if (observability::MetricsServer::supports_ipv6()) {
    EXPECT_TRUE(config.has_value()) << errors;
  } else {
    EXPECT_FALSE(config.has_value());
    EXPECT_THAT(errors, AllOf(HasSubstr(options_.file + ":4:10: metrics.listen"),
                              HasSubstr("no IPv6 support")));
  }
}

}  // namespace
}  // namespace warren::cli
