// Reading the free-form scalar tables of warren.toml (arguments, settings).
#include "config/scalar_tables.h"

#include <cstdlib>
#include <optional>

#include "config/env_expansion.h"

namespace warren::config {
namespace {

std::optional<ArgumentValue> scalar_of(const toml::node& node) {
  if (const auto* text = node.as_string()) {
    return ArgumentValue(text->get());
  }
  if (const auto* integer = node.as_integer()) {
    return ArgumentValue(integer->get());
  }
  if (const auto* floating = node.as_floating_point()) {
    return ArgumentValue(floating->get());
  }
  if (const auto* boolean = node.as_boolean()) {
    return ArgumentValue(boolean->get());
  }
  return std::nullopt;
}

std::string render(const ArgumentValue& value) {
  struct Renderer {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_float(d); }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(Renderer{}, value);
}

// Calls `store(name, value)` for each scalar of the table under `key`; reports the others.
template <typename Store>
void read_scalars(TableReader& reader, std::string_view key, Store&& store) {
  const toml::table* table = reader.read_table(key);
  if (table == nullptr) {
    return;
  }
  for (auto&& [name, node] : *table) {
    if (std::optional<ArgumentValue> value = scalar_of(node)) {
      store(std::string(name.str()), std::move(*value));
    } else {
      reader.problems().add(node.source(), join_key(reader.path_of(key), name.str()),
                            "must be a string, integer, float or boolean, got " +
                                std::string(describe_type(node.type())));
    }
  }
}

}  // namespace

void read_arguments(TableReader& reader, std::string_view key, Arguments& out) {
  read_scalars(reader, key, [&out](std::string name, ArgumentValue value) {
    out.insert_or_assign(std::move(name), std::move(value));
  });
}

void read_settings(TableReader& reader, std::string_view key,
                   std::map<std::string, std::string>& out) {
  const toml::table* table = reader.find(key) ? reader.find(key)->as_table() : nullptr;
  read_scalars(reader, key, [&](std::string name, const ArgumentValue& value) {
    std::string text = render(value);
    if (std::holds_alternative<std::string>(value)) {
      auto expanded = expand_environment(text, [](const char* n) { return std::getenv(n); });
      if (const auto* error = std::get_if<ExpansionError>(&expanded)) {
        const toml::node* node = table != nullptr ? table->get(name) : nullptr;
        reader.problems().add(node != nullptr ? node->source() : reader.source(),
                              join_key(reader.path_of(key), name), error->message);
        return;
      }
      text = std::get<std::string>(std::move(expanded));
    }
    out.insert_or_assign(std::move(name), std::move(text));
  });
}

}  // namespace warren::config
