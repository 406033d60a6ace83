// Collects every configuration problem found while walking the file, so the loader reports them
// all at once (sorted by position) instead of stopping at the first.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "config/config.h"
#include "config/config_error.h"

namespace warren::config {

// The keys each table accepts, by table path without array indexes ("queues.bindings").
using AcceptedKeys = std::map<std::string, std::set<std::string>>;

class ProblemList {
 public:
  explicit ProblemList(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  SourceLocation locate(const toml::source_region& region) const;

  void add(const toml::source_region& where, std::string key, std::string message);
  void add(const SourceLocation& where, std::string key, std::string message);
  // A problem with no single place in the file (line 0), e.g. a missing section.
  void add_unlocated(std::string key, std::string message);

  bool empty() const { return problems_.empty(); }
  // In file order: unlocated problems first, then by line and column.
  std::vector<ConfigProblem> sorted() const;

  // Every TableReader of the walk passes through here, so this is where the keys each table
  // accepts are collected when someone asked for them (LoadOptions::accepted_keys).
  void collect_accepted_keys(AcceptedKeys* into) { accepted_keys_ = into; }
  void accepted(std::string_view table_path, const std::set<std::string, std::less<>>& keys);

 private:
  std::string file_;
  std::vector<ConfigProblem> problems_;
  AcceptedKeys* accepted_keys_ = nullptr;
};

// "test.toml:3:1", to point from one problem at another place (e.g. a first declaration).
std::string to_string(const SourceLocation& where);

}  // namespace warren::config
