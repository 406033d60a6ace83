// Helpers shared by the configuration tests. Documents are raw strings that begin with a
// newline, so the first TOML line is line 2:   R"(          <- line 1 (empty)
//                                              [host]     <- line 2
#pragma once

#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_error.h"
#include "config/config_loader.h"
#include "temp_dir.h"

namespace warren::config {

// So that gtest prints problems as "test.toml:3:1: key: message".
inline void PrintTo(const ConfigProblem& problem, std::ostream* out) {
  *out << problem.to_string();
}

namespace test {

inline const char* no_environment_variables(const char*) {
  return nullptr;
}

// Tests never see the real WARREN_BROKER_PASSWORD.
inline LoadOptions without_environment() {
  LoadOptions options;
  options.environment = &no_environment_variables;
  return options;
}

// Appends an in-memory [broker] when `text` has none, so that snippets about other sections
// parse on their own; the appended lines come last and shift no line numbers.
inline std::string with_broker(std::string_view text) {
  std::string document(text);
  if (document.find("[broker]") == std::string::npos) {
    document += "\n[broker]\ntransport = \"memory\"\n";
  }
  return document;
}

inline Config parse(std::string_view text, const LoadOptions& options = without_environment()) {
  return parse_config(with_broker(text), "test.toml", options);
}

// The problems reported for `text`; empty when it loads.
inline std::vector<ConfigProblem> problems_of(std::string_view text,
                                              const LoadOptions& options = without_environment()) {
  try {
    parse(text, options);
  } catch (const ConfigError& error) {
    return error.problems();
  }
  return {};
}

// The problems reported for `text` exactly as given (no [broker] appended).
inline std::vector<ConfigProblem> problems_of_document(
    std::string_view text, const LoadOptions& options = without_environment()) {
  try {
    parse_config(text, "test.toml", options);
  } catch (const ConfigError& error) {
    return error.problems();
  }
  return {};
}

// A problem in test.toml at line:column about `key`, whose message matches `message`.
inline ::testing::Matcher<ConfigProblem> Problem(int line, int column, std::string key,
                                                 ::testing::Matcher<std::string> message) {
  using ::testing::Field;
  return ::testing::AllOf(
      Field("file", &ConfigProblem::file, "test.toml"), Field("line", &ConfigProblem::line, line),
      Field("column", &ConfigProblem::column, column), Field("key", &ConfigProblem::key, key),
      Field("message", &ConfigProblem::message, message));
}

// The 1-based number of the `occurrence`-th line of `document` that reads exactly `line`, or 0:
// tests compute where a table starts instead of hard-coding a number that the next edit of the
// document would silently invalidate.
inline int line_of(std::string_view document, std::string_view line, int occurrence = 1) {
  int number = 1;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = document.find('\n', start);
    const std::string_view current = document.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (current == line && --occurrence == 0)
      return number;
    if (end == std::string_view::npos)
      return 0;
    start = end + 1;
    ++number;
  }
}

// A file holding `content`, alone in a fresh temporary directory (test_support::TempDir), both
// removed at scope exit. Mode 0600 whatever the umask: most hold secrets (password_file,
// dsn_file, key_file), which the loader refuses when others may read them.
class TempFile {
 public:
  explicit TempFile(std::string_view content) : path_(dir_.path() / "file") {
    std::ofstream(path_, std::ios::binary) << content;
    std::filesystem::permissions(
        path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  test_support::TempDir dir_;
  std::filesystem::path path_;
};

}  // namespace test
}  // namespace warren::config
