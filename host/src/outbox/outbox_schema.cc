// See outbox_schema.h. outbox_schema_sql.h is generated from sql/outbox.sql by CMake.
#include "outbox/outbox_schema.h"

#include <string>

#include "outbox_schema_sql.h"

namespace warren::outbox {

std::string_view outbox_schema_sql() noexcept {
  return kOutboxSchemaSql;
}

void apply_outbox_schema(postgres::PgConnection& connection) {
  // NOTICEs such as "relation already exists, skipping" are expected on a second run.
  connection.exec("SET client_min_messages = warning");
  connection.exec(std::string(outbox_schema_sql()));
}

}  // namespace warren::outbox
