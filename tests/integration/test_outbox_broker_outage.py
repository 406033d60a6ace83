"""The broker stopped for 30 s while the relay relays a steady stream of rows: the rows wait in the
table (none marked sent while no confirm can come, none counted as a failed attempt, so none dies
even with max_attempts = 3), then drain once the broker is back, and every row marked sent is on
the (durable) queue: nothing was marked sent without the broker's confirm."""

import threading
import time

import pytest

from test_outbox_kit import OutboxSchema, collect_ids, insert_order_events, outbox_toml
from warren_testkit import WarrenProcess, require_services, unique_name, wait_until


@pytest.fixture
def schema():
    require_services("rabbitmq", "postgres", "warren")
    created = OutboxSchema()
    yield created
    created.close()


def test_BrokerStoppedThirtySeconds_RowsWaitThenDrainAndNoneIsSentWithoutAConfirm(
        schema, broker, tmp_path):
    exchange = unique_name("outage-ex")
    queue = unique_name("outage-q")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(queue, queue_type="classic")
    broker.bind_queue(queue, exchange, "pedido.#")
    text = outbox_toml(
        name="relay", exchanges=[{"name": exchange, "type": "topic"}],
        broker={"publish_timeout": "2s", "reconnect_initial": "200ms", "reconnect_max": "2s"},
        outboxes=[{"name": "orders", "dsn": schema.dsn, "exchange": exchange, "batch": 50,
                   "poll_interval": "200ms", "max_attempts": 3,
                   "backoff": {"initial": "100ms", "max": "1s"}}])
    config = tmp_path / "warren.toml"
    config.write_text(text)
    schema.init(config)
    relay = WarrenProcess(text, name="relay", ready_log=r"host '.*' running").start()

    ids = []
    stop_inserting = threading.Event()

    def insert_steadily():  # 20 rows every 100 ms, for the whole outage and after
        while not stop_inserting.is_set():
            ids.extend(insert_order_events(schema_for_thread, 20, exchange=exchange,
                                           first_order=len(ids) + 1))
            time.sleep(0.1)

    schema_for_thread = schema.another_connection()
    inserter = threading.Thread(target=insert_steadily, daemon=True)
    passed = False
    try:
        relay.wait_ready(timeout=30)
        inserter.start()
        wait_until(lambda: schema.status_counts().get("sent", 0) >= 200, 30,
                   what="the relay to be relaying")

        broker.stop_broker()
        time.sleep(2)  # confirms that were already on their way have arrived or never will
        sent_when_stopped = schema.status_counts().get("sent", 0)
        samples = []
        outage_started = time.monotonic()
        while time.monotonic() - outage_started < 28:
            time.sleep(4)
            samples.append(schema.status_counts())
        broker.start_broker()
        stopped_for = time.monotonic() - outage_started + 2

        assert all(s.get("sent", 0) == sent_when_stopped for s in samples), (
            f"rows were marked sent while the broker was down: {sent_when_stopped} then {samples}")
        assert samples[-1].get("pending", 0) > samples[0].get("pending", 0), "rows kept coming"
        assert all(s.get("dead", 0) == 0 for s in samples)
        assert stopped_for >= 30

        time.sleep(2)
        stop_inserting.set()
        inserter.join()
        wait_until(lambda: schema.status_counts() == {"sent": len(ids)}, 90,
                   what=lambda: f"every row sent after the outage ({schema.status_counts()})")
        assert schema.scalar("SELECT max(attempts) FROM warren_outbox") == 0, \
            "the outage was counted as failed attempts"

        received = collect_ids(queue, expect_at_least=len(ids), idle_timeout=2)
        missing = set(ids) - set(received)
        assert not missing, f"{len(missing)} rows marked sent are not on the broker"
        assert relay.running(), relay.describe()
        passed = True
    finally:
        stop_inserting.set()
        schema_for_thread.close()
        if not passed:
            print(f"\n----- {relay.workdir} -----\n{relay.describe(tail_lines=60)}")
        relay.cleanup(keep_files=not passed)
