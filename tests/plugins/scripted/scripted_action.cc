// Parsing of scripted actions: "<name>" or "<name>:<argument>".
#include "scripted_action.h"

#include <charconv>
#include <stdexcept>
#include <string>

namespace warren::test_plugins {
namespace {

constexpr const char* kValidActions =
    "ack, retry, retry:<ms>, dead_letter:<reason>, throw, throw_int, permanent, sleep:<ms>, "
    "abort, segfault, fail_until:<n>, publish:<exchange>:<routing_key>, "
    "notify:<exchange>:<routing_key>, ack_if_file:<path>, hog, spin";

[[noreturn]] void invalid(std::string_view spec, std::string_view why) {
  throw std::invalid_argument("scripted: invalid action '" + std::string(spec) +
                              "': " + std::string(why) + " (valid: " + kValidActions + ")");
}

std::uint64_t number(std::string_view spec, std::string_view digits) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
    invalid(spec, "'" + std::string(digits) + "' is not a non-negative integer");
  }
  return value;
}

}  // namespace

ScriptedAction ScriptedAction::parse(std::string_view spec) {
  const auto colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const bool has_argument = colon != std::string_view::npos;
  const std::string_view argument = has_argument ? spec.substr(colon + 1) : std::string_view{};

  ScriptedAction action;
  auto without_argument = [&](Kind kind) {
    if (has_argument)
      invalid(spec, "'" + std::string(name) + "' takes no argument");
    action.kind = kind;
    return action;
  };
  auto with_argument = [&](Kind kind) {
    if (!has_argument)
      invalid(spec, "'" + std::string(name) + "' needs ':<argument>'");
    action.kind = kind;
  };

  if (name == "ack")
    return without_argument(Kind::ack);
  if (name == "throw")
    return without_argument(Kind::throw_std);
  if (name == "throw_int")
    return without_argument(Kind::throw_int);
  if (name == "permanent")
    return without_argument(Kind::permanent);
  if (name == "abort")
    return without_argument(Kind::abort);
  if (name == "segfault")
    return without_argument(Kind::segfault);
  if (name == "hog")
    return without_argument(Kind::hog);
  if (name == "spin")
    return without_argument(Kind::spin);
  if (name == "retry") {
    if (!has_argument)
      return without_argument(Kind::retry);
    with_argument(Kind::retry_after);
    action.duration = std::chrono::milliseconds(number(spec, argument));
    return action;
  }
  if (name == "sleep") {
    with_argument(Kind::sleep);
    action.duration = std::chrono::milliseconds(number(spec, argument));
    return action;
  }
  if (name == "fail_until") {
    with_argument(Kind::fail_until);
    const std::uint64_t attempts = number(spec, argument);
    if (attempts > UINT32_MAX)
      invalid(spec, "the attempt number is too large");
    action.attempts = static_cast<std::uint32_t>(attempts);
    return action;
  }
  if (name == "dead_letter") {
    with_argument(Kind::dead_letter);
    action.text = argument;
    return action;
  }
  if (name == "ack_if_file") {
    with_argument(Kind::ack_if_file);
    if (argument.empty())
      invalid(spec, "the path is empty");
    action.text = argument;
    return action;
  }
  if (name == "publish" || name == "notify") {
    with_argument(name == "publish" ? Kind::publish : Kind::notify);
    const auto second_colon = argument.find(':');
    if (second_colon == std::string_view::npos)
      invalid(spec, "expected " + std::string(name) + ":<exchange>:<key>");
    action.exchange = argument.substr(0, second_colon);
    action.routing_key = argument.substr(second_colon + 1);
    return action;
  }
  invalid(spec, "unknown action");
}

}  // namespace warren::test_plugins
