"""The outbox relay in `warren run` against real PostgreSQL and RabbitMQ: rows reach the broker
once each even with three relays on one table, a row committed late (an hour older than rows
relayed before it) is not skipped, and a row the broker returns is retried with backoff, dies
after max_attempts without ever being marked sent, and comes back with `warren outbox
retry-dead`. Each test has a schema of its own (search_path)."""

import time

import pytest

from test_outbox_kit import OutboxSchema, collect_ids, insert_order_events, outbox_toml
from testkit_metrics import MetricMissing, scrape, total
from warren_testkit import free_port, require_services, unique_name, wait_until, warren_cli


@pytest.fixture
def schema():
    require_services("rabbitmq", "postgres", "warren")
    created = OutboxSchema()
    yield created
    created.close()


@pytest.fixture
def topology(broker):
    """A topic exchange and a durable classic queue bound to `pedido.#` on it."""
    exchange = unique_name("outbox-ex")
    queue = unique_name("outbox-q")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(queue, queue_type="classic")
    broker.bind_queue(queue, exchange, "pedido.#")
    yield exchange, queue
    broker.delete_queue(queue)
    broker.delete_exchange(exchange)


def relay_config(schema, exchange, *, host_name="relay", outbox_name="orders", metrics_port=None,
                 **outbox):
    settings = {"name": outbox_name, "dsn": schema.dsn, "exchange": exchange, "batch": 50,
                "poll_interval": "200ms", **outbox}
    return outbox_toml(name=host_name, exchanges=[{"name": exchange, "type": "topic"}],
                       outboxes=[settings], log_level="debug", metrics_port=metrics_port)


def start_relay(warren, tmp_path, text, label="relay"):
    path = tmp_path / f"{label}.toml"
    path.write_text(text)
    process = warren(text, name=label, ready_log=r"host '.*' running")
    process.wait_ready(timeout=30)
    return process, path


def test_OutboxInit_RunTwice_SucceedsAndCreatesBothTables(schema, topology, tmp_path):
    config = tmp_path / "warren.toml"
    config.write_text(relay_config(schema, topology[0]))

    first = schema.init(config)
    second = schema.init(config)

    assert "warren_outbox and warren_inbox are ready" in first.stdout
    assert second.returncode == 0
    assert schema.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = %s "
                         "AND tablename IN ('warren_outbox', 'warren_inbox')", (schema.name,)) == 2


# slow: SKIP LOCKED between processes; each relay runs the code of the single-relay tests.
@pytest.mark.slow
def test_ThreeRelaysOnOneTable_PublishEveryRowExactlyOnce(schema, topology, warren, tmp_path):
    exchange, queue = topology
    config = tmp_path / "warren.toml"
    config.write_text(relay_config(schema, exchange))
    schema.init(config)
    relays = [start_relay(warren, tmp_path, relay_config(schema, exchange, host_name=f"relay-{i}",
                                                         batch=20), f"relay-{i}")[0]
              for i in range(3)]

    ids = []
    for chunk in range(10):  # 6,000 rows, committed while the three relays compete for them
        ids += insert_order_events(schema, 600, exchange=exchange, first_order=chunk * 600 + 1)
        time.sleep(0.1)
    wait_until(lambda: schema.status_counts().get("sent") == len(ids), 120,
               what=lambda: f"every row sent (status: {schema.status_counts()})")

    received = collect_ids(queue, expect=len(ids))
    assert set(received) == set(ids)
    duplicates = {i: n for i, n in received.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} rows published more than once: {list(duplicates)[:5]}"
    # Every relay took part: the rows were really contended.
    for relay in relays:
        assert "claimed" in relay.logs(), f"relay did not relay anything: {relay.describe()}"


