"""Retries on a real broker: a failing message is retried in-process, then through the broker's
delay levels (warren.delay.N) with the policy's backoff, and dead-lettered with the reason after its
last attempt; the delays live in the broker, so they survive a kill -9 of the host; and a plugin
that crashes the host on one message is stopped by the quorum queue's delivery limit.

Each test runs the `scripted` test plugin with its own exchange, queue and dead-letter queue, and
accounts for every message id through the plugin's record file (record_time = true adds the
wall-clock time of each call, from which the tests measure the gaps between attempts).
"""

import signal
import textwrap
import time
from collections import defaultdict
from datetime import datetime
from typing import Dict, List

import pytest

from testkit_broker_state import RetriesParkedFlag
from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_metrics import scrape, total
from testkit_traffic import publish_bulk, wait_drained
from warren_testkit import env, free_port, unique_name, wait_until, warren_cli

DELAY_LEVELS = 28  # warren.delay.0 .. warren.delay.27 (host/src/broker/delay_levels.h)
DELAY_LEVEL_QUEUES = [f"warren.delay.{level}" for level in range(DELAY_LEVELS)]


# ---- helpers -------------------------------------------------------------------------------------

class Topology:
    """One test's names: topic exchange -> quorum queue (worker "w") -> fanout dead-letter
    exchange -> dead-letter queue, all deleted after the test (`created`)."""

    def __init__(self, created, prefix: str):
        self.exchange = created.exchange(f"{prefix}-ex")
        self.queue = created.queue(prefix)
        self.dead_letters = created.exchange(f"{prefix}-dlx")
        self.dead_letter_queue = created.queue(f"{prefix}-dlq")
        self.routing_key = "order.created"
        self.metrics_port = free_port()

    def config(self, *, record_file, retry: str, prefetch: int, concurrency: int,
               queue_extra: str = "", worker_extra: str = "") -> str:
        """warren.toml for the `scripted` worker "w" on this topology."""
        return textwrap.dedent(f"""\
            [host]
            name = "retry-test"
            plugin_dir = "{env("WARREN_FIXTURE_PLUGIN_DIR")}"
            shutdown_timeout = "10s"

            [log]
            level = "warn"

            [metrics]
            listen = "127.0.0.1:{self.metrics_port}"

            [broker]
            uri = "{env("WARREN_TEST_AMQP_URI")}"

            [[exchanges]]
            name = "{self.exchange}"
            type = "topic"

            [[exchanges]]
            name = "{self.dead_letters}"
            type = "fanout"

            [[queues]]
            name = "{self.queue}"
            type = "quorum"
            dead_letter_exchange = "{self.dead_letters}"
            bindings = [{{ exchange = "{self.exchange}", routing_key = "order.#" }}]
            {queue_extra}

            [[workers]]
            name = "w"
            plugin = "scripted"
            queue = "{self.queue}"
            prefetch = {prefetch}
            concurrency = {concurrency}
            dead_letter_queue = "{self.dead_letter_queue}"
            retry = {retry}
            {worker_extra}
            [workers.settings]
            record_file = "{record_file}"
            record_time = true
            """)


