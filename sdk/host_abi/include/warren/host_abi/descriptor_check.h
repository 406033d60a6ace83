// The checks a plugin's descriptor passes before the host (the loader) or the test harness runs
// any of its code, in the order of abi.h's evolution rules: the size and the ABI version are
// read before any other field, so nothing a plugin of another ABI put there is misread.
#pragma once

#include <optional>
#include <string>

#include "warren/abi.h"

namespace warren::host_abi {

// Why this host cannot use `descriptor`, e.g. "built for Warren ABI 2.x, this host speaks 1.x:
// rebuild the plugin against this host's SDK", or std::nullopt. Refuses a struct smaller than
// ABI 1.0's, another major, a newer minor, a missing name or version, a missing
// create/destroy/handle.
std::optional<std::string> descriptor_refusal(const warren_plugin_descriptor& descriptor);

// The fields `descriptor.struct_size` covers; the fields a plugin of an older minor lacks are
// zero. Only for a descriptor descriptor_refusal accepted.
warren_plugin_descriptor copy_descriptor(const warren_plugin_descriptor& descriptor) noexcept;

}  // namespace warren::host_abi