def test_RowCommittedAnHourAfterLaterRowsWereRelayed_IsStillPublished(schema, topology, warren,
                                                                      tmp_path):
    exchange, queue = topology
    config = tmp_path / "warren.toml"
    config.write_text(relay_config(schema, exchange))
    schema.init(config)
    start_relay(warren, tmp_path, relay_config(schema, exchange))

    from warren_testkit import pg_connect
    slow = pg_connect(schema.dsn, autocommit=False)
    with slow.cursor() as cursor:
        # A transaction that has been open for an hour: its row is older than any row committed
        # meanwhile, older than any look-back window a relay might keep behind the newest row.
        cursor.execute(
            "SELECT warren_outbox_enqueue(%s, 'pedido.registrado', convert_to('{}', 'UTF8'), "
            "'{}', 'late-row')", (exchange,))
        cursor.execute("UPDATE warren_outbox SET created_at = created_at - interval '1 hour' "
                       "WHERE message_id = 'late-row'")
    later_ids = []
    for _ in range(5):  # later rows commit, and are relayed, while it is still open
        later_ids += insert_order_events(schema, 5, exchange=exchange,
                                         first_order=len(later_ids) + 1)
        wait_until(lambda: schema.scalar(
            "SELECT count(*) FROM warren_outbox WHERE status = 'sent'") == len(later_ids), 30,
            what=f"the {len(later_ids)} later rows sent")
    slow.commit()
    slow.close()

    wait_until(lambda: schema.scalar(
        "SELECT status FROM warren_outbox WHERE message_id = 'late-row'") == "sent", 15,
        what="the late row sent")
    received = collect_ids(queue, expect=len(later_ids) + 1)
    assert received["late-row"] == 1
    assert set(received) == set(later_ids) | {"late-row"}
    assert schema.scalar("SELECT created_at < min_later - interval '59 minutes' "
                         "FROM warren_outbox, "
                         "(SELECT min(created_at) AS min_later FROM warren_outbox "
                         " WHERE message_id <> 'late-row') AS later "
                         "WHERE message_id = 'late-row'"), "the late row is the oldest one"


def test_UnroutableRow_IsRetriedWithBackoffThenDeadAndNeverMarkedSent(schema, topology, warren,
                                                                       tmp_path, broker):
    exchange, queue = topology
    port = free_port()
    text = relay_config(schema, exchange, metrics_port=port, max_attempts=4,
                        poll_interval="50ms", backoff={"initial": "300ms", "max": "10s"})
    config = tmp_path / "warren.toml"
    config.write_text(text)
    schema.init(config)
    relay, _ = start_relay(warren, tmp_path, text)

    inserted = time.monotonic()
    schema.query("SELECT warren_outbox_enqueue(%s, 'nobody.listens', convert_to('{}', 'UTF8'), "
                 "'{}', 'unroutable-1')", (exchange,))
    wait_until(lambda: schema.scalar(
        "SELECT status FROM warren_outbox WHERE message_id = 'unroutable-1'") == "dead", 30,
        what="the unroutable row dead")
    took = time.monotonic() - inserted

    status, attempts, last_error, published_at = schema.query(
        "SELECT status, attempts, last_error, published_at FROM warren_outbox "
        "WHERE message_id = 'unroutable-1'")[0]
    assert (status, attempts, published_at) == ("dead", 4, None)
    assert "returned" in last_error and "NO_ROUTE" in last_error, last_error
    # Three waits between the four attempts: 300 + 600 + 1200 ms.
    assert took >= 2.1, f"dead after {took:.2f}s: the backoff was not honoured"
    assert len(relay.logs().split("not published (attempt")) - 1 == 3
    assert "is dead after 4 failed attempt(s)" in relay.logs()
    assert broker.message_count(queue) == 0

    def dead_gauge():
        return total(scrape(f"127.0.0.1:{port}"), "warren_outbox_dead", outbox="orders") == 1
    wait_until(dead_gauge, 15, ignore=(MetricMissing,),
               what="warren_outbox_dead{outbox=\"orders\"} == 1")

    status_output = warren_cli("outbox", "status", "-c", str(config))
    assert status_output.returncode == 0, status_output.stderr
    assert status_output.stdout.splitlines()[1].split()[:3] == ["orders", "0", "1"]

    # The operator fixes the cause (a queue for the key), then revives the row: it is published.
    broker.bind_queue(queue, exchange, "nobody.listens")
    revived = warren_cli("outbox", "retry-dead", "-c", str(config))
    assert revived.returncode == 0, revived.stderr
    assert "1 dead row(s) set back to pending" in revived.stdout
    wait_until(lambda: schema.scalar(
        "SELECT status FROM warren_outbox WHERE message_id = 'unroutable-1'") == "sent", 15,
        what="the revived row sent")
    assert collect_ids(queue, expect=1, settle=1) == {"unroutable-1": 1}


