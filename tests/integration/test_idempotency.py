"""Idempotent workers (`idempotency = { store = "postgres", dsn, retention }`) against real
PostgreSQL and RabbitMQ, with the `scripted` test plugin counting handler calls: a message id seen
before is acked without calling the handler and counted in warren_messages_duplicates_total; a
failed attempt is not recorded (the retry runs the handler); rows older than `retention` are
pruned; a store that cannot be reached degrades to at-least-once instead of stopping the worker."""

import pytest

from test_outbox_kit import OutboxSchema, outbox_toml
from testkit_metrics import MetricMissing, scrape, total
from warren_testkit import (RecordFile, WarrenProcess, env, failed_so_far, free_port,
                            require_services, unique_name, wait_until)


@pytest.fixture
def schema():
    require_services("rabbitmq", "postgres", "warren")
    created = OutboxSchema()
    yield created
    created.close()


class IdempotentWorker:
    """A `warren run` with one scripted worker named "orders" on its own classic queue."""

    def __init__(self, schema, broker, tmp_path, *, dsn=None, retention="1h", **worker):
        self.broker = broker
        self.queue = broker.declare_queue(unique_name("idem-q"), queue_type="classic")
        self.records = RecordFile(tmp_path / "records.tsv")
        self.port = free_port()
        text = outbox_toml(
            name="idempotent", metrics_port=self.port,
            queues=[{"name": self.queue, "type": "classic", "allow_message_loss": True}],
            workers=[{"name": "orders", "plugin": "scripted", "queue": self.queue,
                      "concurrency": 1,
                      "idempotency": {"store": "postgres", "dsn": dsn or schema.dsn,
                                      "retention": retention},
                      "settings": {"record_file": str(self.records)}, **worker}])
        config = tmp_path / "warren.toml"
        config.write_text(text)
        if dsn is None:
            schema.init(config)
        self.process = WarrenProcess(text, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"),
                                     name="idempotent").start()
        self.process.wait_ready(timeout=30)

    def publish(self, message_id, action="ack"):
        self.broker.publish("", self.queue, b"{}", message_id=message_id,
                            headers={"x-test-action": action})

    def metric(self, name, **labels):
        return total(scrape(f"127.0.0.1:{self.port}"), name, **labels)

    def wait_settled(self, count):
        wait_until(lambda: self.metric("warren_messages_settled_total", worker="orders",
                                       outcome="ack") >= count, 30, ignore=(MetricMissing,),
                   what=f"{count} acked messages")

    def stop(self, failed: bool):
        if failed:
            print(f"\n----- {self.process.workdir} -----\n{self.process.describe(tail_lines=60)}")
        try:
            self.process.cleanup(keep_files=failed)
        finally:
            self.broker.delete_queue(self.queue)


@pytest.fixture
def idempotent_worker(request, schema, broker, tmp_path):
    workers = []

    def start(**kwargs):
        worker = IdempotentWorker(schema, broker, tmp_path, **kwargs)
        workers.append(worker)
        return worker

    yield start
    failed = failed_so_far(request)
    for worker in workers:
        worker.stop(failed)


def test_SameMessageIdThreeTimes_HandlerRunsOnceAndTwoDuplicatesAreCountedAndAcked(
        idempotent_worker, schema):
    worker = idempotent_worker()
    for _ in range(3):
        worker.publish("evt-1")
    worker.publish("evt-2")

    worker.wait_settled(4)

    assert worker.records.count_by_id() == {"evt-1": 1, "evt-2": 1}
    assert worker.metric("warren_messages_duplicates_total", worker="orders") == 2
    assert worker.broker.queue_counts(worker.queue) == (0, 0)
    assert sorted(schema.query("SELECT message_id FROM warren_inbox WHERE worker = 'orders'")) == [
        ("evt-1",), ("evt-2",)]


def test_FailedAttempt_IsNotRecordedSoTheRetryRunsTheHandler(idempotent_worker, schema):
    worker = idempotent_worker(retry={"max_attempts": 3, "backoff": "fixed", "initial": "100ms",
                                      "immediate": 0})
    worker.publish("evt-flaky", action="fail_until:2")
    worker.wait_settled(1)

    assert [r.attempt for r in worker.records.records()] == [1, 2]
    assert schema.scalar("SELECT count(*) FROM warren_inbox WHERE message_id = 'evt-flaky'") == 1

    worker.publish("evt-flaky", action="fail_until:2")  # a duplicate of the processed message
    worker.wait_settled(2)
    assert len(worker.records.records()) == 2
    assert worker.metric("warren_messages_duplicates_total", worker="orders") == 1


def test_RowsOlderThanRetention_ArePrunedAndTheIdIsHandledAgain(idempotent_worker, schema):
    worker = idempotent_worker(retention="2s")
    worker.publish("evt-old")
    worker.wait_settled(1)
    assert schema.scalar("SELECT count(*) FROM warren_inbox WHERE worker = 'orders'") == 1

    wait_until(lambda: schema.scalar(
        "SELECT count(*) FROM warren_inbox WHERE worker = 'orders'") == 0, 10,
        what="the processed-message row pruned after its 2 s retention")
    worker.publish("evt-old")
    worker.wait_settled(2)
    assert worker.records.count_by_id() == {"evt-old": 2}


def test_StoreUnreachable_MessagesAreStillHandledAndTheProblemIsLogged(idempotent_worker, schema):
    worker = idempotent_worker(dsn=f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere"
                                   "?connect_timeout=1")
    worker.publish("evt-1")
    worker.publish("evt-1")
    worker.wait_settled(2)

    assert worker.records.count_by_id() == {"evt-1": 2}  # at-least-once, not stuck
    logs = worker.process.logs()
    assert "idempotency store" in logs and "cannot connect to PostgreSQL" in logs
    assert "handling the message anyway" in logs
