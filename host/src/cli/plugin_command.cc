// The plugin author's verbs.
//
// `warren plugin new NAME [DIR]` writes a complete out-of-tree plugin project (CMakeLists.txt,
// handler, harness unit test, README, a config to run it) into DIR (default ./NAME), from the
// template packaging/templates/plugin/ compiled into this binary at build time, so an installed
// warren needs no source tree. The template's names my_plugin / MyPlugin / MY_PLUGIN become
// NAME / its CamelCase / its upper case, in file names and contents. Exit 0, or 2 for a bad name
// or a DIR that exists and is not empty, or 1 when a file cannot be written.
//
// `warren plugins -c FILE` shows, for each worker, the plugin file the host would load and what
// its descriptor says (name, version, ABI, build fingerprint), and whether it would load: every
// check of the loader (ownership, permissions, symlinks, ABI, name), without running handler
// constructors (`warren check` does that). Exit 0 when every plugin loads, else 2.
#include "cli/plugin_command.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/plugin_template_files.h"  // generated: warren::embedded::kPluginTemplate
#include "observability/log.h"
#include "plugin/plugin_library.h"
#include "warren/abi.h"
#include "warren/plugin.h"  // WARREN_BUILD_FINGERPRINT: this host's own
#include "warren_version.h"

namespace warren::cli {
namespace {

namespace fs = std::filesystem;

// The template's own plugin name, in its three spellings.
constexpr std::string_view kTemplateName = "my_plugin";
constexpr std::string_view kTemplateCamel = "MyPlugin";
constexpr std::string_view kTemplateUpper = "MY_PLUGIN";

// NAME becomes a C++ namespace and a CMake target: no keywords, no reserved identifiers.
constexpr std::array<std::string_view, 95> kReservedNames = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char8_t",     "char16_t",
    "char32_t",      "class",       "compl",
    "concept",       "const",       "consteval",
    "constexpr",     "constinit",   "const_cast",
    "continue",      "co_await",    "co_return",
    "co_yield",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned",
    "using",         "virtual",     "void",
    "volatile",      "wchar_t",     "while",
    "xor",           "xor_eq",      "std",
    "warren",        "posix"};

// Empty when NAME can be a plugin name, else why not.
std::string problem_with_plugin_name(std::string_view name) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z') ||
      !std::all_of(name.begin(), name.end(), allowed)) {
    return "must start with a lowercase letter and contain only lowercase letters, digits and "
           "'_' (the host loads lib<name>.so; the name is also a C++ namespace)";
  }
  if (name.size() > 64) {
    return "is longer than 64 characters";
  }
  if (name.find("__") != std::string_view::npos || name.back() == '_') {
    return "must not contain \"__\" or end with '_'";
  }
  if (std::find(kReservedNames.begin(), kReservedNames.end(), name) != kReservedNames.end()) {
    return "is a C++ keyword or a reserved namespace";
  }
  return {};
}

// order_email -> OrderEmail
std::string camel_case(std::string_view name) {
  std::string result;
  bool upper_next = true;
  for (const char c : name) {
    if (c == '_') {
      upper_next = true;
    } else {
      result += upper_next && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
      upper_next = false;
    }
  }
  return result;
}

std::string upper_case(std::string_view name) {
  std::string result(name);
  for (char& c : result) {
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
  }
  return result;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

struct Renaming {
  std::string name, camel, upper;
  std::string apply(std::string text) const {
    text = replace_all(std::move(text), kTemplateUpper, upper);
    text = replace_all(std::move(text), kTemplateCamel, camel);
    return replace_all(std::move(text), kTemplateName, name);
  }
};

bool is_missing_or_empty_directory(const fs::path& dir, std::string& why) {
  std::error_code error;
  const fs::file_status status = fs::symlink_status(dir, error);
  if (status.type() == fs::file_type::not_found)
    return true;
  if (status.type() != fs::file_type::directory) {
    why = "exists and is not a directory";
    return false;
  }
  if (!fs::is_empty(dir, error) || error) {
    why = error ? "cannot be read: " + error.message() : "exists and is not empty";
    return false;
  }
  return true;
}

// "1.0" and, when it differs, what the host speaks.
std::string describe_abi(const plugin::PluginInfo& info) {
  std::string text = std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor);
  if (info.abi_major != WARREN_ABI_MAJOR || info.abi_minor != WARREN_ABI_MINOR) {
    text += " (host: " + std::to_string(WARREN_ABI_MAJOR) + "." + std::to_string(WARREN_ABI_MINOR) +
            ")";
  }
  return text;
}

}  // namespace

