// What the fuzz targets share: require(), which makes a broken expectation a finding (abort:
// libFuzzer keeps the input), and a fixed environment for ${VAR} expansion, so that a run
// repeats whatever the machine's environment holds.
#pragma once

#include <cstdlib>
#include <cstring>

namespace warren::fuzz {

inline void require(bool condition) {
  if (!condition)
    std::abort();
}

// SET=value, DOLLAR=${SET} (a value is not expanded again), EMPTY="", WARREN_BROKER_PASSWORD,
// HOME and STATE_DIRECTORY; nothing else is set.
inline const char* fixed_environment(const char* name) {
  static constexpr const char* kVariables[][2] = {
      {"SET", "value"}, {"DOLLAR", "${SET}"},
      {"EMPTY", ""},    {"WARREN_BROKER_PASSWORD", "guest"},
      {"HOME", "/tmp"}, {"STATE_DIRECTORY", "/var/lib/warren"}};
  for (const auto& [variable, value] : kVariables) {
    if (std::strcmp(name, variable) == 0)
      return value;
  }
  return nullptr;
}

}  // namespace warren::fuzz
