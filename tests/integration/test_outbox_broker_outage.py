"""The broker stopped for 30 s while the relay relays a steady stream of rows: the rows wait in the
table (none marked sent while no confirm can come, none counted as a failed attempt, so none dies
even with max_attempts = 3), then drain once the broker is back, and every row marked sent is on
the (durable) queue: nothing was marked sent without the broker's confirm."""

import re
import threading
import time

import pytest

from test_outbox_kit import OutboxSchema, RelayLog, collect_ids, insert_order_events, outbox_toml
from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from warren_testkit import WarrenProcess, require_services, wait_until


@pytest.fixture
def schema():
    require_services("rabbitmq", "postgres", "warren")
    created = OutboxSchema()
    yield created
    created.close()


OUTAGE = 30.0  # seconds the broker stays down


def test_BrokerStoppedThirtySeconds_RowsWaitThenDrainAndNoneIsSentWithoutAConfirm(
        schema, broker, created, tmp_path):
    exchange = created.exchange("outage-ex")
    queue = created.queue("outage-q")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(queue, queue_type="classic")
    broker.bind_queue(queue, exchange, "pedido.#")
    # Debug log: the relay names each batch when claimed and when committed or rolled back
    # (RelayLog), so the test knows when no batch is left in flight.
    text = outbox_toml(
        name="relay", exchanges=[{"name": exchange, "type": "topic"}], log_level="debug",
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
            stop_inserting.wait(0.1)

    def publisher_disconnects() -> int:
        return len(re.findall(r"publisher: .*; reconnecting", relay.logs()))

    schema_for_thread = schema.another_connection()
    inserter = threading.Thread(target=insert_steadily, daemon=True)
    passed = False
    try:
        relay.wait_ready(timeout=30)
        inserter.start()
        wait_until(lambda: schema.status_counts().get("sent", 0) >= 200, 30,
                   what="the relay to be relaying")

        disconnects_before = publisher_disconnects()
        broker.stop_broker()
        outage_started = time.monotonic()
        # Once the relay has seen the broker go and has no batch between claim and commit, every
        # confirm that came before the stop is recorded: from here on `sent` may not move.
        wait_until(lambda: (publisher_disconnects() > disconnects_before
                            and not RelayLog.parse(relay.logs()).in_flight()), 20, interval=0.1,
                   what=lambda: f"the relay to notice the outage and settle its batches in "
                                f"flight: {relay.describe()}")
        sent_when_stopped = schema.status_counts().get("sent", 0)
        samples = []
        while time.monotonic() - outage_started < OUTAGE:
            time.sleep(0.5)  # the outage itself: sample the table through it
            samples.append(schema.status_counts())
        stopped_for = time.monotonic() - outage_started
        broker.start_broker()

        assert all(s.get("sent", 0) == sent_when_stopped for s in samples), (
            f"rows were marked sent while the broker was down: {sent_when_stopped} then {samples}")
        assert samples[-1].get("pending", 0) > samples[0].get("pending", 0), "rows kept coming"
        assert all(s.get("dead", 0) == 0 for s in samples)
        assert stopped_for >= OUTAGE

        # Rows keep coming until the relay relays again, then stop.
        wait_until(lambda: schema.status_counts().get("sent", 0) > sent_when_stopped, 60,
                   what=lambda: f"the relay to relay again after the outage: {relay.describe()}")
        stop_inserting.set()
        inserter.join()
        wait_until(lambda: schema.status_counts() == {"sent": len(ids)}, 90,
                   what=lambda: f"every row sent after the outage ({schema.status_counts()})")
        assert schema.scalar("SELECT max(attempts) FROM warren_outbox") == 0, \
            "the outage was counted as failed attempts"

        received = collect_ids(queue, expect=len(ids), settle=2)
        missing = set(ids) - set(received)
        assert not missing, f"{len(missing)} rows marked sent are not on the broker"
        assert relay.running(), relay.describe()
        passed = True
    finally:
        stop_inserting.set()
        inserter.join(timeout=30)
        schema_for_thread.close()
        if not passed:
            print(f"\n----- {relay.workdir} -----\n{relay.describe(tail_lines=60)}")
        relay.cleanup(keep_files=not passed)
