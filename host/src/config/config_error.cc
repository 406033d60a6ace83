// Rendering of configuration problems as "file:line:col: key: message" lines.
#include "config/config_error.h"

#include <utility>

namespace warren::config {
namespace {

std::string join_problems(const std::vector<ConfigProblem>& problems) {
  std::string text;
  for (const ConfigProblem& problem : problems) {
    if (!text.empty()) {
      text += '\n';
    }
    text += problem.to_string();
  }
  return text;
}

}  // namespace

std::string ConfigProblem::to_string() const {
  std::string text = file;
  // A problem with no single place (a missing section) names the file only.
  if (line > 0)
    text += ':' + std::to_string(line) + ':' + std::to_string(column);
  text += ": ";
  if (!key.empty()) {
    text += key + ": ";
  }
  text += message;
  return text;
}

ConfigError::ConfigError(std::vector<ConfigProblem> problems)
    : std::runtime_error(join_problems(problems)), problems_(std::move(problems)) {}

}  // namespace warren::config
