// Issue 19 item 18: docs/configuration.md is the reference of warren.toml: one table per section,
// each introduced by a `<!-- config-keys: SECTION -->` marker and listing its keys as "| `key` |"
// rows. This holds it against the loader itself: every key any table of the loader accepts (in
// any branch: each transport, each outbox store) must be listed under its section, and every
// listed key must be one the loader accepts. A key added to the loader without a line in the
// reference fails here.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config_test_support.h"

namespace warren::config {
namespace {

const std::string kReference = std::string(WARREN_SOURCE_DIR) + "/docs/configuration.md";

// SECTION -> keys, from the reference's marked tables.
AcceptedKeys documented_keys() {
  std::ifstream in(kReference);
  EXPECT_TRUE(in.good()) << "cannot read " << kReference;
  AcceptedKeys keys;
  const std::string marker = "<!-- config-keys: ";
  std::string section;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(marker)) {
      section = line.substr(marker.size(), line.find(" -->") - marker.size());
      if (section == "(top level)")
        section.clear();
      keys[section];
      in_table = true;
    } else if (in_table && line.starts_with("| `")) {
      keys[section].insert(line.substr(3, line.find('`', 3) - 3));
    } else if (in_table && !line.starts_with("|")) {
      in_table = line.empty() && keys[section].empty();  // blank lines before the table
    }
  }
  return keys;
}

// Documents that between them reach every table and every branch of the loader. They need not
// be valid: the accepted keys are collected before the problems are thrown.
const char* const kProbes[] = {
    R"(
[host]
[log]
[metrics]
[broker]
transport = "rabbitmq"
[[exchanges]]
name = "e"
type = "topic"
[[queues]]
name = "q"
bindings = [ { exchange = "e" } ]
[[workers]]
name = "w"
plugin = "p"
queue = "q"
retry = { max_attempts = 2 }
idempotency = { dsn = "x" }
[workers.settings]
[[outbox]]
name = "o"
store = "postgres"
backoff = { initial = "1s" }
)",
    R"(
[broker]
transport = "sqlite"
[broker.sqlite]
path = "/tmp/q.db"
[[exchanges]]
name = "e"
type = "topic"
[[queues]]
name = "q"
[[workers]]
name = "w"
plugin = "p"
queue = "q"
[[outbox]]
name = "o"
store = "sqlite"
)",
    R"(
[broker]
transport = "postgres"
[broker.postgres]
dsn = "x"
dsn_file = "/tmp/dsn"
)",
    R"(
[broker]
transport = "memory"
[[exchanges]]
name = "e"
type = "topic"
[[queues]]
name = "q"
[[workers]]
name = "w"
plugin = "p"
queue = "q"
)",
};

AcceptedKeys accepted_keys() {
  AcceptedKeys keys;
  LoadOptions options = test::without_environment();
  options.accepted_keys = &keys;
  for (const char* probe : kProbes) {
    try {
      parse_config(probe, "probe.toml", options);
    } catch (const ConfigError&) {
      // Only the keys matter here.
    }
  }
  return keys;
}

std::string describe(const std::map<std::string, std::set<std::string>>& keys) {
  std::ostringstream out;
  for (const auto& [section, names] : keys) {
    for (const auto& name : names)
      out << "  " << (section.empty() ? "(top level)" : section) << ": " << name << "\n";
  }
  return out.str();
}

// The keys of `keys` that `other` does not have under the same section.
AcceptedKeys keys_not_in(const AcceptedKeys& keys, const AcceptedKeys& other) {
  AcceptedKeys absent;
  for (const auto& [section, names] : keys) {
    const auto found = other.find(section);
    for (const auto& name : names) {
      if (found == other.end() || !found->second.contains(name))
        absent[section].insert(name);
    }
  }
  return absent;
}

TEST(ConfigurationReference, EveryKeyTheLoaderAccepts_IsListedUnderItsSection) {
  const AcceptedKeys missing = keys_not_in(accepted_keys(), documented_keys());
  EXPECT_TRUE(missing.empty()) << "accepted by the loader, missing from " << kReference << ":\n"
                               << describe(missing);
}

TEST(ConfigurationReference, EveryListedKey_IsOneTheLoaderAccepts) {
  const AcceptedKeys unknown = keys_not_in(documented_keys(), accepted_keys());
  EXPECT_TRUE(unknown.empty()) << "listed in " << kReference << ", refused by the loader:\n"
                               << describe(unknown);
}

TEST(ConfigurationReference, TheProbesReachEveryTableOfTheLoader) {
  const AcceptedKeys accepted = accepted_keys();
  for (const char* table : {"", "host", "log", "metrics", "broker", "broker.sqlite",
                            "broker.postgres", "exchanges", "queues", "queues.bindings", "workers",
                            "workers.retry", "workers.idempotency", "outbox", "outbox.backoff"}) {
    EXPECT_TRUE(accepted.contains(table)) << "no probe reaches [" << table << "]";
  }
}

}  // namespace
}  // namespace warren::config
