// Prometheus's own linter accepts what /metrics serves: every metric family populated, checked by
// `promtool check metrics` (Debian package "prometheus"). Skipped when promtool is missing, unless
// WARREN_REQUIRE_SERVICES=1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "observability/metrics.h"
#include "populated_metrics.h"
#include "required_services.h"
#include "temp_dir.h"

namespace warren::observability {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr)
    return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(Exposition, EveryFamilyPopulated_PassesPromtoolCheckMetrics) {
  if (::access(kPromtool, X_OK) != 0)
    WARREN_SKIP_OR_FAIL(kPromtool << " is missing (apt-get install prometheus)");
  Metrics metrics;
  testing::populate_every_family(metrics);
  const std::string exposition = metrics.serialize();
  const test_support::TempDir directory;
  const std::string file = directory / "exposition.txt";
  std::ofstream(file) << exposition;

  const auto result = run(std::string(kPromtool) + " check metrics < " + file);

  EXPECT_EQ(result.exit_code, 0) << result.output << "\n--- exposition:\n" << exposition;
}

}  // namespace
}  // namespace warren::observability
