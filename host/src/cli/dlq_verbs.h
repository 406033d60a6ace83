// The verbs of `warren dlq` over any transport's dead letters, apart from the command that finds
// them (dlq_command.cc), so that what they print can be tested without a broker or a file.
#pragma once

#include "cli/commands.h"
#include "config/config.h"
#include "transport/dead_letters.h"

namespace warren::cli {

// Runs options.verb (list|peek|replay|purge) on `letters`, printing to std::cout and std::cerr;
// returns the exit code. With a worker, only its letters are chosen (a shared dead-letter queue
// holds other workers' too); without (`--queue` alone), every letter in the queue.
int run_dlq_verb(transport::DeadLetters& letters, const config::WorkerConfig* worker,
                 const DlqOptions& options);

}  // namespace warren::cli
