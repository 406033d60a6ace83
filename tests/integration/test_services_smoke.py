"""The test services themselves work as the integration tests expect: the private broker round-trips
messages with their ids and reports counts through rabbitmqctl, a broker restart keeps durable data,
and PostgreSQL answers in the test database. Needs no warren binary: when these fail, the problem is
the environment (scripts/services/*.sh), not Warren."""

from warren_testkit import unique_name


def test_Broker_PublishedMessages_AreCountedThenDrainedInOrderWithTheirTestIds(broker):
    queue = broker.declare_queue(unique_name("smoke"), durable=False, auto_delete=False)
    try:
        ids = broker.publish_many("", queue, 3, prefix="smoke", headers={"x-origin": "smoke"})

        assert broker.queue_counts(queue) == (3, 0)
        messages = broker.drain(queue, expect=3)

        assert [m.message_id for m in messages] == ids
        assert [m.test_id for m in messages] == ids
        assert [m.text for m in messages] == ids
        assert all(m.headers["x-origin"] == "smoke" for m in messages)
        assert broker.message_count(queue) == 0
    finally:
        broker.delete_queue(queue)


def test_Broker_Restart_KeepsDurableQueueAndPersistentMessage(broker):
    queue = broker.declare_queue(unique_name("smoke-restart"), durable=True)
    try:
        [message_id] = broker.publish_many("", queue, 1, prefix="persistent")

        broker.restart_broker()

        assert broker.message_count(queue) == 1
        survivor = broker.get(queue)
        assert survivor is not None and survivor.message_id == message_id
    finally:
        broker.delete_queue(queue)


def test_Broker_CloseAllConnections_KitReconnectsOnNextUse(broker):
    queue = broker.declare_queue(unique_name("smoke-close"), durable=False)
    try:
        broker.close_all_connections("smoke test")

        broker.publish("", queue, b"after reconnect")

        assert broker.get(queue).body == b"after reconnect"
    finally:
        broker.delete_queue(queue)


def test_Postgres_TestDatabase_RoundTripsARow(pg):
    with pg.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        assert cursor.fetchone() == ("warren_test",)
        cursor.execute("CREATE TEMPORARY TABLE smoke (id text PRIMARY KEY, payload jsonb)")
        cursor.execute("INSERT INTO smoke VALUES (%s, %s)", ("a", '{"n": 1}'))
        cursor.execute("SELECT payload->>'n' FROM smoke WHERE id = 'a'")
        assert cursor.fetchone() == ("1",)
