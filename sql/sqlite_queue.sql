-- The SQLite table queue of Warren ([broker] transport = "sqlite"), schema version 1.
-- `warren topology apply` and `warren run` create it (idempotent); you never need to run this
-- file yourself, but it is the reference for programs that write to the queue.
--
-- warren_queue is a public interface: any program enqueues a message with a plain INSERT inside
-- its own transaction, and a duplicate message_id for the same queue is ignored:
--   INSERT INTO warren_queue (queue, message_id, body, headers)
--   VALUES ('emails', 'order-42', '{"order_id": 42}', '{"content-kind": "order"}');
-- Times are milliseconds since the Unix epoch (UTC): datetime(created_at / 1000, 'unixepoch').

CREATE TABLE IF NOT EXISTS warren_schema (
  name TEXT PRIMARY KEY,
  version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS warren_queue (
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,                       -- the [[queues]] name
  message_id TEXT,                           -- NULL: one is generated at insert
  exchange TEXT NOT NULL DEFAULT '',         -- where it was published ('' for a plain INSERT)
  routing_key TEXT NOT NULL DEFAULT '',
  content_type TEXT NOT NULL DEFAULT '',
  headers TEXT NOT NULL DEFAULT '{}',        -- a JSON object of strings
  body BLOB NOT NULL DEFAULT x'',
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'running', 'done', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,       -- failed attempts so far; the next is attempts + 1
  max_attempts INTEGER,                      -- NULL: the worker's retry policy decides
  next_attempt_at INTEGER NOT NULL
    DEFAULT (CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)),
  lease_owner TEXT,                          -- the host/pid handling it while running
  lease_until INTEGER,
  lease_token INTEGER NOT NULL DEFAULT 0,    -- + 1 at each claim: fences a late settlement
  redelivered INTEGER NOT NULL DEFAULT 0,    -- 1: handed out before and given back unsettled
  crashes INTEGER NOT NULL DEFAULT 0,        -- leases that expired while it ran
  last_error TEXT,
  created_at INTEGER NOT NULL
    DEFAULT (CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)),
  finished_at INTEGER,                       -- done or dead
  UNIQUE (queue, message_id) ON CONFLICT IGNORE
);

-- Ready rows, in the order they are claimed.
CREATE INDEX IF NOT EXISTS warren_queue_ready
  ON warren_queue (queue, next_attempt_at, id) WHERE status = 'pending';
-- Rows whose host died while it held them (crashes > 0), claimed one at a time by a worker with
-- nothing else in flight, so that a row that kills its host cannot take the rows claimed with it
-- down with it again.
CREATE INDEX IF NOT EXISTS warren_queue_suspects
  ON warren_queue (queue, next_attempt_at, id) WHERE status = 'pending' AND crashes > 0;
-- Leases to rescue.
CREATE INDEX IF NOT EXISTS warren_queue_leases
  ON warren_queue (lease_until) WHERE status = 'running';
-- Done rows to prune after the retention.
CREATE INDEX IF NOT EXISTS warren_queue_done
  ON warren_queue (finished_at) WHERE status = 'done';
-- Dead rows, for `warren dlq`.
CREATE INDEX IF NOT EXISTS warren_queue_dead
  ON warren_queue (queue, id) WHERE status = 'dead';

CREATE TRIGGER IF NOT EXISTS warren_queue_message_id
  AFTER INSERT ON warren_queue WHEN NEW.message_id IS NULL
BEGIN
  UPDATE warren_queue SET message_id = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;

-- The outbox of an application that keeps its data in this file ([[outbox]] store = "sqlite"):
-- it writes its data and a row here in one transaction; the relay routes the row into
-- warren_queue by the configured bindings in the same transaction that marks it sent.
CREATE TABLE IF NOT EXISTS warren_outbox (
  id INTEGER PRIMARY KEY,
  exchange TEXT NOT NULL DEFAULT '',         -- '' : the [[outbox]] exchange
  routing_key TEXT NOT NULL DEFAULT '',
  message_id TEXT,                           -- NULL: one is generated when relayed
  content_type TEXT NOT NULL DEFAULT '',
  headers TEXT NOT NULL DEFAULT '{}',
  body BLOB NOT NULL DEFAULT x'',
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'dead')),
  last_error TEXT,
  created_at INTEGER NOT NULL
    DEFAULT (CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)),
  sent_at INTEGER
);
CREATE INDEX IF NOT EXISTS warren_outbox_pending ON warren_outbox (id) WHERE status = 'pending';

INSERT INTO warren_schema (name, version) VALUES ('queue', 1)
  ON CONFLICT (name) DO NOTHING;
