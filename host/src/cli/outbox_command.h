// `warren outbox init|status|retry-dead -c FILE [--outbox NAME]`: the outbox table as an operator
// sees it. Exit 0 when done, 2 on a bad config or an unknown --outbox, 1 when PostgreSQL fails.
#pragma once

#include <string>

#include "cli/config_source.h"

namespace warren::cli {

enum class OutboxAction { init, status, retry_dead };

struct OutboxCommandOptions {
  OutboxAction action = OutboxAction::status;
  std::string outbox;  // empty: every [[outbox]]
};

int outbox_command(const ConfigOptions& options, const OutboxCommandOptions& outbox);

}  // namespace warren::cli