def start_scripted(warren, config: str, wait_ready: bool = True, **kwargs):
    """A `warren run` of CONFIG with the test plugins (by default waited for until ready); KWARGS
    go to WarrenProcess."""
    process = warren(config, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"), **kwargs)
    if wait_ready:
        process.wait_ready(timeout=60)
    return process


def apply_topology(config: str, tmp_path) -> None:
    config_file = tmp_path / "topology.toml"
    config_file.write_text(config)
    result = warren_cli("topology", "apply", "-c", str(config_file))
    assert result.returncode == 0, result.stdout + result.stderr


def text(value) -> str:
    """A header value as text (pika gives AMQP long strings as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def utc_timestamp(value) -> float:
    """Seconds since the epoch of an x-warren-*-at header ("2025-03-01T12:00:00.123Z")."""
    return datetime.fromisoformat(text(value).replace("Z", "+00:00")).timestamp()


def records_by_id(record_file) -> Dict[str, list]:
    grouped = defaultdict(list)
    for record in record_file.records():
        grouped[record.message_id].append(record)
    return grouped


def messages_in_delay_levels(broker) -> int:
    """Ready messages in all retry delay-level queues (shared by every worker on the broker)."""
    return sum(broker.message_count(queue) for queue in DELAY_LEVEL_QUEUES)


# ---- 1% poison among 10,000 ----------------------------------------------------------------------

MESSAGES = 10_000
POISON_EVERY = 100  # 1%
POISON_RETRY = ('{ max_attempts = 4, backoff = "exponential", initial = "200ms", max = "1s", '
                'jitter = 0.2, immediate = 1 }')
DEAD_LETTER_HEADERS = ("x-warren-error", "x-warren-attempt", "x-warren-worker", "x-warren-queue",
                       "x-warren-original-exchange", "x-warren-original-routing-key",
                       "x-warren-first-failed-at", "x-warren-dead-lettered-at")


def test_Retry_OnePercentPoison_EachTriedMaxAttemptsWithBackoffThenDeadLettered_OthersOnce(
        broker, created, warren, record_file, tmp_path):
    names = Topology(created, "retry-poison")
    config = names.config(record_file=record_file, retry=POISON_RETRY, prefetch=64, concurrency=8)
    apply_topology(config, tmp_path)
    run = unique_name("m")
    ids = [f"{run}-{index:05d}" for index in range(MESSAGES)]
    poison = set(ids[POISON_EVERY // 2::POISON_EVERY])
    healthy = [message_id for message_id in ids if message_id not in poison]
    assert len(poison) == MESSAGES // POISON_EVERY
    # Confirmed, every one: an unconfirmed publish to a quorum queue can be dropped when its channel
    # closes (the count below then never reached 10,000, seen once).
    publish_bulk(names.exchange, names.routing_key, MESSAGES, ids=ids,
                 headers_by_id={message_id: {"x-test-action": "throw"} for message_id in poison})
    wait_until(lambda: broker.message_count(names.queue) == MESSAGES, timeout=60,
               what=lambda: f"{MESSAGES} messages in {names.queue} "
                            f"(has {broker.message_count(names.queue)})")

    host = start_scripted(warren, config)

    def settled():
        acked = sum(1 for r in record_file.records() if r.action == "ack")
        dead_letters = broker.message_count(names.dead_letter_queue)
        return acked >= len(healthy) and dead_letters >= len(poison)

    wait_until(settled, timeout=240, interval=0.25,
               what=lambda: f"{len(healthy)} acks and {len(poison)} dead letters (records: "
                            f"{len(record_file.records())}, dead letters: "
                            f"{broker.message_count(names.dead_letter_queue)})")
    # Attempt 2 ran in-process, at once (immediate = 1): the broker delivered each poison message
    # only for attempts 1, 3 and 4, and only attempts 2 and 3 went to the delay levels. Had the
    # immediate retry gone through the broker, both counts would be len(poison) higher.
    endpoint = f"127.0.0.1:{names.metrics_port}"

    def deliveries_and_retries():
        metrics = scrape(endpoint)
        return (total(metrics, "warren_messages_received_total", worker="w"),
                total(metrics, "warren_messages_settled_total", worker="w", outcome="retry"))

    expected = (MESSAGES + 2 * len(poison), 2 * len(poison))
    wait_until(lambda: deliveries_and_retries() == expected, timeout=30,
               what=lambda: f"(deliveries, broker retries) == {expected}: "
                            f"{deliveries_and_retries()}")
    # All settled: once the host has stopped, nothing may be left unacked or waiting to retry.
    assert host.terminate() == 0, host.describe()
    wait_drained(broker, names.queue)

    calls = records_by_id(record_file)
    assert set(calls) == set(ids), "a message was never handled"
    repeated = {i: [(r.attempt, r.action) for r in calls[i]] for i in healthy if len(calls[i]) != 1}
    assert not repeated, (f"{len(repeated)} healthy message(s) handled more than once, e.g. "
                          f"{dict(list(repeated.items())[:5])}")
    assert all(calls[i][0].attempt == 1 for i in healthy)
    # Each poison message exactly max_attempts times: attempt 2 in-process (immediate = 1: the
    # metrics above), then 3 and 4 through the delay levels, at least 200 ms and 400 ms later
    # (initial 200 ms, exponential; jitter only stretches a delay). Only lower bounds on time: a
    # busy machine makes every gap longer.
    for message_id in sorted(poison):
        attempts = sorted(calls[message_id], key=lambda r: r.attempt)
        assert [r.attempt for r in attempts] == [1, 2, 3, 4], (message_id, attempts)
        t1, t2, t3, t4 = (r.time for r in attempts)
        assert t1 <= t2, f"{message_id}: the immediate retry came before the first attempt"
        assert t3 - t2 >= 0.2, f"{message_id}: attempt 3 came {t3 - t2:.3f}s after attempt 2"
        assert t4 - t3 >= 0.4, f"{message_id}: attempt 4 came {t4 - t3:.3f}s after attempt 3"

    dead = broker.drain(names.dead_letter_queue, expect=len(poison))
    assert sorted(m.message_id for m in dead) == sorted(poison)
    for message in dead:
        headers = message.headers
        missing = [name for name in DEAD_LETTER_HEADERS if name not in headers]
        assert not missing, f"{message.message_id}: the dead letter lacks {missing}: {headers}"
        assert text(headers["x-warren-attempt"]) == "4"
        assert text(headers["x-warren-worker"]) == "w"
        assert text(headers["x-warren-queue"]) == names.queue
        assert text(headers["x-warren-original-exchange"]) == names.exchange
        assert text(headers["x-warren-original-routing-key"]) == names.routing_key
        error = text(headers["x-warren-error"])
        assert "std::runtime_error" in error and "scripted failure" in error, error
        assert "4 attempts" in error, error
        # First failed: attempt 2 went to the delay levels; then >= 200 + 400 ms of delays.
        first_failed = utc_timestamp(headers["x-warren-first-failed-at"])
        dead_lettered = utc_timestamp(headers["x-warren-dead-lettered-at"])
        assert dead_lettered - first_failed >= 0.6 - 0.001, (first_failed, dead_lettered)
        assert message.body.decode() == message.message_id
    # Nothing lost: the dead letters and the acked messages are all the messages, once each.
    acked = {r.message_id for r in record_file.records() if r.action == "ack"}
    assert len(acked) + len(dead) == MESSAGES
    assert acked.isdisjoint(m.message_id for m in dead)


# ---- kill -9 while messages wait in the delay levels ---------------------------------------------

# The retries' delay. The moment to kill the host comes from inside the broker node
# (RetriesParkedFlag), so the test has no rabbitmqctl call to make between the first attempts and
# the kill: 6 s is plenty even on a busy machine.
CRASH_DELAY = 6.0
CRASH_RETRY = ('{ max_attempts = 3, backoff = "fixed", initial = "6s", jitter = 0.0, '
               'immediate = 0 }')


# slow: timing across a kill; under ASan the delay levels are the poison test's.
@pytest.mark.slow
def test_Retry_HostKilledWhileMessagesWaitInDelayLevels_TheyComeBackOnTimeWithAttempt2(
        broker, created, warren, record_file, tmp_path):
    names = Topology(created, "retry-crash")
    config = names.config(record_file=record_file, retry=CRASH_RETRY, prefetch=20, concurrency=4)
    ids_count = 50
    # Fires once the 50 retries wait in the delay levels and the host has acked their first
    # deliveries (the retry is confirmed first, then the ack goes): none will come back.
    parked = RetriesParkedFlag(broker, names.queue, DELAY_LEVEL_QUEUES, ids_count,
                               tmp_path / "parked").arm()
    host = start_scripted(warren, config)
    ids = broker.publish_many(names.exchange, names.routing_key, ids_count, prefix="crash",
                              headers={"x-test-action": "fail_until:2"})

    first = record_file.wait_for_count(len(ids), timeout=30)
    try:
        parked.wait(timeout=CRASH_DELAY)
    except AssertionError:
        parked.disarm()
        raise
    assert host.kill9() == -9
    killed_at = time.time()
    # Nothing comes back to the queue when the dead host's channel goes: every delivery was acked.
    wait_until(lambda: broker.consumer_count(names.queue) == 0, timeout=CRASH_DELAY,
               interval=0.01, what="the killed host's consumer to go")
    assert broker.message_count(names.queue) == 0, "a delivery the host had not acked came back"
    assert messages_in_delay_levels(broker) >= len(ids), "the retries left the delay levels early"
    checked_at = time.time()
    assert sorted(r.message_id for r in first) == sorted(ids)
    earliest_due = min(r.time for r in first) + CRASH_DELAY
    assert checked_at < earliest_due, (f"the checks took too long: they ended "
                                       f"{checked_at - earliest_due:.1f}s after the retries were "
                                       f"due (killed {killed_at - earliest_due:.1f}s before)")
    assert all(r.attempt == 1 for r in record_file.records())

    restarted = start_scripted(warren, config)
    ready_at = time.time()
    wait_until(lambda: sum(1 for r in record_file.records() if r.attempt == 2) >= len(ids),
               timeout=30, what="50 second attempts after the restart")
    assert restarted.terminate() == 0, restarted.describe()
    wait_drained(broker, names.queue)

    calls = records_by_id(record_file)
    assert set(calls) == set(ids)
    for message_id in ids:
        attempts = [(r.attempt, r.action) for r in calls[message_id]]
        assert attempts == [(1, "fail_until:2"), (2, "fail_until:2")], (message_id, attempts)
        failed_at, retried_at = (r.time for r in calls[message_id])
        gap = retried_at - failed_at
        assert gap >= CRASH_DELAY, f"{message_id}: back after {gap:.3f}s, before the 6 s delay"
        # On time: when due, or as soon as the restarted host was ready, give or take the hops
        # through four delay levels (6 s = 60 units = 111100 in binary) and a busy machine.
        due = max(failed_at + CRASH_DELAY, ready_at)
        assert retried_at - due < 2.0, f"{message_id}: back {retried_at - due:.3f}s late"


# ---- abort() in the handler: the delivery limit ends the crash loop ------------------------------

DELIVERY_LIMIT = 5
OTHERS = 200


def test_Retry_HandlerAbortsTheHost_DeliveryLimitDeadLettersItAndEveryOtherMessageIsProcessed(
        broker, created, warren, record_file, tmp_path):
    names = Topology(created, "retry-abort")
    # prefetch 1: the aborting message is the only one unacked when the host dies, so no innocent
    # message is returned (and counted towards the limit) with it. Crash accounting runs (one state
    # directory for every restart), but with max_crashes above the delivery limit: the limit is
    # the backstop, and here it comes first (`warren run` warns about that order).
    config = names.config(record_file=record_file, retry='{ max_attempts = 3, immediate = 0 }',
                          prefetch=1, concurrency=1,
                          queue_extra=f"delivery_limit = {DELIVERY_LIMIT}",
                          worker_extra=f"max_crashes = {DELIVERY_LIMIT + 5}")
    state = {"env_overrides": {"STATE_DIRECTORY": str(tmp_path)}}
    host = start_scripted(warren, config, **state)
    host.allow_death_by(signal.SIGABRT)
    before = broker.publish_many(names.exchange, names.routing_key, OTHERS // 2, prefix="before")
    [crasher] = broker.publish_many(names.exchange, names.routing_key, 1, prefix="abort",
                                    headers={"x-test-action": "abort"})
    after = broker.publish_many(names.exchange, names.routing_key, OTHERS // 2, prefix="after")
    others = set(before + after)

    # A supervisor like systemd's Restart=always: start the host again whenever it dies.
    exit_codes: List[int] = []

    def supervised_until_done():
        nonlocal host
        acked = {r.message_id for r in record_file.records() if r.action == "ack"}
        if others <= acked and broker.message_count(names.dead_letter_queue) >= 1:
            return True
        if not host.running():
            exit_codes.append(host.returncode)
            host = start_scripted(warren, config, wait_ready=False, **state)
            host.allow_death_by(signal.SIGABRT)
        return False

    wait_until(supervised_until_done, timeout=180, interval=0.1,
               what=lambda: f"the crash loop to end ({len(exit_codes)} restarts so far)")
    assert host.running(), "the host must survive once the message is dead-lettered"
    listing = warren_cli("dlq", "list", "-c", str(host.config_path), "--worker", "w")
    assert host.terminate() == 0, host.describe()
    wait_drained(broker, names.queue)

    aborts = [r for r in record_file.records() if r.message_id == crasher]
    assert all(r.action == "abort" for r in aborts)
    # RabbitMQ 3.10 counts returns: the message is dead-lettered when it comes back more than
    # `delivery_limit` times, so it is delivered limit + 1 = 6 times (the 6th return dead-letters
    # it). RabbitMQ 4.x counts differently (and may stop at the 5th); either bounds the loop.
    assert len(aborts) in (DELIVERY_LIMIT, DELIVERY_LIMIT + 1), [r.attempt for r in aborts]
    assert exit_codes == [-6] * len(aborts), f"exit codes {exit_codes} (SIGABRT is -6)"
    # Crash accounting counted every death of the same message, and left it to the limit.
    assert f"the host died {len(aborts)} times while handling it; it will run alone" in host.logs()
    calls = records_by_id(record_file)
    processed_twice = {i: len(calls[i]) for i in others if len(calls[i]) != 1}
    assert not processed_twice, processed_twice

    [dead] = broker.drain(names.dead_letter_queue, expect=1)
    assert dead.message_id == crasher
    headers = dead.headers
    reason = text(headers["x-first-death-reason"]) if "x-first-death-reason" in headers else \
        text(headers["x-death"][0]["reason"])
    assert reason == "delivery_limit", headers
    assert listing.returncode == 0, listing.stderr
    assert "dead-lettered by the broker: delivery_limit" in listing.stdout, listing.stdout
