/* bench_queue_bare_consumer PATH QUEUE COUNT BATCH full|normal: the baseline Warren's SQLite
 * queue is measured against. The bare C loop of issue 12 over the same file: claim up to BATCH
 * rows with one UPDATE ... RETURNING in BEGIN IMMEDIATE (Warren's claim statement, word for
 * word), "handle" them (read the body), then settle the batch in one transaction (Warren's
 * fenced `done` UPDATE, one per row), again until COUNT rows are done. Same pragmas as the
 * connection of Warren's queue engine (host/src/queue/sqlite_transport.cc): WAL, the given
 * synchronous, busy_timeout, a 512 KiB page cache, and ignore_check_constraints (the statements
 * only write statuses the table's CHECK allows; SQLite 3.40 builds a temporary b-tree per
 * updated row to check it), so that the ratio measures the host around the SQL, not settings.
 *
 * Prints "first_ns last_ns cpu_ns maxrss_kb": wall clock when the first row was handled and when
 * the last one was (its settlement commits right after, as Warren's does), user+sys CPU between
 * those two moments, and the process's peak RSS (VmHWM). */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Warren's claim (host/src/queue/sqlite_queue_store.cc), with the columns it returns. */
static const char kClaim[] =
    "UPDATE warren_queue SET status = 'running', lease_owner = ?1, lease_until = ?2, "
    "lease_token = lease_token + 1 WHERE id IN (SELECT id FROM warren_queue WHERE queue = ?3 AND "
    "status = 'pending' AND next_attempt_at <= ?4 ORDER BY next_attempt_at, id LIMIT ?5) "
    "RETURNING id, lease_token, next_attempt_at, max_attempts, message_id, exchange, "
    "routing_key, content_type, headers, body, attempts, redelivered, queue";
/* Warren's ack: fenced by the token the claim returned. */
static const char kDone[] =
    "UPDATE warren_queue SET status = 'done', finished_at = ?3, lease_owner = NULL, "
    "lease_until = NULL WHERE id = ?1 AND lease_token = ?2 AND status = 'running'";
static const int64_t kLeaseMs = 300000; /* Warren's default lease */

static sqlite3* db;

static void die(const char* what) {
  fprintf(stderr, "bench_queue_bare_consumer: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
  exit(1);
}

static void exec(const char* sql) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    die(sql);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ms(void) {
  return now_ns() / 1000000;
}

static int64_t cpu_ns(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return ((int64_t)usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
}

int main(int argc, char** argv) {
  if (argc != 6)
    die("usage: bench_queue_bare_consumer PATH QUEUE COUNT BATCH full|normal");
  const char* queue = argv[2];
  const long count = atol(argv[3]);
  const int batch = atoi(argv[4]);
  const int full = strcmp(argv[5], "full") == 0;
  if (count <= 0 || batch <= 0 || (!full && strcmp(argv[5], "normal") != 0))
    die("usage: bench_queue_bare_consumer PATH QUEUE COUNT BATCH full|normal");
  char owner[300];
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  snprintf(owner, sizeof owner, "%s/%ld", host, (long)getpid());

  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
    die(argv[1]);
  sqlite3_busy_timeout(db, 10000);
  exec("PRAGMA journal_mode = WAL");
  exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
  exec("PRAGMA cache_size = -512");
  exec("PRAGMA ignore_check_constraints = ON");

  sqlite3_stmt* claim;
  sqlite3_stmt* done;
  if (sqlite3_prepare_v3(db, kClaim, -1, SQLITE_PREPARE_PERSISTENT, &claim, NULL) != SQLITE_OK)
    die("prepare claim");
  if (sqlite3_prepare_v3(db, kDone, -1, SQLITE_PREPARE_PERSISTENT, &done, NULL) != SQLITE_OK)
    die("prepare done");
  int64_t* ids = malloc(sizeof(int64_t) * (size_t)batch);
  int64_t* tokens = malloc(sizeof(int64_t) * (size_t)batch);
  if (ids == NULL || tokens == NULL)
    die("out of memory");

  long handled = 0;
  int64_t first_ns = 0, last_ns = 0, first_cpu = 0, last_cpu = 0;
  unsigned long checksum = 0; /* the "handling": read every body */
  while (handled < count) {
    const int64_t now = now_ms();
    exec("BEGIN IMMEDIATE");
    sqlite3_bind_text(claim, 1, owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(claim, 2, now + kLeaseMs);
    sqlite3_bind_text(claim, 3, queue, -1, SQLITE_STATIC);
    sqlite3_bind_int64(claim, 4, now);
    sqlite3_bind_int64(claim, 5, batch);
    int claimed = 0;
    int rc;
    while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
      ids[claimed] = sqlite3_column_int64(claim, 0);
      tokens[claimed] = sqlite3_column_int64(claim, 1);
      const unsigned char* body = sqlite3_column_blob(claim, 9);
      const int size = sqlite3_column_bytes(claim, 9);
      if (size > 0)
        checksum += body[0] + body[size - 1];
      ++claimed;
    }
    if (rc != SQLITE_DONE)
      die("claim");
    sqlite3_reset(claim);
    exec("COMMIT");
    if (claimed == 0)
      die("the queue ran dry before COUNT rows were handled");
    if (first_ns == 0) {
      first_ns = now_ns();
      first_cpu = cpu_ns();
    }
    handled += claimed;
    if (handled >= count) {
      last_ns = now_ns();
      last_cpu = cpu_ns();
    }

    const int64_t finished = now_ms();
    exec("BEGIN IMMEDIATE");
    for (int i = 0; i < claimed; ++i) {
      sqlite3_bind_int64(done, 1, ids[i]);
      sqlite3_bind_int64(done, 2, tokens[i]);
      sqlite3_bind_int64(done, 3, finished);
      if (sqlite3_step(done) != SQLITE_DONE)
        die("done");
      if (sqlite3_changes(db) != 1)
        die("a settlement found its row no longer leased to this loop");
      sqlite3_reset(done);
    }
    exec("COMMIT");
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("%lld %lld %lld %ld\n", (long long)first_ns, (long long)last_ns,
         (long long)(last_cpu - first_cpu), usage.ru_maxrss);
  fprintf(stderr, "bare loop: %ld rows, checksum %lu, SQLite %s\n", handled, checksum,
          sqlite3_libversion());
  free(ids);
  free(tokens);
  sqlite3_finalize(claim);
  sqlite3_finalize(done);
  sqlite3_close(db);
  return 0;
}
