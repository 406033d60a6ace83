-- Warren's transactional outbox and processed-message inbox for PostgreSQL 14 or later (CREATE OR
-- REPLACE TRIGGER).
--
-- Applications write their data and the event to publish in ONE transaction, either with a plain
-- INSERT INTO warren_outbox or with warren_outbox_enqueue(); the relay inside `warren run` (one
-- per [[outbox]]) publishes each committed row to RabbitMQ with publisher confirms and marks it
-- `sent` only after the broker confirmed it. Delivery is at least once: consumers that must not
-- apply an event twice record its message_id in warren_inbox (see README, "Outbox and idempotent
-- consumers").
--
-- The queue answers SQL:
--   SELECT status, count(*) FROM warren_outbox GROUP BY status;
--   SELECT id, routing_key, attempts, last_error FROM warren_outbox WHERE status = 'dead';
--
-- Apply with `warren outbox init -c warren.toml` or `psql -f sql/outbox.sql`. Safe to apply again
-- (and by several processes at once): every statement is IF NOT EXISTS / OR REPLACE, under an
-- advisory lock.

BEGIN;

DO $$ BEGIN PERFORM pg_advisory_xact_lock(hashtext('warren outbox schema')); END $$;

-- One row per event to publish. status: pending (waiting, or waiting for a retry at
-- next_attempt_at), sent (the broker confirmed it at published_at), dead (max_attempts failures;
-- `warren outbox retry-dead` sets such rows back to pending).
CREATE TABLE IF NOT EXISTS warren_outbox (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  exchange        text        NOT NULL DEFAULT '',  -- '': the [[outbox]] exchange from the config
  routing_key     text        NOT NULL,
  message_id      text        NOT NULL DEFAULT gen_random_uuid()::text,
  content_type    text        NOT NULL DEFAULT 'application/json',
  headers         jsonb       NOT NULL DEFAULT '{}'
                              CONSTRAINT warren_outbox_headers_object
                              CHECK (jsonb_typeof(headers) = 'object'),
  payload         bytea       NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  status          text        NOT NULL DEFAULT 'pending'
                              CONSTRAINT warren_outbox_status
                              CHECK (status IN ('pending', 'sent', 'dead')),
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  published_at    timestamptz
);

-- The relay's claim (pending rows, oldest first), the lag metric and `warren outbox status`.
CREATE INDEX IF NOT EXISTS warren_outbox_pending_idx
  ON warren_outbox (created_at) WHERE status = 'pending';
-- `warren outbox status` and `retry-dead`: dead rows only.
CREATE INDEX IF NOT EXISTS warren_outbox_dead_idx
  ON warren_outbox (created_at) WHERE status = 'dead';

-- For applications in any language, inside their own transaction:
--   SELECT warren_outbox_enqueue('livraria.eventos', 'pedido.registrado',
--                                convert_to('{"order_id": 42}', 'UTF8'));
-- Returns the row's id. message_id is what consumers see (and deduplicate on).
CREATE OR REPLACE FUNCTION warren_outbox_enqueue(
  exchange     text,
  routing_key  text,
  payload      bytea,
  headers      jsonb DEFAULT '{}',
  message_id   text  DEFAULT gen_random_uuid()::text,
  content_type text  DEFAULT 'application/json')
RETURNS uuid
LANGUAGE sql
AS $$
  INSERT INTO warren_outbox (exchange, routing_key, payload, headers, message_id, content_type)
  VALUES ($1, $2, $3, coalesce($4, '{}'::jsonb), coalesce($5, gen_random_uuid()::text),
          coalesce($6, 'application/json'))
  RETURNING id
$$;

-- Wakes the relays (LISTEN warren_outbox) when the inserting transaction commits. Only a hint:
-- a relay that was disconnected misses it, and finds the rows on its next poll.
CREATE OR REPLACE FUNCTION warren_outbox_notify() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('warren_outbox', '');
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER warren_outbox_notify
  AFTER INSERT ON warren_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION warren_outbox_notify();

-- Sent rows are kept a while (they answer "was it published, and when?"): the relay deletes those
-- older than its [[outbox]] retention (7 days by default) itself, in chunks. To delete sooner by
-- hand: SELECT warren_outbox_purge_sent('1 day');
CREATE OR REPLACE FUNCTION warren_outbox_purge_sent(older_than interval DEFAULT '7 days')
RETURNS bigint
LANGUAGE sql
AS $$
  WITH purged AS (
    DELETE FROM warren_outbox
    WHERE status = 'sent' AND published_at < now() - $1
    RETURNING 1)
  SELECT count(*) FROM purged
$$;

-- Processed messages of idempotent consumers: one row per (worker, message_id). The host writes
-- it for workers with `idempotency = { store = "postgres", ... }` and prunes rows older than
-- `retention`; a handler whose effect is in this same database inserts it itself, in the
-- transaction of its effect, with ON CONFLICT DO NOTHING (zero rows inserted: a duplicate).
CREATE TABLE IF NOT EXISTS warren_inbox (
  worker       text        NOT NULL,
  message_id   text        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (worker, message_id)
);

CREATE INDEX IF NOT EXISTS warren_inbox_processed_at_idx
  ON warren_inbox (worker, processed_at);

COMMIT;
