// PluginLibrary::load: trust check, dlopen through Boost.DLL, then the descriptor handshake.
//
// Order matters: nothing in the descriptor is read before its size and ABI version say the field
// exists and means what this host thinks it means (as OBS does for its module structs).
#include "plugin/plugin_library.h"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "plugin/file_trust.h"
#include "plugin/memory_file.h"
#include "plugin/plugin_content.h"
#include "warren/host_abi/descriptor_check.h"

namespace warren::plugin {
namespace {

namespace fs = std::filesystem;

using EntryFunction = std::remove_pointer_t<warren_plugin_entry_fn>;

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

class LoadedPluginLibrary final : public PluginLibrary {
 public:
  LoadedPluginLibrary(MemoryFile snapshot, boost::dll::shared_library library,
                      const warren_plugin_descriptor& descriptor, PluginInfo info)
      : snapshot_(std::move(snapshot)),
        library_(std::move(library)),
        descriptor_(descriptor),
        info_(std::move(info)) {}

  const PluginInfo& info() const noexcept override { return info_; }
  const warren_plugin_descriptor& descriptor() const noexcept override { return descriptor_; }

 private:
  // A snapshot's memory file, closed after the library: while it is open, no other snapshot can
  // get its /proc/self/fd/N name, which the dynamic loader would take for this library.
  MemoryFile snapshot_;
  // Declared before the descriptor so it is destroyed after it: its pointers point into it.
  boost::dll::shared_library library_;
  warren_plugin_descriptor descriptor_;
  PluginInfo info_;
};

// RTLD_NOW: a missing symbol fails here, with a reason, rather than in a handler later.
// RTLD_LOCAL: one plugin's symbols never satisfy another's.
boost::dll::shared_library open_library(const fs::path& file) {
  // boost::dll::fs is std::filesystem here (BOOST_DLL_USE_STD_FS, plugin/CMakeLists.txt).
  const boost::dll::fs::path& native_path = file;
  boost::dll::fs::error_code error;
  ::dlerror();  // Forget any earlier failure so the text below is about this file.
  boost::dll::shared_library library(
      native_path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, error);
  if (error || !library.is_loaded()) {
    const char* loader_text = ::dlerror();
    throw PluginLoadError(file,
                          "refused: the dynamic loader cannot open it: " +
                              std::string(loader_text != nullptr ? loader_text : error.message()));
  }
  return library;
}

const warren_plugin_descriptor* call_entry(const boost::dll::shared_library& library,
                                           const fs::path& file) {
  if (!library.has(WARREN_PLUGIN_ENTRY_SYMBOL)) {
    throw PluginLoadError(file, "refused: it exports no " WARREN_PLUGIN_ENTRY_SYMBOL
                                " symbol, so it is not a Warren plugin; build it with "
                                "WARREN_PLUGIN(...) and warren_add_plugin()");
  }
  EntryFunction& entry = library.get<EntryFunction>(WARREN_PLUGIN_ENTRY_SYMBOL);
  try {
    return entry();
  } catch (...) {
    // The entry of a WARREN_PLUGIN cannot throw; a hand-written one might.
    throw PluginLoadError(file, "refused: " WARREN_PLUGIN_ENTRY_SYMBOL "() threw an exception");
  }
}

// Validates the descriptor (host_abi/descriptor_check.h: the rules the test harness applies too)
// and the name it was loaded as, and returns a copy of it.
warren_plugin_descriptor validate_descriptor(const warren_plugin_descriptor* raw,
                                             const fs::path& file, std::string_view expected_name) {
  if (raw == nullptr) {
    throw PluginLoadError(file, "refused: " WARREN_PLUGIN_ENTRY_SYMBOL "() returned no descriptor");
  }
  if (const std::optional<std::string> refusal = host_abi::descriptor_refusal(*raw)) {
    throw PluginLoadError(file, "refused: " + *refusal);
  }
  // Fields a plugin built for an older minor lacks stay zero.
  const warren_plugin_descriptor descriptor = host_abi::copy_descriptor(*raw);
  const std::string_view name = descriptor.name;
  if (!expected_name.empty() && name != expected_name) {
    throw PluginLoadError(file, "refused: it declares the name " + quoted(name) +
                                    " but was loaded as " + quoted(expected_name) +
                                    "; name the file " + plugin_file_name(name) +
                                    " or fix the name given to WARREN_PLUGIN");
  }
  return descriptor;
}

// `file` is what the messages name; the loader opens `load_path` (the file itself, or a
// snapshot's memory file), whose content hashes to `content_hash`.
std::shared_ptr<PluginLibrary> open_trusted(const fs::path& file, std::string_view expected_name,
                                            const fs::path& load_path, std::string content_hash,
                                            MemoryFile snapshot = MemoryFile()) {
  boost::dll::shared_library library = [&] {
    try {
      return open_library(load_path);
    } catch (const PluginLoadError& e) {
      throw PluginLoadError(file, e.reason());
    }
  }();
  const warren_plugin_descriptor descriptor =
      validate_descriptor(call_entry(library, file), file, expected_name);
  PluginInfo info;
  info.file = file;
  info.name = descriptor.name;
  info.version = descriptor.version;
  info.build_fingerprint =
      descriptor.build_fingerprint != nullptr ? descriptor.build_fingerprint : "";
  info.abi_major = descriptor.abi_major;
  info.abi_minor = descriptor.abi_minor;
  info.content_hash = std::move(content_hash);
  return std::make_shared<LoadedPluginLibrary>(std::move(snapshot), std::move(library), descriptor,
                                               std::move(info));
}

void check_plugin_name(const fs::path& file, std::string_view name) {
  if (name.empty() || name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    throw PluginLoadError(file, "refused: " + quoted(name) +
                                    " is not a plugin name; use a plain name such as \"orders\"");
  }
}

}  // namespace

std::string plugin_file_name(std::string_view name) {
  return "lib" + std::string(name) + ".so";
}

std::shared_ptr<PluginLibrary> PluginLibrary::load(const fs::path& plugin_dir,
                                                   std::string_view name) {
  const fs::path file = plugin_dir / plugin_file_name(name);
  check_plugin_name(file, name);
  check_trusted_plugin_file(plugin_dir, file);
  return open_trusted(file, name, file, plugin_file_hash(file));
}

std::shared_ptr<PluginLibrary> PluginLibrary::load_file(const fs::path& file,
                                                        std::string_view expected_name) {
  check_trusted_plugin_file(file.parent_path(), file);
  return open_trusted(file, expected_name, file, plugin_file_hash(file));
}

std::shared_ptr<PluginLibrary> PluginLibrary::load_held(const fs::path& file,
                                                        std::string_view expected_name,
                                                        const fs::path& held) {
  try {
    return open_trusted(file, expected_name, held, plugin_file_hash(held));
  } catch (const PluginLoadError& e) {
    throw PluginLoadError(file, e.reason());  // plugin_file_hash names the /proc path
  }
}

std::shared_ptr<PluginLibrary> PluginLibrary::load_snapshot(const fs::path& plugin_dir,
                                                            std::string_view name) {
  const fs::path file = plugin_dir / plugin_file_name(name);
  check_plugin_name(file, name);
  check_trusted_plugin_file(plugin_dir, file);
  PluginContent content = read_plugin_content(file);
  MemoryFile memory_file = MemoryFile::of(file, content.bytes);
  const fs::path load_path = memory_file.proc_path();
  return open_trusted(file, name, load_path, std::move(content.hash), std::move(memory_file));
}

}  // namespace warren::plugin
