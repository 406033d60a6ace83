// Metric names are an interface: every warren_* name the alert rules
// (packaging/prometheus/warren-alerts.yml) and the Grafana dashboard
// (packaging/grafana/warren.json) query must be one that /metrics serves. Renaming a metric without
// them fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "observability/metrics.h"
#include "populated_metrics.h"

namespace warren::observability {
namespace {

std::string read_source_file(const std::string& relative_path) {
  const std::string path = std::string(WARREN_SOURCE_DIR) + "/" + relative_path;
  std::ifstream file(path);
  if (!file)
    throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::set<std::string> metric_names_in(const std::string& text) {
  std::set<std::string> names;
  const std::regex name(R"(\bwarren_[a-z0-9_]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it) {
    names.insert(it->str());
  }
  return names;
}

// Family names (# TYPE lines) and series names (with _bucket, _sum, _count for histograms).
std::set<std::string> served_names() {
  Metrics metrics;
  testing::populate_every_family(metrics);
  std::istringstream exposition(metrics.serialize());
  std::set<std::string> names;
  for (std::string line; std::getline(exposition, line);) {
    if (line.starts_with("# TYPE ")) {
      names.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (!line.empty() && line[0] != '#') {
      names.insert(line.substr(0, line.find_first_of("{ ")));
    }
  }
  return names;
}

void expect_every_name_served(const std::string& relative_path) {
  const auto served = served_names();
  const auto used = metric_names_in(read_source_file(relative_path));
  ASSERT_FALSE(used.empty()) << relative_path << " names no metric";
  for (const auto& name : used)
    EXPECT_TRUE(served.contains(name)) << relative_path << " uses " << name << ", not served";
}

TEST(PackagingContract, AlertRules_QueryOnlyMetricsThatAreServed) {
  expect_every_name_served("packaging/prometheus/warren-alerts.yml");
}

TEST(PackagingContract, GrafanaDashboard_QueriesOnlyMetricsThatAreServed) {
  expect_every_name_served("packaging/grafana/warren.json");
}

}  // namespace
}  // namespace warren::observability
