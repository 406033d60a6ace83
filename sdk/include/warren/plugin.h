// WARREN_PLUGIN(Class, "name", "version"): exports the one C entry point of a plugin.
//
// The trampolines below run inside the plugin. They turn the handler's C++ (objects, outcomes,
// exceptions) into the plain-C contract of abi.h, so that no exception ever crosses the `.so`
// boundary and the host never depends on the plugin's C++ ABI.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

#include "warren/abi.h"
#include "warren/context.h"
#include "warren/detail/strings.h"
#include "warren/errors.h"
#include "warren/handler.h"
#include "warren/message.h"
#include "warren/outcome.h"
#include "warren/plugin_context.h"

#define WARREN_DETAIL_STR2(x) #x
#define WARREN_DETAIL_STR(x) WARREN_DETAIL_STR2(x)

#if defined(__clang__)
#define WARREN_DETAIL_COMPILER "clang-" __clang_version__
#elif defined(__GNUC__)
#define WARREN_DETAIL_COMPILER "gcc-" __VERSION__
#else
#define WARREN_DETAIL_COMPILER "unknown"
#endif

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define WARREN_DETAIL_CXX11_ABI WARREN_DETAIL_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define WARREN_DETAIL_CXX11_ABI "n/a"
#endif

// Who built this code: shown by `warren plugins` to diagnose a plugin built elsewhere.
#define WARREN_DETAIL_STD ";std=" WARREN_DETAIL_STR(__cplusplus)
#define WARREN_BUILD_FINGERPRINT \
  WARREN_DETAIL_COMPILER WARREN_DETAIL_STD ";cxx11abi=" WARREN_DETAIL_CXX11_ABI

namespace warren::detail {

inline void copy_error(char* buffer, std::size_t capacity, const char* text) noexcept {
  if (buffer == nullptr || capacity == 0)
    return;
  const std::size_t length = std::min(std::strlen(text), capacity - 1);
  std::memcpy(buffer, text, length);
  buffer[length] = '\0';
}

template <class H>
struct Instance {
  Instance(const warren_host_api* host, void* host_plugin)
      : context(host, host_plugin), handler(context) {}
  PluginContext context;
  H handler;
};

template <class H>
void* create(const warren_host_api* host, void* host_plugin, char* error,
             std::size_t error_capacity) noexcept {
  if (host == nullptr || host->abi_major != WARREN_ABI_MAJOR) {
    copy_error(error, error_capacity, "host ABI major version differs from the plugin's");
    return nullptr;
  }
  try {
    return new Instance<H>(host, host_plugin);
  } catch (const std::exception& e) {
    copy_error(error, error_capacity, e.what());
  } catch (...) {
    copy_error(error, error_capacity, "the constructor threw a non-std exception");
  }
  return nullptr;
}

template <class H>
void destroy(void* instance) noexcept {
  delete static_cast<Instance<H>*>(instance);
}

inline void report(const warren_host_api* host, void* host_message, uint32_t kind, int64_t delay_ms,
                   std::string_view reason, uint32_t error_kind, const char* error_type) noexcept {
  warren_outcome outcome{};
  outcome.struct_size = sizeof(outcome);
  outcome.kind = kind;
  outcome.delay_ms = delay_ms;
  outcome.reason = to_abi(reason);
  outcome.error_kind = error_kind;
  outcome.error_type = to_abi(error_type == nullptr ? std::string_view{} : error_type);
  host->message_report(host_message, &outcome);
}

inline void report_outcome(const warren_host_api* host, void* host_message,
                           const Outcome& outcome) noexcept {
  switch (outcome.kind()) {
    case Outcome::Kind::ack:
      report(host, host_message, WARREN_OUTCOME_ACK, -1, {}, WARREN_ERROR_NONE, nullptr);
      return;
    case Outcome::Kind::retry:
      report(host, host_message, WARREN_OUTCOME_RETRY,
             outcome.delay() ? outcome.delay()->count() : -1, {}, WARREN_ERROR_NONE, nullptr);
      return;
    case Outcome::Kind::dead_letter:
      report(host, host_message, WARREN_OUTCOME_DEAD_LETTER, -1, outcome.reason(),
             WARREN_ERROR_NONE, nullptr);
      return;
  }
  // An Outcome holding no valid kind (memory corruption): the host treats 0 as garbage.
  report(host, host_message, 0, -1, {}, WARREN_ERROR_NONE, nullptr);
}

template <class H>
void handle(void* instance, const warren_message* message, void* host_message) noexcept {
  auto* self = static_cast<Instance<H>*>(instance);
  const warren_host_api* host = self->context.host_api();
  try {
    const Message msg(host, message, host_message);
    Context ctx(host, host_message, self->context);
    const Outcome outcome = self->handler.handle(msg, ctx);
    report_outcome(host, host_message, outcome);
  } catch (const PermanentError& e) {
    report(host, host_message, WARREN_OUTCOME_THREW_PERMANENT, -1, e.what(), WARREN_ERROR_PERMANENT,
           typeid(e).name());
  } catch (const std::exception& e) {
    report(host, host_message, WARREN_OUTCOME_THREW, -1, e.what(), WARREN_ERROR_STD_EXCEPTION,
           typeid(e).name());
  } catch (...) {
    report(host, host_message, WARREN_OUTCOME_THREW, -1, "a non-std exception was thrown",
           WARREN_ERROR_UNKNOWN, nullptr);
  }
}

template <class H>
constexpr warren_plugin_descriptor make_descriptor(const char* name, const char* version) {
  static_assert(std::is_base_of_v<Handler, H>,
                "a Warren plugin class derives from warren::Handler");
  static_assert(std::is_constructible_v<H, PluginContext&>,
                "a Warren plugin class has a constructor taking warren::PluginContext&");
  warren_plugin_descriptor descriptor{};
  descriptor.struct_size = sizeof(warren_plugin_descriptor);
  descriptor.abi_major = WARREN_ABI_MAJOR;
  descriptor.abi_minor = WARREN_ABI_MINOR;
  descriptor.name = name;
  descriptor.version = version;
  descriptor.build_fingerprint = WARREN_BUILD_FINGERPRINT;
  descriptor.create = &create<H>;
  descriptor.destroy = &destroy<H>;
  descriptor.handle = &handle<H>;
  return descriptor;
}

}  // namespace warren::detail

// Exports the plugin. Use once per `.so`, at namespace scope.
#define WARREN_PLUGIN(HandlerClass, name_literal, version_literal)                      \
  extern "C" __attribute__((visibility("default"))) const warren_plugin_descriptor*     \
  warren_plugin_entry(void) {                                                           \
    static constexpr warren_plugin_descriptor descriptor =                              \
        ::warren::detail::make_descriptor<HandlerClass>(name_literal, version_literal); \
    return &descriptor;                                                                 \
  }
