// `warren queue status|backup -c FILE`: the table-queue transports' own verbs (the SQLite and
// PostgreSQL queues; on RabbitMQ the broker's tools do this).
#pragma once

#include <string>

#include "cli/config_source.h"

namespace warren::cli {

enum class QueueAction { status, backup };

struct QueueCommandOptions {
  QueueAction action = QueueAction::status;
  std::string to;  // backup: where the copy goes (must not exist)
};

int queue_command(const ConfigOptions& options, const QueueCommandOptions& command);

}  // namespace warren::cli
