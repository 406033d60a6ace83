-- The PostgreSQL table queue of Warren ([broker] transport = "postgres"), schema version 1, for
-- PostgreSQL 14 or later. `warren topology apply` and `warren run` create it (idempotent, in one
-- transaction under an advisory lock, in the [broker.postgres] schema: every name below is
-- unqualified and lands there); you never need to run this file yourself, but it is the
-- reference for programs that write to the queue.
--
-- warren_queue is a public interface: any program enqueues a message with a plain INSERT inside
-- its own transaction. A duplicate message_id for the same queue is an error unless the INSERT
-- says to ignore it, so write:
--   INSERT INTO warren_queue (queue, message_id, body, headers)
--   VALUES ('emails', 'order-42', convert_to('{"order_id": 42}', 'UTF8'), '{"source": "api"}')
--   ON CONFLICT (queue, message_id) DO NOTHING;
-- or, to reach every queue bound to an exchange and routing key (fan-out by the config's
-- bindings, in the caller's transaction):
--   SELECT warren_publish('orders', 'order.created', convert_to('{"order_id": 42}', 'UTF8'),
--                         '{"source": "api"}', 'order-42');
-- Either way the row exists only if the caller's transaction commits.

CREATE TABLE IF NOT EXISTS warren_schema (
  name text PRIMARY KEY,
  version integer NOT NULL
);

-- Every message is inserted once, updated three or four times (claimed, its lease extended,
-- settled) and deleted after the retention: the table churns far more than it grows.
--   fillfactor = 70: each page keeps room, so the new version of an updated row is written on
--     the same page as the old one (where page pruning reclaims the old one cheaply, and as a HOT
--     update, with no index entry, when no indexed column changed) rather than on a new page at
--     the end of a growing table.
--   autovacuum at 1% of the table (plus 1,000 rows) instead of 20%, unthrottled: the dead
--     versions that claims step over under FOR UPDATE SKIP LOCKED are cleared while they are
--     few, rather than after a backlog has tripled the table; analyze as often, so that the
--     planner keeps using the partial indexes as the share of ready rows swings.
CREATE TABLE IF NOT EXISTS warren_queue (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL,                        -- the [[queues]] name
  message_id text NOT NULL                    -- omitted: a fresh one (32 hex digits)
    DEFAULT replace(gen_random_uuid()::text, '-', ''),
  exchange text NOT NULL DEFAULT '',          -- where it was published ('' for a plain INSERT)
  routing_key text NOT NULL DEFAULT '',
  content_type text NOT NULL DEFAULT '',
  headers jsonb NOT NULL DEFAULT '{}'         -- an object of strings
    CONSTRAINT warren_queue_headers_object CHECK (jsonb_typeof(headers) = 'object'),
  body bytea NOT NULL DEFAULT '',
  status text NOT NULL DEFAULT 'pending'
    CONSTRAINT warren_queue_status CHECK (status IN ('pending', 'running', 'done', 'dead')),
  attempts integer NOT NULL DEFAULT 0,        -- failed attempts so far; the next is attempts + 1
  max_attempts integer,                       -- NULL: the worker's retry policy decides
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,                           -- the host/pid handling it while running
  lease_until timestamptz,
  lease_token bigint NOT NULL DEFAULT 0,      -- + 1 at each claim: fences a late settlement
  redelivered boolean NOT NULL DEFAULT false, -- handed out before and given back unsettled
  crashes integer NOT NULL DEFAULT 0,         -- leases that expired while it ran
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,                    -- done or dead
  CONSTRAINT warren_queue_message_once UNIQUE (queue, message_id)
) WITH (
  fillfactor = 70,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_vacuum_insert_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_analyze_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0
);

-- Ready rows, in the order they are claimed. No index holds a payload (body, headers).
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
-- Done rows to delete after the retention.
CREATE INDEX IF NOT EXISTS warren_queue_done
  ON warren_queue (finished_at) WHERE status = 'done';
-- Dead rows, for `warren dlq`.
CREATE INDEX IF NOT EXISTS warren_queue_dead
  ON warren_queue (queue, id) WHERE status = 'dead';

-- Wakes the hosts (LISTEN warren_queue) when rows commit: one notification per statement and
-- queue, the queue's name as the payload, delivered at commit (never for a rolled-back insert).
-- A statement trigger with a transition table: an INSERT of 10,000 rows costs one notification,
-- not 10,000, and an INSERT that inserted nothing (a duplicate) none.
CREATE OR REPLACE FUNCTION warren_queue_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('warren_queue', inserted.queue)
    FROM (SELECT DISTINCT queue FROM warren_inserted_rows) AS inserted;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER warren_queue_notify
  AFTER INSERT ON warren_queue
  REFERENCING NEW TABLE AS warren_inserted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION warren_queue_notify();

-- The routing of the config, for warren_publish(): `warren topology apply` replaces the contents
-- of these three tables with the config's [[queues]], [[exchanges]] and bindings, in one
-- transaction. Edit the config and apply it, not these tables.
CREATE TABLE IF NOT EXISTS warren_queues (
  name text PRIMARY KEY
);

CREATE TABLE IF NOT EXISTS warren_exchanges (
  name text PRIMARY KEY,
  type text NOT NULL
    CONSTRAINT warren_exchanges_type CHECK (type IN ('direct', 'fanout', 'topic', 'headers'))
);

CREATE TABLE IF NOT EXISTS warren_bindings (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- the config's order
  exchange text NOT NULL REFERENCES warren_exchanges (name) ON DELETE CASCADE,
  queue text NOT NULL REFERENCES warren_queues (name) ON DELETE CASCADE,
  binding_key text NOT NULL DEFAULT '',       -- the routing key (topic: a pattern)
  arguments jsonb NOT NULL DEFAULT '{}'       -- headers exchanges: x-match and the values
    CONSTRAINT warren_bindings_arguments_object CHECK (jsonb_typeof(arguments) = 'object')
);
CREATE INDEX IF NOT EXISTS warren_bindings_by_exchange ON warren_bindings (exchange, id);

-- A topic binding's pattern against a routing key, as RabbitMQ matches them: both are words
-- separated by dots ('' is one empty word); `*` is exactly one word, `#` zero or more.
-- Walks the key once, keeping every pattern position that the words read so far can reach.
CREATE OR REPLACE FUNCTION warren_topic_matches(pattern text, routing_key text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  -- string_to_array('', '.') is an empty array, not one empty word.
  pattern_words text[] := CASE WHEN pattern = '' THEN ARRAY[''] ELSE string_to_array(pattern, '.') END;
  key_words text[] := CASE WHEN routing_key = '' THEN ARRAY[''] ELSE string_to_array(routing_key, '.') END;
  last integer := cardinality(pattern_words);
  -- reached[i]: the first i pattern words can match the key words read so far.
  reached boolean[];
  following boolean[];
  word text;
BEGIN
  reached := array_fill(false, ARRAY[last + 1], ARRAY[0]);
  reached[0] := true;
  FOR i IN 0 .. last - 1 LOOP  -- a `#` may match no word at all
    IF reached[i] AND pattern_words[i + 1] = '#' THEN reached[i + 1] := true; END IF;
  END LOOP;
  FOREACH word IN ARRAY key_words LOOP
    following := array_fill(false, ARRAY[last + 1], ARRAY[0]);
    FOR i IN 0 .. last - 1 LOOP
      IF reached[i] THEN
        IF pattern_words[i + 1] = '#' THEN
          following[i] := true;  -- `#` takes this word and may take more
        ELSIF pattern_words[i + 1] = '*' OR pattern_words[i + 1] = word THEN
          following[i + 1] := true;
        END IF;
      END IF;
    END LOOP;
    FOR i IN 0 .. last - 1 LOOP
      IF following[i] AND pattern_words[i + 1] = '#' THEN following[i + 1] := true; END IF;
    END LOOP;
    reached := following;
  END LOOP;
  RETURN reached[last];
END $$;

-- A headers binding's arguments against a message's headers, as RabbitMQ matches them: x-match
-- 'any' wants one argument equal to its header, anything else ('all', the default) every one;
-- arguments whose name starts with 'x-' are not compared.
CREATE OR REPLACE FUNCTION warren_headers_match(arguments jsonb, headers jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN arguments ->> 'x-match' = 'any'
              THEN coalesce(bool_or(equal), false)
              ELSE coalesce(bool_and(equal), true)
         END
    FROM (SELECT headers ? wanted.key  -- a JSON null header reads as '', as Warren reads it
                 AND coalesce(headers ->> wanted.key, '') = wanted.value AS equal
            FROM jsonb_each_text(arguments) AS wanted
           WHERE left(wanted.key, 2) <> 'x-') AS compared
$$;

-- Publishes a message as the broker would, in the caller's transaction: the default exchange ''
-- delivers to the queue named by routing_key (if the config has it), any other exchange to every
-- queue bound to it whose binding matches (direct: equal key; fanout: all; topic: pattern;
-- headers: x-match all|any), each queue once. One row per queue, all with the same message_id
-- (NULL: one fresh id for every copy); a queue that already has a row with that id keeps it
-- (a retrying producer cannot enqueue twice).
-- Returns how many queues the message reached (0: unroutable, nothing inserted; duplicates
-- count as reached). An exchange the config does not have raises undefined_object (42704).
--   SELECT warren_publish('orders', 'order.created', convert_to('{"id": 42}', 'UTF8'),
--                         headers => '{"source": "api"}', message_id => 'order-42',
--                         content_type => 'application/json');
-- search_path is the one it was created with: callers may have any search_path of their own.
CREATE OR REPLACE FUNCTION warren_publish(
  exchange text,
  routing_key text,
  body bytea,
  headers jsonb DEFAULT '{}',
  message_id text DEFAULT NULL,
  content_type text DEFAULT ''
) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
  exchange_type text;
  targets text[];
  id_for_all text := coalesce(warren_publish.message_id,
                              replace(gen_random_uuid()::text, '-', ''));
  message_headers jsonb := coalesce(warren_publish.headers, '{}');
BEGIN
  IF warren_publish.exchange IS NULL OR warren_publish.routing_key IS NULL
     OR warren_publish.body IS NULL THEN
    RAISE EXCEPTION 'warren_publish: exchange, routing_key and body must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF jsonb_typeof(message_headers) <> 'object' THEN
    RAISE EXCEPTION 'warren_publish: headers must be a JSON object of strings, not %',
      jsonb_typeof(message_headers) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF warren_publish.exchange = '' THEN
    SELECT array_agg(q.name) INTO targets
      FROM warren_queues AS q WHERE q.name = warren_publish.routing_key;
  ELSE
    SELECT e.type INTO exchange_type FROM warren_exchanges AS e
     WHERE e.name = warren_publish.exchange;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'warren_publish: no exchange ''%''', warren_publish.exchange
        USING ERRCODE = 'undefined_object',
              HINT = 'The exchanges are the config''s [[exchanges]], stored by '
                     '`warren topology apply`.';
    END IF;
    SELECT array_agg(routed.queue ORDER BY routed.first_binding) INTO targets
      FROM (SELECT b.queue, min(b.id) AS first_binding
              FROM warren_bindings AS b
             WHERE b.exchange = warren_publish.exchange
               AND CASE exchange_type
                     WHEN 'direct' THEN b.binding_key = warren_publish.routing_key
                     WHEN 'fanout' THEN true
                     WHEN 'topic' THEN warren_topic_matches(b.binding_key,
                                                            warren_publish.routing_key)
                     ELSE warren_headers_match(b.arguments, message_headers)
                   END
             GROUP BY b.queue) AS routed;
  END IF;
  IF targets IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO warren_queue (queue, message_id, exchange, routing_key, content_type, headers, body)
  SELECT target.name, id_for_all, warren_publish.exchange, warren_publish.routing_key,
         coalesce(warren_publish.content_type, ''), message_headers, warren_publish.body
    FROM unnest(targets) WITH ORDINALITY AS target(name, position)
   ORDER BY target.position
  ON CONFLICT (queue, message_id) DO NOTHING;
  RETURN cardinality(targets);
END $$;

INSERT INTO warren_schema (name, version) VALUES ('queue', 1)
  ON CONFLICT (name) DO NOTHING;