int plugin_new_command(const std::string& name, const std::string& directory) {
  if (const std::string problem = problem_with_plugin_name(name); !problem.empty()) {
    std::cerr << "plugin new: the name \"" << name << "\" " << problem << "\n";
    return kExitBadUsageOrConfig;
  }
  const fs::path target = directory.empty() ? fs::path(name) : fs::path(directory);
  if (std::string why; !is_missing_or_empty_directory(target, why)) {
    std::cerr << "plugin new: " << target.string() << " " << why
              << "; name a new or empty directory\n";
    return kExitBadUsageOrConfig;
  }

  const Renaming renaming{name, camel_case(name), upper_case(name)};
  for (const auto& file : embedded::kPluginTemplate) {
    const fs::path path = target / renaming.apply(std::string(file.path));
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string content = renaming.apply(std::string(file.content));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (error || !out) {
      std::cerr << "plugin new: cannot write " << path.string() << ": "
                << (error ? error.message() : std::string("write failed")) << "\n";
      return kExitRuntimeFailure;
    }
  }

  const std::string dir = target.string();
  std::cout << "Created plugin " << name << " in " << dir << "/ ("
            << embedded::kPluginTemplate.size() << " files). Next:\n"
            << "  cmake -S " << dir << " -B " << dir << "/build && cmake --build " << dir
            << "/build && ctest --test-dir " << dir << "/build\n"
            << "  warren run -c " << dir << "/conf/" << name << ".toml --plugin-dir " << dir
            << "/build/plugins\n"
            << "See " << dir << "/README.md.\n";
  return kExitOk;
}

int plugins_command(const ConfigOptions& options) {
  const auto config = load_config_for_cli(options);
  if (!config)
    return kExitBadUsageOrConfig;
  observability::configure_logging("warn", observability::LogFormat::text);

  std::cout << "host: warren " << WARREN_VERSION << ", plugin ABI " << WARREN_ABI_MAJOR << "."
            << WARREN_ABI_MINOR << ", built by " << WARREN_BUILD_FINGERPRINT << "\n"
            << "plugin_dir: " << config->host.plugin_dir.string() << "\n";

  // One load per plugin, as the host does; the loaded library stays alive until exit.
  struct Attempt {
    std::shared_ptr<plugin::PluginLibrary> library;
    std::string refusal;
  };
  std::map<std::string, Attempt> attempts;
  bool all_load = true;
  for (const auto& worker : config->workers) {
    auto [entry, first] = attempts.try_emplace(worker.plugin);
    Attempt& attempt = entry->second;
    if (first) {
      try {
        attempt.library = plugin::PluginLibrary::load(config->host.plugin_dir, worker.plugin);
      } catch (const plugin::PluginLoadError& error) {
        attempt.refusal = error.reason();
      }
    }
    std::cout << "\nworker " << worker.name << ": plugin " << worker.plugin << "\n";
    if (attempt.library) {
      const plugin::PluginInfo& info = attempt.library->info();
      std::cout << "  file         " << info.file.string() << "\n"
                << "  name         " << info.name << "\n"
                << "  version      " << info.version << "\n"
                << "  abi          " << describe_abi(info) << "\n"
                << "  fingerprint  " << info.build_fingerprint
                << (info.build_fingerprint == WARREN_BUILD_FINGERPRINT
                        ? ""
                        : " (differs from the host's)")
                << "\n"
                << "  loads        yes\n";
    } else {
      all_load = false;
      std::cout << "  file         "
                << (config->host.plugin_dir / plugin::plugin_file_name(worker.plugin)).string()
                << "\n"
                << "  loads        no: " << attempt.refusal << "\n";
    }
  }
  if (config->workers.empty()) {
    std::cout << "\n(no workers configured)\n";
  }
  return all_load ? kExitOk : kExitBadUsageOrConfig;
}

}  // namespace warren::cli
