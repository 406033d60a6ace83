// The outbox and inbox schema (sql/outbox.sql, compiled in so that `warren outbox init` needs no
// file at run time) and applying it.
#pragma once

#include <string_view>

#include "postgres/pg_connection.h"

namespace warren::outbox {

// The text of sql/outbox.sql as built.
std::string_view outbox_schema_sql() noexcept;

// Applies it (idempotent, safe to run concurrently). Throws postgres::PgError.
void apply_outbox_schema(postgres::PgConnection& connection);

}  // namespace warren::outbox
