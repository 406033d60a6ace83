"""Warren survives the broker and itself failing mid-stream without losing a message: the broker
closing every connection, the broker restarting, and warren being killed with messages in flight.
Consumers resume within 30 s, every id is handled, and the only ids handled twice are ones whose
handler ran before the failure but whose ack never landed (at most prefetch per worker). The
outbox relay's publisher, too, reconnects when the broker closes its connection mid-relay: every
row is sent, none pays an attempt for it, and only rows the broker never confirmed go out twice.

Each stream is a pre-filled durable quorum queue of persistent messages whose handler sleeps a few
milliseconds, so it lasts several seconds and the fault lands in the middle of it (each test
asserts that it did)."""

import re
from typing import List

import pytest

from test_outbox_kit import OutboxSchema, RelayLog, collect_ids, insert_order_events, outbox_toml
from testkit_broker_state import CloseConnectionsTrigger
from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import cli_environment, quorum_queue, scripted_worker, warren_config, \
    warren_options
from testkit_traffic import Tally, publish_bulk, wait_for_ready
from warren_testkit import WarrenProcess, require_services, unique_name, wait_until, warren_cli

MESSAGES = 5000
PREFETCH = 100
CONCURRENCY = 4
# 4 handlers x 4 ms: at most ~1,000 messages a second, so 5,000 last at least 5 s.
SLOW_ACTION = "sleep:4"
RESUME_WITHIN = 30


