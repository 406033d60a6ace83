"""Helpers of the outbox and idempotency integration tests (test_outbox_*.py, test_idempotency.py).
This module holds no tests.

- OutboxSchema: a PostgreSQL schema of the test's own (its dsn sets search_path), where
  `warren outbox init` creates warren_outbox and warren_inbox, so tests never see each other's rows.
- outbox_toml(): the warren.toml of a relay and/or consumer, from Python values.
- insert_order_events(): rows of `pedido.registrado` events, in one transaction or many.
- collect_ids(): every message id in a queue: the expected count, and any extra that comes
  within a settle period after the last one.
- RelayLog: what a relay's debug log says about its batches (claimed, confirmed, committed), to
  tell which rows a killed relay had in flight.
"""

import json
import re
import shutil
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set

import pika

from warren_testkit import env, pg_connect, warren_cli


class OutboxSchema:
    """A schema named outbox_<hex> in the test database, dropped by close()."""

    def __init__(self, *, _of: "OutboxSchema" = None):
        self._connection = None
        self._owner = _of is None
        if _of is not None:
            self.name, self.dsn = _of.name, _of.dsn
            return
        self.name = "outbox_" + uuid.uuid4().hex[:10]
        base = env("WARREN_TEST_PG_DSN")
        separator = "&" if "?" in base else "?"
        self.dsn = f"{base}{separator}options=-csearch_path%3D{self.name}"
        admin = pg_connect()
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE SCHEMA {self.name}")
        admin.close()

    def another_connection(self) -> "OutboxSchema":
        """The same schema through a connection of its own (for another thread); its close()
        closes only that connection."""
        return OutboxSchema(_of=self)

    def init(self, config_path: Path) -> subprocess.CompletedProcess:
        """`warren outbox init -c CONFIG` (the config's outboxes point at this schema)."""
        result = warren_cli("outbox", "init", "-c", str(config_path))
        assert result.returncode == 0, f"warren outbox init failed: {result.stdout}{result.stderr}"
        return result

    def connection(self):
        """An autocommit psycopg2 connection with search_path set to this schema."""
        if self._connection is None or self._connection.closed:
            self._connection = pg_connect(self.dsn)
        return self._connection

    def query(self, sql: str, params: Sequence = ()) -> list:
        with self.connection().cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def scalar(self, sql: str, params: Sequence = ()):
        return self.query(sql, params)[0][0]

    def status_counts(self) -> Dict[str, int]:
        return dict(self.query("SELECT status, count(*) FROM warren_outbox GROUP BY status"))

    def close(self) -> None:
        if self._connection is not None and not self._connection.closed:
            self._connection.close()
        if not self._owner:
            return
        admin = pg_connect()
        with admin.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA IF EXISTS {self.name} CASCADE")
        admin.close()


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def _table(name: str, values: dict, array: bool = False) -> str:
    header = f"[[{name}]]" if array else f"[{name}]"
    lines = [header]
    nested = []
    for key, value in values.items():
        if isinstance(value, dict) and key == "settings":
            nested.append(f"[{name}.settings]\n" + "\n".join(
                f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()))
        else:
            lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines + nested) + "\n"


def outbox_toml(*, name: str, exchanges: Iterable[dict] = (), queues: Iterable[dict] = (),
                outboxes: Iterable[dict] = (), workers: Iterable[dict] = (),
                log_level: str = "info", metrics_port: Optional[int] = None,
                broker: Optional[dict] = None) -> str:
    """warren.toml text: [host] (the test plugin dirs), [log], [metrics], [broker] (the test
    broker), then the given exchanges, queues, outboxes and workers as written."""
    plugin_dir = env("WARREN_PLUGIN_DIR")
    parts = [
        _table("host", {"name": name, "plugin_dir": plugin_dir, "shutdown_timeout": "5s"}),
        _table("log", {"level": log_level}),
        _table("metrics", {"enabled": False} if metrics_port is None
               else {"listen": f"127.0.0.1:{metrics_port}"}),
        _table("broker", {"uri": env("WARREN_TEST_AMQP_URI"), **(broker or {})}),
    ]
    parts += [_table("exchanges", e, array=True) for e in exchanges]
    parts += [_table("queues", q, array=True) for q in queues]
    parts += [_table("outbox", o, array=True) for o in outboxes]
    parts += [_table("workers", w, array=True) for w in workers]
    return "\n".join(parts)


def plugin_dir_with_fixtures(directory: Path) -> str:
    """DIRECTORY (created, mode 0755) with copies of the example plugins and the test plugins
    (scripted): warren loads every worker's plugin from one directory, and refuses symlinks."""
    directory.mkdir(mode=0o755, exist_ok=True)
    directory.chmod(0o755)
    for source_dir in (env("WARREN_PLUGIN_DIR"), env("WARREN_FIXTURE_PLUGIN_DIR")):
        for library in Path(source_dir).glob("lib*.so"):
            shutil.copy2(library, directory / library.name)
    return str(directory)


