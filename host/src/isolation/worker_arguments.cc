#include "isolation/worker_arguments.h"

#include <charconv>
#include <string_view>

namespace warren::isolation {

namespace {

constexpr std::string_view kMemoryMax = "--memory-max=";
constexpr std::string_view kCoreDumps = "--core-dumps";

template <typename Number>
bool parse_number(std::string_view text, Number& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc{} && end == text.data() + text.size();
}

}  // namespace

std::vector<std::string> WorkerArguments::to_argv() const {
  std::vector<std::string> argv{std::to_string(host)};
  if (memory_max > 0)
    argv.push_back(std::string(kMemoryMax) + std::to_string(memory_max));
  if (core_dumps)
    argv.emplace_back(kCoreDumps);
  return argv;
}

std::optional<WorkerArguments> WorkerArguments::parse(int argc, const char* const* argv,
                                                      std::string& error) {
  WorkerArguments arguments;
  if (argc < 2 || !parse_number(std::string_view(argv[1]), arguments.host) || arguments.host <= 0) {
    error = "the first argument must be the host's pid";
    return std::nullopt;
  }
  for (int i = 2; i < argc; ++i) {
    std::string_view argument(argv[i]);
    if (argument.starts_with(kMemoryMax) &&
        parse_number(argument.substr(kMemoryMax.size()), arguments.memory_max)) {
      continue;
    }
    if (argument == kCoreDumps) {
      arguments.core_dumps = true;
      continue;
    }
    error = "unknown argument '" + std::string(argument) + "'";
    return std::nullopt;
  }
  return arguments;
}

}  // namespace warren::isolation
