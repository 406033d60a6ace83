// ${NAME} and ${NAME:-default} in worker settings.
#include "config/env_expansion.h"

#include <cstdlib>

#include "config_test_support.h"

namespace warren::config {
namespace {

using test::Problem;
using test::problems_of;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* fake_env(const char* name) {
  return std::string_view(name) == "STATE" ? "/srv/state" : nullptr;
}

std::string expanded(std::string_view text) {
  auto result = expand_environment(text, &fake_env);
  return std::holds_alternative<std::string>(result)
             ? std::get<std::string>(result)
             : "ERROR: " + std::get<ExpansionError>(result).message;
}

TEST(EnvExpansion, SetVariableDefaultAndLiteralDollar) {
  EXPECT_EQ(expanded("${STATE}/emails"), "/srv/state/emails");
  EXPECT_EQ(expanded("${MISSING:-/tmp/x}/emails"), "/tmp/x/emails");
  EXPECT_EQ(expanded("${STATE:-/tmp/x}"), "/srv/state");
  EXPECT_EQ(expanded("cost $$5 and $HOME"), "cost $5 and $HOME");
}

TEST(EnvExpansion, UnsetVariableWithoutDefaultOrUnterminated_IsAnError) {
  EXPECT_THAT(expanded("${MISSING}"), HasSubstr("MISSING is not set"));
  EXPECT_THAT(expanded("${STATE"), HasSubstr("unterminated"));
}

TEST(EnvExpansion, WorkerSettingWithUnsetVariable_IsAConfigProblemAtTheValue) {
  ::unsetenv("WARREN_TEST_SURELY_UNSET");
  EXPECT_THAT(problems_of(R"(
[[workers]]
name = "w"
plugin = "p"
queue = "q"
[workers.settings]
out_dir = "${WARREN_TEST_SURELY_UNSET}/emails"
)"),
              ElementsAre(Problem(7, 11, "workers[0].settings.out_dir",
                                  HasSubstr("WARREN_TEST_SURELY_UNSET is not set"))));
}

TEST(EnvExpansion, WorkerSettingWithSetVariable_IsExpanded) {
  ::setenv("WARREN_TEST_STATE_DIR", "/var/tmp/w", 1);
  const Config config = test::parse(R"(
[[workers]]
name = "w"
plugin = "p"
queue = "q"
[workers.settings]
out_dir = "${WARREN_TEST_STATE_DIR}/emails"
)");
  EXPECT_EQ(config.workers.at(0).settings.at("out_dir"), "/var/tmp/w/emails");
}

}  // namespace
}  // namespace warren::config
