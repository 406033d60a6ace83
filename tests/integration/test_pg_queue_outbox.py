"""A PostgreSQL outbox in the PostgreSQL queue's own database (issue 13): `warren run` with
[broker] transport = "postgres" moves warren_outbox rows into warren_queue, by the bindings that
`warren topology apply` stored, in the transaction that marks them sent. Exactly once: every
event reaches its worker once, and every outbox row is sent once; a row for an exchange the queue
does not know fails alone, is retried, then dead, while the others flow."""

import tempfile
import uuid
from collections import Counter
from pathlib import Path

import pytest

from test_outbox_kit import OutboxSchema
from testkit_records import RecordFile
from warren_testkit import env, pg_connect, require_services, wait_until, warren_cli
from testkit_warren import WarrenProcess


class QueueSchema:
    """A schema of its own for the queue (warren_queue, warren_publish), dropped by close()."""

    def __init__(self):
        self.name = "pgq_" + uuid.uuid4().hex[:10]

    def counts(self) -> Counter:
        connection = pg_connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT status, count(*) FROM {self.name}.warren_queue "
                               "GROUP BY status")
                return Counter(dict(cursor.fetchall()))
        finally:
            connection.close()

    def content_types(self) -> set:
        connection = pg_connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT DISTINCT content_type FROM {self.name}.warren_queue")
                return {row[0] for row in cursor.fetchall()}
        finally:
            connection.close()

    def close(self):
        connection = pg_connect()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA IF EXISTS {self.name} CASCADE")
        connection.close()


@pytest.fixture
def schemas():
    require_services("postgres", "warren")
    outbox, queue = OutboxSchema(), QueueSchema()
    yield outbox, queue
    outbox.close()
    queue.close()


def host_config(outbox: OutboxSchema, queue: QueueSchema, record: Path) -> str:
    return f"""
[host]
name = "pgq-outbox"
plugin_dir = "{env('WARREN_FIXTURE_PLUGIN_DIR')}"
shutdown_timeout = "10s"

[metrics]
enabled = false

[broker]
transport = "postgres"

[broker.postgres]
dsn = "{env('WARREN_TEST_PG_DSN')}"
schema = "{queue.name}"
poll_interval = "200ms"

[[exchanges]]
name = "orders"
type = "topic"

[[queues]]
name = "billing"
bindings = [{{ exchange = "orders", routing_key = "order.#" }}]

[[queues]]
name = "shipping"
bindings = [{{ exchange = "orders", routing_key = "order.placed" }}]

[[outbox]]
name = "app"
store = "postgres"
dsn = "{outbox.dsn}"
batch = 50
poll_interval = "200ms"
max_attempts = 2
backoff = {{ initial = "100ms", max = "100ms" }}

[[workers]]
name = "billing"
plugin = "scripted"
queue = "billing"
concurrency = 2
[workers.settings]
record_file = "{record}"

[[workers]]
name = "shipping"
plugin = "scripted"
queue = "shipping"
concurrency = 2
[workers.settings]
record_file = "{record}"
"""


def test_OutboxRowsMoveIntoTheQueueOnceEach_AndAnUnknownExchangeDiesAlone(schemas,
                                                                          warren_processes):
    outbox, queue = schemas
    with tempfile.TemporaryDirectory(prefix="warren-pgq-outbox-") as directory:
        record = RecordFile(Path(directory) / "calls.tsv")
        config = Path(directory) / "warren.toml"
        config.write_text(host_config(outbox, queue, record.path))
        config.chmod(0o644)
        for verb in (("outbox", "init"), ("topology", "apply")):
            result = warren_cli(*verb, "-c", str(config))
            assert result.returncode == 0, result.stdout + result.stderr
        # 300 events: order.placed reach both queues, order.paid only billing; one row for an
        # exchange the queue does not know.
        outbox.query("""
            INSERT INTO warren_outbox (exchange, routing_key, message_id, payload)
            SELECT 'orders', CASE WHEN n %% 2 = 0 THEN 'order.placed' ELSE 'order.paid' END,
                   'ev-' || n, convert_to('{"n": ' || n || '}', 'UTF8')
            FROM generate_series(1, 300) AS n""")
        outbox.query("INSERT INTO warren_outbox (exchange, routing_key, message_id, payload) "
                     "VALUES ('nowhere', 'order.placed', 'lost-1', '\\x00')")

        host = WarrenProcess(config.read_text(), plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"),
                             name="pgq-outbox")
        warren_processes.append(host)
        host.start()
        wait_until(lambda: queue.counts()["done"] == 450, 60,
                   what=lambda: f"450 queue rows done: {dict(queue.counts())}; "
                                f"outbox {outbox.status_counts()}; {host.describe()}")
        wait_until(lambda: outbox.status_counts().get("dead") == 1, 30,
                   what=lambda: f"the unknown exchange's row dead: {outbox.status_counts()}")
        assert host.terminate() == 0, host.describe()

        assert outbox.status_counts() == {"sent": 300, "dead": 1}
        error = outbox.scalar("SELECT last_error FROM warren_outbox WHERE message_id = 'lost-1'")
        assert "nowhere" in error, error
        assert queue.counts() == Counter({"done": 450})
        assert queue.content_types() == {"application/json"}  # the outbox column's default
        calls = Counter((r.worker, r.message_id) for r in record.records())
        assert max(calls.values()) == 1, [k for k, n in calls.items() if n > 1][:5]
        billing = {m for w, m in calls if w == "billing"}
        shipping = {m for w, m in calls if w == "shipping"}
        assert billing == {f"ev-{n}" for n in range(1, 301)}
        assert shipping == {f"ev-{n}" for n in range(2, 301, 2)}
