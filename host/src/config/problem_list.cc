// ProblemList: accumulation and ordering of configuration problems.
#include "config/problem_list.h"

#include <algorithm>

namespace warren::config {

SourceLocation ProblemList::locate(const toml::source_region& region) const {
  return SourceLocation{file_, static_cast<int>(region.begin.line),
                        static_cast<int>(region.begin.column)};
}

void ProblemList::add(const toml::source_region& where, std::string key, std::string message) {
  add(locate(where), std::move(key), std::move(message));
}

void ProblemList::add(const SourceLocation& where, std::string key, std::string message) {
  problems_.push_back(
      ConfigProblem{file_, where.line, where.column, std::move(key), std::move(message)});
}

void ProblemList::add_unlocated(std::string key, std::string message) {
  problems_.push_back(ConfigProblem{file_, 0, 0, std::move(key), std::move(message)});
}

std::vector<ConfigProblem> ProblemList::sorted() const {
  std::vector<ConfigProblem> ordered = problems_;
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const ConfigProblem& a, const ConfigProblem& b) {
                     return a.line != b.line ? a.line < b.line : a.column < b.column;
                   });
  return ordered;
}

std::string to_string(const SourceLocation& where) {
  return where.file + ':' + std::to_string(where.line) + ':' + std::to_string(where.column);
}

void ProblemList::accepted(std::string_view table_path,
                           const std::set<std::string, std::less<>>& keys) {
  if (accepted_keys_ == nullptr)
    return;
  std::string table;  // "workers[0].retry" -> "workers.retry"
  for (std::size_t i = 0; i < table_path.size(); ++i) {
    if (table_path[i] == '[') {
      i = table_path.find(']', i);
      if (i == std::string_view::npos)
        break;
      continue;
    }
    table.push_back(table_path[i]);
  }
  (*accepted_keys_)[table].insert(keys.begin(), keys.end());
}

}  // namespace warren::config