def prepare_stream(broker, created, record_file, tmp_path, name: str, queues: int = 1):
    """Declares QUEUES quorum queues (through `warren topology apply` on the test's config) with a
    worker each, fills each with MESSAGES // QUEUES slow messages, and returns (config, queue
    names, ids)."""
    names = [created.queue(f"{name}{index}") for index in range(queues)]
    config = warren_config(
        queues=[quorum_queue(queue) for queue in names],
        workers=[scripted_worker(queue, queue, record_file, prefetch=PREFETCH,
                                 concurrency=CONCURRENCY) for queue in names])
    path = tmp_path / "warren.toml"
    path.write_text(config)
    applied = warren_cli("topology", "apply", "-c", str(path), env_overrides=cli_environment())
    assert applied.returncode == 0, f"{applied.stdout}{applied.stderr}"
    ids: List[str] = []
    for queue in names:
        ids += publish_bulk("", queue, MESSAGES // queues, prefix=name,
                            headers={"x-test-action": SLOW_ACTION})
        wait_for_ready(broker, queue, MESSAGES // queues)
    return config, names, ids


def consuming_lines(process: WarrenProcess) -> int:
    """How many times warren has logged that its workers are consuming (once per connect)."""
    return len(re.findall(r"worker\(s\) consuming", process.logs()))


def wait_for_all(broker, process: WarrenProcess, record_file, queues: List[str], ids: List[str],
                 timeout: float = 90) -> Tally:
    def done():
        if not process.running():
            raise AssertionError(f"warren exited: {process.describe()}")
        return (Tally.of(ids, record_file.ids()).complete
                and all(broker.message_count(queue) == 0 for queue in queues))

    wait_until(done, timeout, interval=0.2, what=lambda: Tally.of(ids, record_file.ids()).summary())
    return Tally.of(ids, record_file.ids())


def test_CloseAllConnections_MidStream_ConsumersResumeAndEveryIdIsHandled(
        broker, created, warren, record_file, tmp_path):
    config, [queue], ids = prepare_stream(broker, created, record_file, tmp_path, "res-close")
    # `rabbitmqctl close_all_connections`, fired from inside the node once 1,000 messages have
    # left the queue (a rabbitmqctl started "now" may land seconds later, after the stream).
    reason = unique_name("closed mid-stream by the integration test")
    trigger = CloseConnectionsTrigger(broker, queue, ready_at_most=len(ids) - 1000,
                                      reason=reason).arm()
    process = warren(config, **warren_options())
    try:
        process.wait_for_log(re.escape(reason), timeout=60)
    except AssertionError:
        trigger.disarm()
        raise
    handled_at_close = len(record_file.records())
    broker.reconnect()  # the trigger closed the kit's own connection too

    assert handled_at_close < len(ids), "the stream ended before the fault: slow it down"
    # Fails the test unless warren consumes again within RESUME_WITHIN of the close.
    wait_until(lambda: consuming_lines(process) >= 2, RESUME_WITHIN,
               what=lambda: f"warren consuming again after the close: {process.describe()}")
    tally = wait_for_all(broker, process, record_file, [queue], ids)
    assert process.terminate() == 0, process.describe()

    assert not tally.lost and not tally.unexpected, tally.summary()
    assert len(tally.duplicated) <= PREFETCH, tally.summary()
    assert consuming_lines(process) == 2, f"one fault, one reconnect: {process.describe()}"


# slow: under ASan, test_CloseAllConnections runs the same reconnect with deliveries in flight.
@pytest.mark.slow
def test_BrokerRestart_MidStream_ConsumersResumeAndEveryIdIsHandled(
        broker, created, warren, record_file, tmp_path):
    config, [queue], ids = prepare_stream(broker, created, record_file, tmp_path, "res-restart")
    process = warren(config, **warren_options())
    record_file.wait_for_count(500, timeout=60)

    broker.stop_broker()
    handled_while_up = len(record_file.records())
    broker.start_broker()

    assert handled_while_up < len(ids), "the stream ended before the broker stopped"
    # Fails the test unless warren consumes again within RESUME_WITHIN of the broker's start.
    wait_until(lambda: consuming_lines(process) >= 2, RESUME_WITHIN,
               what=lambda: f"warren consuming again after the restart: {process.describe()}")
    tally = wait_for_all(broker, process, record_file, [queue], ids)
    assert process.terminate() == 0, process.describe()

    assert not tally.lost and not tally.unexpected, tally.summary()
    assert len(tally.duplicated) <= PREFETCH, tally.summary()
    assert consuming_lines(process) == 2, f"one restart, one reconnect: {process.describe()}"


# slow: a killed process has nothing for ASan to check; the restart is an ordinary start.
@pytest.mark.slow
def test_Kill9_WithMessagesInFlight_RestartHandlesEveryIdAndDuplicatesOnlyInFlightOnes(
        broker, created, warren, record_file, tmp_path):
    config, queues, ids = prepare_stream(broker, created, record_file, tmp_path, "res-kill",
                                         queues=2)
    first = warren(config, **warren_options())
    wait_until(lambda: all(sum(1 for r in record_file.records() if r.worker == queue) >= 200
                           for queue in queues), 60, what="200 records from each worker")

    first.kill9()
    before_kill = record_file.records()

    assert len(before_kill) < len(ids), "the stream ended before the kill"
    second = warren(config, **warren_options())
    tally = wait_for_all(broker, second, record_file, queues, ids)
    assert second.terminate() == 0, second.describe()

    assert not tally.lost and not tally.unexpected, tally.summary()
    handled_before_kill = {r.message_id for r in before_kill}
    assert set(tally.duplicated) <= handled_before_kill, \
        f"ids handled twice that no handler had seen before the kill: " \
        f"{sorted(set(tally.duplicated) - handled_before_kill)[:10]}"
    assert len(tally.duplicated) <= PREFETCH * len(queues), tally.summary()
    assert all(count == 2 for count in tally.duplicated.values()), tally.summary()


# ---- the outbox relay's publisher -----------------------------------------------------------------
OUTBOX_ROWS = 4000


def test_OutboxRelay_BrokerClosesItsConnectionMidRelay_ItReconnectsAndEveryRowIsSent(
        broker, created, warren, tmp_path):
    require_services("rabbitmq", "postgres", "warren")
    exchange, queue = created.exchange("res-outbox-ex"), created.queue("res-outbox-q")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(queue, queue_type="classic")
    broker.bind_queue(queue, exchange, "pedido.#")
    schema = OutboxSchema()
    try:
        # Debug log: the relay names each batch's rows and says which the broker never answered.
        text = outbox_toml(
            name="relay", exchanges=[{"name": exchange, "type": "topic"}], log_level="debug",
            broker={"reconnect_initial": "200ms", "reconnect_max": "1s"},
            outboxes=[{"name": "orders", "dsn": schema.dsn, "exchange": exchange, "batch": 20,
                       "poll_interval": "200ms", "max_attempts": 3,
                       "backoff": {"initial": "100ms", "max": "1s"}}])
        config = tmp_path / "relay.toml"
        config.write_text(text)
        schema.init(config)
        ids = insert_order_events(schema, OUTBOX_ROWS, exchange=exchange)
        # Fired from inside the node once a quarter of the rows reached the queue (the relay
        # relays thousands a second: a rabbitmqctl started "now" would land after the last row).
        reason = unique_name("closed mid-relay by the integration test")
        trigger = CloseConnectionsTrigger(broker, queue, reason,
                                          ready_at_least=OUTBOX_ROWS // 4).arm()
        relay = warren(text, name="relay", ready_log=r"host '.*' running")
        try:
            relay.wait_for_log(re.escape(reason), timeout=60)
        except AssertionError:
            trigger.disarm()
            raise
        broker.reconnect()  # the trigger closed the kit's own connection too

        wait_until(lambda: schema.status_counts() == {"sent": len(ids)}, 90, interval=0.2,
                   what=lambda: f"every row sent after the close ({schema.status_counts()}): "
                                f"{relay.describe()}")
        logs = relay.logs()
        assert relay.running(), relay.describe()
        after_close = logs[logs.index(reason):]
        assert re.search(r"publisher: .*; reconnecting", after_close), relay.describe()
        assert "publisher connected to" in after_close, relay.describe()
        after_reconnect = after_close[after_close.index("publisher connected to"):]
        assert re.search(r"batch \d+ claimed", after_reconnect), \
            "no row was left to relay after the reconnect: the close came too late"
        # A lost connection is not a failed publish: no row paid an attempt for it.
        assert schema.scalar("SELECT max(attempts) FROM warren_outbox") == 0

        received = collect_ids(queue, expect=len(ids), settle=2)
        assert set(received) == set(ids), f"missing: {len(set(ids) - set(received))} rows"
        # Twice only if the connection went before the broker's confirm came back.
        duplicates = {i for i, n in received.items() if n > 1}
        unanswered = RelayLog.parse(logs).left_pending_unconfirmed()
        assert duplicates <= unanswered, (f"{len(duplicates - unanswered)} rows delivered twice "
                                          f"that the broker had confirmed: "
                                          f"{sorted(duplicates - unanswered)[:5]}")
        assert max(received.values()) == (2 if duplicates else 1), received.most_common(3)
    finally:
        schema.close()
