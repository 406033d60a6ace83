// Configuration problems, each pointing at file:line:col. The loader collects all of them and
// throws them together, so a user fixes a file in one pass.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace warren::config {

struct ConfigProblem {
  std::string file;
  int line = 0;  // 0 when the problem has no single place (e.g. a missing section)
  int column = 0;
  std::string key;  // dotted path, e.g. "workers[1].prefetch"
  std::string message;

  // "conf/warren.toml:12:3: workers[1].prefetch: must be an integer from 1 to 65535, got 0"
  std::string to_string() const;
};

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<ConfigProblem> problems);
  const std::vector<ConfigProblem>& problems() const noexcept { return problems_; }

 private:
  std::vector<ConfigProblem> problems_;
};

}  // namespace warren::config
