// The table-queue database a config names, opened for the command line's tools: `warren dlq` and
// `warren queue` look at a queue that `warren topology apply` or `warren run` created, and never
// create one themselves. The SQLite file of [broker.sqlite], or the schema of [broker.postgres].
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "postgres/pg_connection.h"
#include "queue/sqlite_connection.h"

namespace warren::cli {

// Throws queue::SqliteError naming the file and what to do (missing, no Warren schema, newer).
std::unique_ptr<queue::SqliteConnection> open_queue_database(const config::Config& config);

// Connected, with the session's search_path set to the configured schema. `tool` names the
// session in pg_stat_activity ("warren dlq"). Throws postgres::PgError (the server named as
// describe_dsn does, never the dsn), queue::PgQueueSchemaError (no queue there yet, or a newer
// one).
std::unique_ptr<postgres::PgConnection> open_pg_queue_database(const config::Config& config,
                                                               const std::string& tool);

// A PostgreSQL connection for `tool` to the database of [broker.postgres]. Throws PgError.
std::unique_ptr<postgres::PgConnection> connect_pg_queue(const config::Config& config,
                                                         const std::string& tool);

}  // namespace warren::cli
