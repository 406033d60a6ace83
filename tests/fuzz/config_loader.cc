// Fuzz target: warren.toml text -> parse_config (toml++, every section's validation, ${VAR}
// expansion in worker settings). A file is either a Config or a ConfigError listing problems;
// any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "config/config_loader.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  warren::config::LoadOptions options;
  options.environment = warren::fuzz::fixed_environment;
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
