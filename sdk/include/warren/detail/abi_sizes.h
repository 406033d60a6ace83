// How large each struct of abi.h was in the minor that introduced it, and WARREN_HOST_HAS: the
// size checks that let both sides read a struct the other side built for an older minor.
//
// abi.h's structs only grow by appending fields, and each carries its own `struct_size`. A field
// exists for the reader only if the writer's struct_size reaches past its end; the ABI 1.0 sizes
// below are the smallest struct either side accepts at all.
#pragma once

#include <cstddef>

#include "warren/abi.h"

// The end of `member` in `Struct`: a struct_size at least this large carries the member.
#define WARREN_DETAIL_END_OF(Struct, member) (offsetof(Struct, member) + sizeof(Struct::member))

// True when the host table `host_` is new enough to carry the callback `member` and fills it
// in. Every SDK wrapper of a callback appended after ABI 1.0 (an optional callback) checks it
// first and, when it is false, does what its documentation promises for older hosts (falls back
// to a 1.0 callback, or does nothing). It names the wrapper's `const warren_host_api* host_`
// member, as PluginContext, Context, Message and Metric call theirs. The callbacks of ABI 1.0
// need no check: the plugin's `create` refuses a host table smaller than that.
#define WARREN_HOST_HAS(member)                                                               \
  (host_ != nullptr && host_->struct_size >= WARREN_DETAIL_END_OF(warren_host_api, member) && \
   host_->member != nullptr)

namespace warren::detail {

inline constexpr std::size_t kHostApiV1_0Size =
    WARREN_DETAIL_END_OF(warren_host_api, message_report);
inline constexpr std::size_t kDescriptorV1_0Size =
    WARREN_DETAIL_END_OF(warren_plugin_descriptor, handle);
inline constexpr std::size_t kOutcomeV1_0Size = WARREN_DETAIL_END_OF(warren_outcome, error_type);
inline constexpr std::size_t kPublishRequestV1_0Size =
    WARREN_DETAIL_END_OF(warren_publish_request, header_count);
inline constexpr std::size_t kMessageV1_0Size = WARREN_DETAIL_END_OF(warren_message, redelivered);

// ABI 1.1 appended no field: its structs are 1.0's.
inline constexpr std::size_t kHostApiV1_1Size = kHostApiV1_0Size;
inline constexpr std::size_t kDescriptorV1_1Size = kDescriptorV1_0Size;
inline constexpr std::size_t kOutcomeV1_1Size = kOutcomeV1_0Size;
inline constexpr std::size_t kPublishRequestV1_1Size = kPublishRequestV1_0Size;
inline constexpr std::size_t kMessageV1_1Size = kMessageV1_0Size;

// ABI 1.2: the host table's logging level and labelled metrics, the publish's flags.
inline constexpr std::size_t kHostApiV1_2Size =
    WARREN_DETAIL_END_OF(warren_host_api, metric_series);
inline constexpr std::size_t kPublishRequestV1_2Size =
    WARREN_DETAIL_END_OF(warren_publish_request, flags);

}  // namespace warren::detail
