// Reads the keys of one TOML table into typed fields, reporting wrong types and bad values to a
// ProblemList at the offending node. Every key the loader asks for becomes an allowed key, so
// report_unknown_keys() (called last) can name the rest together with the allowed list.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "config/config.h"
#include "config/problem_list.h"

namespace warren::config {

// A name accepted in the file and the value it stands for.
template <typename Enum>
struct Choice {
  std::string_view name;
  Enum value;
};

class TableReader {
 public:
  // `path` is the dotted key of `table` ("workers[1].retry"); empty for the document root.
  TableReader(const toml::table& table, std::string path, ProblemList& problems);
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;
  const toml::source_region& source() const { return table_.source(); }
  ProblemList& problems() const { return problems_; }

  // The value under `key`, or nullptr when absent. Marks `key` as allowed.
  const toml::node* find(std::string_view key);
  // Reports `key` as missing (at this table) when absent; true when present.
  bool require(std::string_view key, std::string_view hint = {});

  // Typed reads: `out` is left untouched when the key is absent or its value is refused.
  // They return true when `out` was set.
  bool read_string(std::string_view key, std::string& out);
  bool read_non_empty_string(std::string_view key, std::string& out);
  bool read_path(std::string_view key, std::filesystem::path& out);
  bool read_bool(std::string_view key, bool& out);
  bool read_integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max);
  bool read_integer(std::string_view key, int& out, int min, int max);
  bool read_integer(std::string_view key, std::optional<std::int64_t>& out, std::int64_t min,
                    std::int64_t max);
  // A float; an integer is accepted too (jitter = 0).
  bool read_number(std::string_view key, double& out, double min, double max);
  bool read_duration(std::string_view key, Duration& out, Duration min = Duration::zero());
  bool read_duration(std::string_view key, std::optional<Duration>& out);
  // An integer (bytes) or a string such as "512MiB" (config/byte_size.h).
  bool read_byte_size(std::string_view key, std::uint64_t& out);
  bool read_one_of(std::string_view key, std::string& out,
                   std::initializer_list<std::string_view> allowed);
  template <typename Enum>
  bool read_enum(std::string_view key, Enum& out, std::initializer_list<Choice<Enum>> choices);
  // Sub-tables and arrays; nullptr when absent or of another type (reported).
  const toml::table* read_table(std::string_view key);
  const toml::array* read_array(std::string_view key, std::string_view hint = {});

  // A problem about `key`: at its value when present, else at this table.
  void report(std::string_view key, std::string message);
  // Reports every key of the table that no find()/read_*() asked for. Call after all reads.
  void report_unknown_keys();

 private:
  void report_not_one_of(std::string_view key, std::string_view given,
                         const std::vector<std::string_view>& allowed);
  template <typename Value>
  const Value* typed_value(std::string_view key, std::string_view expected);

  const toml::table& table_;
  std::string path_;
  ProblemList& problems_;
  std::set<std::string, std::less<>> known_keys_;
};

// `"text"` with quotes and backslashes escaped, for showing a user's value in a message.
std::string in_quotes(std::string_view text);
// "a string", "an integer", ... for "must be X, got Y" messages.
std::string_view describe_type(toml::node_type type);
// `parent.key`, `key` at the root; keys that are not bare TOML keys are quoted (`arguments."a.b"`).
std::string join_key(std::string_view parent, std::string_view key);
// The shortest text that reads back as `value` ("0.2", "1e+100").
std::string format_float(double value);
// `parent[index]`.
std::string join_index(std::string_view parent, std::size_t index);

template <typename Enum>
bool TableReader::read_enum(std::string_view key, Enum& out,
                            std::initializer_list<Choice<Enum>> choices) {
  std::string text;
  if (!read_string(key, text)) {
    return false;
  }
  std::vector<std::string_view> names;
  for (const Choice<Enum>& choice : choices) {
    if (choice.name == text) {
      out = choice.value;
      return true;
    }
    names.push_back(choice.name);
  }
  report_not_one_of(key, text, names);
  return false;
}

// Reads the sub-table under `key` with `read(TableReader&)`, then reports its unknown keys.
// Returns false when the key is absent or is not a table (reported).
template <typename ReadTable>
bool read_sub_table(TableReader& parent, std::string_view key, ReadTable&& read) {
  const toml::table* table = parent.read_table(key);
  if (table == nullptr) {
    return false;
  }
  TableReader sub(*table, parent.path_of(key), parent.problems());
  read(sub);
  sub.report_unknown_keys();
  return true;
}

// Reads each table of the array of tables under `key` with `read_entry(TableReader&)`, then
// reports its unknown keys. Elements that are not tables are reported; `hint` says how to write
// the array when the key holds something else.
template <typename ReadEntry>
void read_array_of_tables(TableReader& parent, std::string_view key, std::string_view hint,
                          ReadEntry&& read_entry) {
  const toml::array* array = parent.read_array(key, hint);
  if (array == nullptr) {
    return;
  }
  for (std::size_t index = 0; index < array->size(); ++index) {
    const std::string path = join_index(parent.path_of(key), index);
    const toml::node& element = (*array)[index];
    if (const toml::table* table = element.as_table()) {
      TableReader entry(*table, path, parent.problems());
      read_entry(entry);
      entry.report_unknown_keys();
    } else {
      parent.problems().add(element.source(), path,
                            "must be a table, got " + std::string(describe_type(element.type())));
    }
  }
}

}  // namespace warren::config