def test_RowForAMissingExchange_DiesWithoutHoldingUpTheRowsBehindIt(schema, topology, warren,
                                                                    tmp_path, broker):
    exchange, queue = topology
    text = relay_config(schema, exchange, max_attempts=3, poll_interval="50ms",
                        backoff={"initial": "200ms", "max": "1s"})
    config = tmp_path / "warren.toml"
    config.write_text(text)
    schema.init(config)
    relay, _ = start_relay(warren, tmp_path, text)

    # The broken row is the oldest: it is at the head of every claim until it is out of the way.
    schema.query("SELECT warren_outbox_enqueue('no.such.exchange', 'pedido.registrado', "
                 "convert_to('{}', 'UTF8'), '{}', 'to-nowhere')")
    ids = insert_order_events(schema, 20, exchange=exchange)

    wait_until(lambda: schema.status_counts() == {"sent": 20, "dead": 1}, 30,
               what=lambda: f"20 rows sent and one dead ({schema.status_counts()})")
    attempts, last_error = schema.query(
        "SELECT attempts, last_error FROM warren_outbox WHERE message_id = 'to-nowhere'")[0]
    assert attempts == 3
    assert "no exchange 'no.such.exchange'" in last_error
    assert set(collect_ids(queue, expect=20, settle=1)) == set(ids)


SESSIONS_TO_KILL = 10


def test_PostgresConnectionsKilledWhileRelaying_RelayReconnectsAndLosesNothing(schema, topology,
                                                                               warren, tmp_path):
    exchange, queue = topology
    outbox_name = unique_name("pgkill").replace("-", "_")
    text = relay_config(schema, exchange, outbox_name=outbox_name, batch=20)
    config = tmp_path / "warren.toml"
    config.write_text(text)
    schema.init(config)
    relay, _ = start_relay(warren, tmp_path, text)
    ids = insert_order_events(schema, 3000, exchange=exchange)

    terminated = 0

    def all_sent() -> bool:
        return schema.status_counts() == {"sent": len(ids)}

    def killed_enough_or_all_sent() -> bool:
        nonlocal terminated
        # Whatever the relay's sessions are doing: claiming, publishing with locks held, marking.
        terminated += schema.scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s", (f"warren outbox relay {outbox_name}",))
        return terminated >= SESSIONS_TO_KILL or all_sent()

    # A budget of kills, not of time: on a busy machine the relay may relay less between two kills
    # than on an idle one, and endless kills would leave it no time to finish.
    wait_until(killed_enough_or_all_sent, 120, interval=0.3,
               what=lambda: f"{SESSIONS_TO_KILL} relay sessions killed (so far {terminated}) or "
                            f"every row sent ({schema.status_counts()})")
    wait_until(all_sent, 120, what=lambda: f"every row sent ({schema.status_counts()})")

    assert terminated >= 2, "the relay's connections were never killed: the test proved nothing"
    assert set(collect_ids(queue, expect=len(ids))) == set(ids)
    assert relay.running() and "connected to PostgreSQL" in relay.logs()
    assert relay.logs().count("connected to PostgreSQL") > 2  # it did reconnect


def test_OutboxCommands_UnknownOutboxOrMissingTable_ExitWithAdvice(schema, topology, tmp_path):
    config = tmp_path / "warren.toml"
    config.write_text(relay_config(schema, topology[0]))

    unknown = warren_cli("outbox", "status", "-c", str(config), "--outbox", "nope")
    assert unknown.returncode == 2
    assert "no [[outbox]] named 'nope'" in unknown.stderr

    missing = warren_cli("outbox", "status", "-c", str(config))
    assert missing.returncode == 1
    assert "warren outbox init" in missing.stderr
