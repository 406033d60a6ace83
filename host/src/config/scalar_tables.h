// Free-form tables of scalar values: AMQP arguments (kept typed) and worker settings (rendered
// as strings for the plugin). Their keys are the user's, so there is no unknown-key check.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/table_reader.h"

namespace warren::config {

// `key = { "x-max-priority" = 10, ... }`: values string, integer, float or boolean.
void read_arguments(TableReader& reader, std::string_view key, Arguments& out);

// `[workers.settings]`: values string, integer, float or boolean, rendered as strings
// ("x", "42", "0.5", "true"). Strings expand ${NAME} and ${NAME:-default} (env_expansion.h).
void read_settings(TableReader& reader, std::string_view key,
                   std::map<std::string, std::string>& out);

}  // namespace warren::config
