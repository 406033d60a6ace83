// Fuzz target: warren.toml text -> parse_config (toml++, every section's validation, ${VAR}
// expansion in worker settings). A file is either a Config or a ConfigError listing problems;
// any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "config/config_loader.h"

namespace {

// A fixed environment, so that ${VAR} expansion has something to find and the run is repeatable.
const char* fuzz_environment(const char* name) {
  if (std::strcmp(name, "WARREN_BROKER_PASSWORD") == 0)
    return "guest";
  if (std::strcmp(name, "HOME") == 0)
    return "/tmp";
  if (std::strcmp(name, "STATE_DIRECTORY") == 0)
    return "/var/lib/warren";
  if (std::strcmp(name, "EMPTY") == 0)
    return "";
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  warren::config::LoadOptions options;
  options.environment = fuzz_environment;
  try {
    const warren::config::Config config = warren::config::parse_config(text, "fuzz.toml", options);
    (void)warren::config::config_warnings(config);
  } catch (const warren::config::ConfigError& error) {
    // Every problem names a place in the file, or none (line 0).
    for (const auto& problem : error.problems())
      (void)problem.to_string();
  }
  return 0;
}
