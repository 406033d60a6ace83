// Warren SDK 1.2 (plugin ABI 1.2): everything a plugin author needs. Standard library only; the
// plugin must be built with C++ exceptions and RTTI (plugin.h refuses to compile otherwise).
//
//   #include <warren/sdk.h>
//   class Echo final : public warren::Handler {
//    public:
//     explicit Echo(warren::PluginContext& ctx);
//     warren::Outcome handle(const warren::Message& msg, warren::Context& ctx) override;
//   };
//   WARREN_PLUGIN(Echo, "echo", "1.0.0")
#pragma once

#include "warren/abi.h"
#include "warren/context.h"
#include "warren/errors.h"
#include "warren/handler.h"
#include "warren/log_level.h"
#include "warren/message.h"
#include "warren/metrics.h"
#include "warren/outcome.h"
#include "warren/outgoing_message.h"
#include "warren/plugin.h"
#include "warren/plugin_context.h"
#include "warren/scope.h"
