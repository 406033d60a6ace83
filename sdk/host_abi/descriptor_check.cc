// descriptor_refusal and copy_descriptor: abi.h's evolution rules applied to a plugin's
// descriptor, for the loader and the test harness alike.
#include "warren/host_abi/descriptor_check.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "warren/detail/abi_sizes.h"

namespace warren::host_abi {
namespace {

std::string abi_version(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

std::optional<std::string> descriptor_refusal(const warren_plugin_descriptor& descriptor) {
  if (descriptor.struct_size < detail::kDescriptorV1_0Size) {
    return "its descriptor is " + std::to_string(descriptor.struct_size) +
           " bytes, smaller than the " + std::to_string(detail::kDescriptorV1_0Size) +
           " bytes of Warren ABI 1.0: the plugin is damaged or was not built with the Warren "
           "SDK; rebuild it with WARREN_PLUGIN(...)";
  }
  if (descriptor.abi_major != WARREN_ABI_MAJOR) {
    return "built for Warren ABI " + std::to_string(descriptor.abi_major) +
           ".x, this host speaks " + std::to_string(WARREN_ABI_MAJOR) +
           ".x: rebuild the plugin against this host's SDK";
  }
  if (descriptor.abi_minor > WARREN_ABI_MINOR) {
    return "built for Warren ABI " + abi_version(descriptor.abi_major, descriptor.abi_minor) +
           ", newer than this host's " + abi_version(WARREN_ABI_MAJOR, WARREN_ABI_MINOR) +
           ": upgrade the host or rebuild the plugin against this host's SDK";
  }
  if (descriptor.name == nullptr || descriptor.name[0] == '\0')
    return "its descriptor has no name";
  if (descriptor.version == nullptr)
    return "its descriptor has no version";
  std::string missing;
  for (const auto& [present, function] : {std::pair{descriptor.create != nullptr, "create"},
                                          std::pair{descriptor.destroy != nullptr, "destroy"},
                                          std::pair{descriptor.handle != nullptr, "handle"}}) {
    if (!present)
      missing += std::string(missing.empty() ? "" : ", ") + function;
  }
  if (!missing.empty())
    return "its descriptor lacks the function(s) " + missing;
  return std::nullopt;
}

warren_plugin_descriptor copy_descriptor(const warren_plugin_descriptor& descriptor) noexcept {
  warren_plugin_descriptor copy{};
  std::memcpy(&copy, &descriptor, std::min<std::size_t>(descriptor.struct_size, sizeof copy));
  return copy;
}

}  // namespace warren::host_abi
