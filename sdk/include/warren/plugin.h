// WARREN_PLUGIN(Class, "name", "version"): exports the one C entry point of a plugin.
//
// The trampolines below run inside the plugin. They turn the handler's C++ (objects, outcomes,
// exceptions) into the plain-C contract of abi.h, so that no exception ever crosses the `.so`
// boundary and the host never depends on the plugin's C++ ABI.
#pragma once

// The trampolines need both: catching is how nothing crosses the boundary, and typeid names the
// exception for the host. Without them the plugin could not keep its side of the contract.
#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error "Warren plugins need C++ exceptions: do not build them with -fno-exceptions"
#endif
#if !defined(__cpp_rtti) && !defined(__GXX_RTTI)
#error "Warren plugins need RTTI: do not build them with -fno-rtti"
#endif

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>
#include <type_traits>
#include <typeinfo>

#include "warren/abi.h"
#include "warren/context.h"
#include "warren/detail/abi_sizes.h"
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

// The SDK's own glue: the one place that turns the host's raw table and handles into the
// C++ objects a handler sees (their constructors are private to it).
struct SdkGlue {
  static PluginContext plugin_context(const warren_host_api* host, void* host_plugin) noexcept {
    return PluginContext(host, host_plugin);
  }
  static const warren_host_api* host_of(const PluginContext& context) noexcept {
    return context.host_api();
  }
  static Message message(const warren_host_api* host, const warren_message* message,
                         void* host_message) noexcept {
    return Message(host, message, host_message);
  }
  static Context context(const warren_host_api* host, void* host_message,
                         const PluginContext& plugin) noexcept {
    return Context(host, host_message, plugin);
  }
};

template <class H>
struct Instance {
  Instance(const warren_host_api* host, void* host_plugin)
      : context(SdkGlue::plugin_context(host, host_plugin)), handler(context) {}
  PluginContext context;
  H handler;
};

// Why this plugin cannot use `host`'s table, or nullptr.
inline const char* host_table_refusal(const warren_host_api* host) noexcept {
  if (host == nullptr)
    return "the host passed no host table";
  if (host->abi_major != WARREN_ABI_MAJOR)
    return "host ABI major version differs from the plugin's";
  if (host->struct_size < kHostApiV1_0Size)
    return "the host's table is smaller than Warren ABI 1.0's";
  return nullptr;
}

template <class H>
void* create(const warren_host_api* host, void* host_plugin, char* error,
             std::size_t error_capacity) noexcept {
  if (const char* refusal = host_table_refusal(host)) {
    copy_to_buffer(refusal, error, error_capacity);
    return nullptr;
  }
  try {
    return new Instance<H>(host, host_plugin);
  } catch (const std::exception& e) {
    copy_to_buffer(e.what(), error, error_capacity);
  } catch (...) {
    copy_to_buffer("the constructor threw a non-std exception", error, error_capacity);
  }
  return nullptr;
}

template <class H>
void destroy(void* instance) noexcept {
  delete static_cast<Instance<H>*>(instance);
}

// How the handler reached its outcome when it threw (error_kind NONE: it returned).
struct Thrown {
  std::uint32_t error_kind = WARREN_ERROR_NONE;
  const char* mangled_type = nullptr;
};

inline void report(const warren_host_api* host, void* host_message, std::uint32_t kind,
                   std::int64_t delay_ms, std::string_view reason, Thrown thrown) noexcept {
  warren_outcome outcome{};
  outcome.struct_size = sizeof(outcome);
  outcome.kind = kind;
  outcome.delay_ms = delay_ms;
  outcome.reason = to_abi(reason);
  outcome.error_kind = thrown.error_kind;
  outcome.error_type =
      to_abi(thrown.mangled_type == nullptr ? std::string_view{} : thrown.mangled_type);
  host->message_report(host_message, &outcome);
}

// The one encoding of an Outcome, returned or thrown (a PermanentError is its outcome()).
inline void report_outcome(const warren_host_api* host, void* host_message, const Outcome& outcome,
                           Thrown thrown = {}) noexcept {
  switch (outcome.kind()) {
    case Outcome::Kind::ack:
      report(host, host_message, WARREN_OUTCOME_ACK, -1, {}, thrown);
      return;
    case Outcome::Kind::retry:
      report(host, host_message, WARREN_OUTCOME_RETRY,
             outcome.delay() ? outcome.delay()->count() : -1, {}, thrown);
      return;
    case Outcome::Kind::dead_letter:
      report(host, host_message, WARREN_OUTCOME_DEAD_LETTER, -1, outcome.reason(), thrown);
      return;
  }
  // An Outcome holding no valid kind (memory corruption): the host treats 0 as garbage.
  report(host, host_message, 0, -1, {}, thrown);
}

template <class H>
void handle(void* instance, const warren_message* message, void* host_message) noexcept {
  auto* self = static_cast<Instance<H>*>(instance);
  const warren_host_api* host = SdkGlue::host_of(self->context);
  try {
    const Message msg = SdkGlue::message(host, message, host_message);
    Context ctx = SdkGlue::context(host, host_message, self->context);
    const Outcome outcome = self->handler.handle(msg, ctx);
    report_outcome(host, host_message, outcome);
  } catch (const PermanentError& e) {
    try {
      report_outcome(host, host_message, e.outcome(),
                     Thrown{WARREN_ERROR_PERMANENT, typeid(e).name()});
    } catch (...) {  // no memory left to copy what(): the reason is lost, the decision is not
      report(host, host_message, WARREN_OUTCOME_DEAD_LETTER, -1, {},
             Thrown{WARREN_ERROR_PERMANENT, typeid(e).name()});
    }
  } catch (const std::exception& e) {
    report(host, host_message, WARREN_OUTCOME_THREW, -1, e.what(),
           Thrown{WARREN_ERROR_STD_EXCEPTION, typeid(e).name()});
  } catch (...) {
    report(host, host_message, WARREN_OUTCOME_THREW, -1, "a non-std exception was thrown",
           Thrown{WARREN_ERROR_UNKNOWN, nullptr});
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
