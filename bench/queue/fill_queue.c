/* bench_queue_fill PATH SCHEMA_SQL QUEUE COUNT SIZE: a fresh queue file for the benchmark. Creates
 * the schema from Warren's sql/sqlite_queue.sql (in WAL mode, as Warren opens it) and inserts
 * COUNT pending rows of SIZE-byte bodies for QUEUE with one prepared INSERT in one transaction,
 * each with its own message_id, all due now. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3* db;

static void die(const char* what) {
  fprintf(stderr, "bench_queue_fill: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
  exit(1);
}

static void exec(const char* sql) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    die(sql);
}

static char* read_file(const char* path) {
  FILE* in = fopen(path, "rb");
  if (in == NULL)
    die(path);
  fseek(in, 0, SEEK_END);
  const long size = ftell(in);
  fseek(in, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  if (text == NULL || fread(text, 1, (size_t)size, in) != (size_t)size)
    die(path);
  text[size] = '\0';
  fclose(in);
  return text;
}

int main(int argc, char** argv) {
  if (argc != 6)
    die("usage: bench_queue_fill PATH SCHEMA_SQL QUEUE COUNT SIZE");
  const char* queue = argv[3];
  const long count = atol(argv[4]);
  const int size = atoi(argv[5]);
  if (count <= 0 || size < 0)
    die("usage: bench_queue_fill PATH SCHEMA_SQL QUEUE COUNT SIZE");
  if (sqlite3_open(argv[1], &db) != SQLITE_OK)
    die(argv[1]);
  exec("PRAGMA journal_mode = WAL");
  exec("PRAGMA synchronous = NORMAL");
  char* schema = read_file(argv[2]);
  exec(schema);
  free(schema);

  char* body = malloc((size_t)size + 1);
  if (body == NULL)
    die("out of memory");
  for (int i = 0; i < size; ++i)
    body[i] = (char)('a' + i % 26);
  sqlite3_stmt* insert;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO warren_queue (queue, message_id, content_type, body) "
                         "VALUES (?1, ?2, 'text/plain', ?3)",
                         -1, &insert, NULL) != SQLITE_OK)
    die("prepare insert");
  exec("BEGIN IMMEDIATE");
  for (long i = 0; i < count; ++i) {
    char message_id[32];
    snprintf(message_id, sizeof message_id, "bench-%ld", i);
    sqlite3_bind_text(insert, 1, queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 2, message_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 3, body, size, SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE)
      die("insert");
    sqlite3_reset(insert);
  }
  exec("COMMIT");
  sqlite3_finalize(insert);
  free(body);
  /* Everything in the main file, no WAL left: each run starts from a copy of the same bytes. */
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  if (sqlite3_close(db) != SQLITE_OK)
    die("close");
  return 0;
}