def insert_order_events(schema: OutboxSchema, count: int, *, exchange: str = "",
                        routing_key: str = "pedido.registrado", first_order: int = 1) -> List[str]:
    """Inserts COUNT `pedido.registrado` rows in ONE transaction; returns their message ids (the
    event ids) in order."""
    rows = schema.query(
        """
        WITH events AS (
          SELECT gen_random_uuid()::text AS id, n FROM generate_series(%s, %s) AS n)
        INSERT INTO warren_outbox (exchange, routing_key, message_id, payload)
        SELECT %s, %s, id,
               convert_to(jsonb_build_object(
                 'event_id', id, 'order_id', n, 'customer_id', 'c-' || (n %% 10),
                 'total', 10.5,
                 'items', jsonb_build_array(jsonb_build_object(
                   'product_id', n %% 7, 'quantity', 1, 'unit_price', 10.5)))::text, 'UTF8')
        FROM events ORDER BY n
        RETURNING message_id, created_at
        """, (first_order, first_order + count - 1, exchange, routing_key))
    return [message_id for message_id, _ in sorted(rows, key=lambda r: r[1])]


def collect_ids(queue: str, *, expect: int, settle: float = 3.0,
                timeout: float = 120.0) -> Counter:
    """Consumes QUEUE (acking) until EXPECT messages have arrived, then goes on until SETTLE
    seconds have passed since the last one; returns how often each message id arrived.

    What this can see: a duplicate or stray that arrives within SETTLE of the last expected
    message; not one that comes later. Fewer than EXPECT within TIMEOUT seconds fails the test."""
    connection = pika.BlockingConnection(pika.URLParameters(env("WARREN_TEST_AMQP_URI")))
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=500)
        ids: Counter = Counter()
        deadline = time.monotonic() + timeout
        # inactivity_timeout: consume() yields None once SETTLE seconds pass without a message.
        for method, properties, _body in channel.consume(queue, inactivity_timeout=settle):
            if method is not None:
                ids[properties.message_id] += 1
                channel.basic_ack(method.delivery_tag)
            elif sum(ids.values()) >= expect:
                break
            assert time.monotonic() < deadline, (
                f"{queue}: only {sum(ids.values())} of {expect} messages arrived within "
                f"{timeout:g}s")
        channel.cancel()
        return ids
    finally:
        connection.close()


_CLAIMED = re.compile(r"lane (\d+): batch (\d+) claimed \d+ row\(s\), message ids (\S+)")
_RECORDING = re.compile(r"lane (\d+): batch (\d+) confirmed (\d+), failed (\d+), not attempted (\d+)")
_COMMITTED = re.compile(r"lane (\d+): batch (\d+) (?:committed|rolled back)")


@dataclass
class RelayLog:
    """The batches one relay process logged (debug level)."""

    claimed: Dict[tuple, List[str]] = field(default_factory=dict)   # (lane, batch) -> ids
    confirmed: Set[tuple] = field(default_factory=set)   # every publish answered
    committed: Set[tuple] = field(default_factory=set)   # committed, or nothing to record
    # answered, but some rows "not attempted": the publisher lost the broker before their confirm
    # (they may have been published) or before their publish; they stay pending
    unanswered: Set[tuple] = field(default_factory=set)

    @classmethod
    def parse(cls, text: str) -> "RelayLog":
        log = cls()
        for match in _CLAIMED.finditer(text):
            log.claimed[(match[1], match[2])] = match[3].split(",")
        for match in _RECORDING.finditer(text):
            log.confirmed.add((match[1], match[2]))
            if int(match[5]) > 0:
                log.unanswered.add((match[1], match[2]))
        for match in _COMMITTED.finditer(text):
            log.committed.add((match[1], match[2]))
        return log

    def in_flight(self) -> Dict[tuple, List[str]]:
        """Batches claimed but not committed: what this relay held when it died."""
        return {key: ids for key, ids in self.claimed.items() if key not in self.committed}

    def confirmed_not_marked(self) -> Set[str]:
        """Ids of batches fully confirmed by the broker but whose marking did not commit."""
        return {i for key, ids in self.in_flight().items() if key in self.confirmed for i in ids}

    def left_pending_unconfirmed(self) -> Set[str]:
        """Ids of batches some of whose rows the broker never confirmed (the publisher lost its
        connection): left pending, published again later, so maybe delivered twice."""
        return {i for key in self.unanswered for i in self.claimed.get(key, [])}

    def published_unconfirmed(self) -> Set[str]:
        """Ids of batches still waiting for confirms when the relay died."""
        return {i for key, ids in self.in_flight().items() if key not in self.confirmed for i in ids}
