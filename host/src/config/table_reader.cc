// TableReader: typed, validated reads of one TOML table, with problems reported at the node.
#include "config/table_reader.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "config/byte_size.h"
#include "config/duration.h"

namespace warren::config {
namespace {

bool is_bare_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::string integer_range(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int64_t>::max()) {
    return "an integer of at least " + std::to_string(min);
  }
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

// Levenshtein distance, to suggest the allowed key a misspelt one was meant to be.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string_view describe_type(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string join_key(std::string_view parent, std::string_view key) {
  std::string part = is_bare_key(key) ? std::string(key) : in_quotes(key);
  return parent.empty() ? part : std::string(parent) + "." + part;
}

std::string join_index(std::string_view parent, std::size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string format_float(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

TableReader::TableReader(const toml::table& table, std::string path, ProblemList& problems)
    : table_(table), path_(std::move(path)), problems_(problems) {}

std::string TableReader::path_of(std::string_view key) const {
  return join_key(path_, key);
}

const toml::node* TableReader::find(std::string_view key) {
  known_keys_.emplace(key);
  return table_.get(key);
}

bool TableReader::require(std::string_view key, std::string_view hint) {
  if (find(key) != nullptr) {
    return true;
  }
  std::string message = "missing required key";
  if (!hint.empty()) {
    message += "; ";
    message += hint;
  }
  problems_.add(table_.source(), path_of(key), std::move(message));
  return false;
}

template <typename Value>
const Value* TableReader::typed_value(std::string_view key, std::string_view expected) {
  const toml::node* node = find(key);
  if (node == nullptr) {
    return nullptr;
  }
  if (const auto* value = node->as<Value>()) {
    return &value->get();
  }
  report(key,
         "must be " + std::string(expected) + ", got " + std::string(describe_type(node->type())));
  return nullptr;
}

bool TableReader::read_string(std::string_view key, std::string& out) {
  const std::string* value = typed_value<std::string>(key, "a string");
  if (value == nullptr) {
    return false;
  }
  out = *value;
  return true;
}

bool TableReader::read_non_empty_string(std::string_view key, std::string& out) {
  std::string value;
  if (!read_string(key, value)) {
    return false;
  }
  if (value.empty()) {
    report(key, "must not be empty");
    return false;
  }
  out = std::move(value);
  return true;
}

bool TableReader::read_path(std::string_view key, std::filesystem::path& out) {
  std::string value;
  if (!read_non_empty_string(key, value)) {
    return false;
  }
  out = value;
  return true;
}

bool TableReader::read_bool(std::string_view key, bool& out) {
  const bool* value = typed_value<bool>(key, "a boolean (true or false)");
  if (value == nullptr) {
    return false;
  }
  out = *value;
  return true;
}

bool TableReader::read_integer(std::string_view key, std::int64_t& out, std::int64_t min,
                               std::int64_t max) {
  const std::string range = integer_range(min, max);
  const std::int64_t* value = typed_value<std::int64_t>(key, range);
  if (value == nullptr) {
    return false;
  }
  if (*value < min || *value > max) {
    report(key, "must be " + range + ", got " + std::to_string(*value));
    return false;
  }
  out = *value;
  return true;
}

bool TableReader::read_integer(std::string_view key, int& out, int min, int max) {
  std::int64_t value = 0;
  if (!read_integer(key, value, min, max)) {
    return false;
  }
  out = static_cast<int>(value);
  return true;
}

bool TableReader::read_integer(std::string_view key, std::optional<std::int64_t>& out,
                               std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  if (!read_integer(key, value, min, max)) {
    return false;
  }
  out = value;
  return true;
}

bool TableReader::read_number(std::string_view key, double& out, double min, double max) {
  const std::string range = "a number from " + format_float(min) + " to " + format_float(max);
  const toml::node* node = find(key);
  if (node == nullptr) {
    return false;
  }
  double value = 0;
  if (const auto* floating = node->as_floating_point()) {
    value = floating->get();
  } else if (const auto* integer = node->as_integer()) {
    value = static_cast<double>(integer->get());
  } else {
    report(key, "must be " + range + ", got " + std::string(describe_type(node->type())));
    return false;
  }
  if (!(value >= min && value <= max)) {  // also refuses nan
    report(key, "must be " + range + ", got " + format_float(value));
    return false;
  }
  out = value;
  return true;
}

bool TableReader::read_duration(std::string_view key, Duration& out, Duration min) {
  const std::string expected = std::string(kDurationSyntaxHint);
  const std::string* text = typed_value<std::string>(key, expected);
  if (text == nullptr) {
    return false;
  }
  const std::optional<Duration> value = parse_duration(*text);
  if (!value) {
    report(key, "must be " + expected + ", got " + in_quotes(*text));
    return false;
  }
  if (*value < min) {
    report(key, "must be at least " + format_duration(min) + ", got " + in_quotes(*text));
    return false;
  }
  out = *value;
  return true;
}

bool TableReader::read_duration(std::string_view key, std::optional<Duration>& out) {
  Duration value{};
  if (!read_duration(key, value)) {
    return false;
  }
  out = value;
  return true;
}

bool TableReader::read_byte_size(std::string_view key, std::uint64_t& out) {
  const toml::node* node = find(key);
  if (node == nullptr) {
    return false;
  }
  const std::string expected(kByteSizeSyntaxHint);
  if (const auto* integer = node->as_integer()) {
    if (integer->get() < 0) {
      report(key, "must be " + expected + ", got " + std::to_string(integer->get()));
      return false;
    }
    out = static_cast<std::uint64_t>(integer->get());
    return true;
  }
  const auto* text = node->as_string();
  if (text == nullptr) {
    report(key, "must be " + expected + ", got " + std::string(describe_type(node->type())));
    return false;
  }
  const ParsedByteSize parsed = parse_byte_size(text->get());
  switch (parsed.problem) {
    case ParsedByteSize::Problem::none:
      out = parsed.bytes;
      return true;
    case ParsedByteSize::Problem::too_large:
      report(key, "is too large: a byte size must fit in 64 bits (at most " +
                      format_byte_size(std::numeric_limits<std::uint64_t>::max()) + "), got " +
                      in_quotes(text->get()));
      return false;
    case ParsedByteSize::Problem::malformed:
      break;
  }
  report(key, "must be " + expected + ", got " + in_quotes(text->get()));
  return false;
}

bool TableReader::read_one_of(std::string_view key, std::string& out,
                              std::initializer_list<std::string_view> allowed) {
  std::string text;
  if (!read_string(key, text)) {
    return false;
  }
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
    report_not_one_of(key, text, std::vector<std::string_view>(allowed));
    return false;
  }
  out = std::move(text);
  return true;
}

void TableReader::report_not_one_of(std::string_view key, std::string_view given,
                                    const std::vector<std::string_view>& allowed) {
  std::string list;
  for (std::string_view name : allowed) {
    list += list.empty() ? "" : ", ";
    list += name;
  }
  report(key, "must be one of " + list + "; got " + in_quotes(given));
}

const toml::table* TableReader::read_table(std::string_view key) {
  const toml::node* node = find(key);
  if (node == nullptr) {
    return nullptr;
  }
  if (const toml::table* table = node->as_table()) {
    return table;
  }
  report(key, "must be a table, got " + std::string(describe_type(node->type())));
  return nullptr;
}

const toml::array* TableReader::read_array(std::string_view key, std::string_view hint) {
  const toml::node* node = find(key);
  if (node == nullptr) {
    return nullptr;
  }
  if (const toml::array* array = node->as_array()) {
    return array;
  }
  std::string message = "must be an array, got " + std::string(describe_type(node->type()));
  if (!hint.empty()) {
    message += "; ";
    message += hint;
  }
  report(key, std::move(message));
  return nullptr;
}

void TableReader::report(std::string_view key, std::string message) {
  const toml::node* node = table_.get(key);
  problems_.add(node != nullptr ? node->source() : table_.source(), path_of(key),
                std::move(message));
}

void TableReader::report_unknown_keys() {
  problems_.accepted(path_, known_keys_);
  std::string allowed;
  for (const std::string& known : known_keys_) {
    allowed += allowed.empty() ? "" : ", ";
    allowed += known;
  }
  for (auto&& [key, value] : table_) {
    if (known_keys_.contains(key.str())) {
      continue;
    }
    std::string message = "unknown key";
    const std::string* closest = nullptr;
    std::size_t closest_distance = 3;  // suggest only near misses
    for (const std::string& known : known_keys_) {
      const std::size_t distance = edit_distance(key.str(), known);
      if (distance < closest_distance) {
        closest = &known;
        closest_distance = distance;
      }
    }
    if (closest != nullptr) {
      message += " (did you mean " + in_quotes(*closest) + "?)";
    }
    message += allowed.empty() ? "; this table takes no keys" : "; allowed keys: " + allowed;
    problems_.add(key.source(), path_of(key.str()), std::move(message));
  }
}

}  // namespace warren::config
