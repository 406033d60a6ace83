"""The RabbitMQ transport at its edges (issue 3), against the real test broker: a consumer the
broker cancels because its queue was deleted, a channel the broker closes on consumer_timeout,
publishing under the broker's memory alarm (connection.blocked) and stopping while a publish is
stuck in the blocked socket, dead letters that cannot be published, retries returned by a
damaged delay level, failover over `[broker] hosts`, and where the broker password may come
from (WARREN_BROKER_PASSWORD, password_file, the uri) without ever reaching a log.

Each test runs its own `warren run` (the scripted test plugin) with queues, exchanges and a broker
user of unique names, deleted afterwards. The memory-alarm tests change the whole broker (every
publishing connection is blocked while they run), as does the consumer_timeout test (every channel
opened meanwhile gets a 5 s timeout) and the damaged delay level (every retry published meanwhile
is returned); each restores it in a finally: ctest runs this file RUN_SERIAL.
"""

import re
import signal
import time
from typing import Dict, Iterator, List, Optional

import pika.exceptions
import pytest

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import (apply_topology, broker_uri_and_password, classic_queue,
                            cli_environment, quorum_queue, scripted_worker, warren_config,
                            warren_options)
from testkit_metrics import scrape, value
from testkit_traffic import Tally
from testkit_transport import (BrokerUser, broker_user, memory_alarm, rabbit_settings,
                               readyz_status, readyz_text)
from warren_testkit import (Broker, WarrenProcess, env, free_port, require_services, unique_name,
                            wait_until, warren_cli)

PUBLISH_TIMEOUT = 2.0  # seconds: [broker] publish_timeout in the memory-alarm test
# What a shared, busy CI machine (or an ASan build) may add to a process's start, connect and exit:
# upper bounds on time are for "it did not hang", and must not fail a correct run on such a machine.
BUSY_MACHINE_ALLOWANCE = 20.0
# Reconnect quickly: these tests wait for warren to come back, not for the product's backoff.
FAST_RECONNECT = {"reconnect_initial": "200ms", "reconnect_max": "1s"}


# ---- helpers ------------------------------------------------------------------------------------
def broker_port() -> int:
    return int(env("WARREN_TEST_AMQP_PORT"))


def metrics_section(port: int) -> Dict[str, object]:
    return {"enabled": True, "listen": f"127.0.0.1:{port}"}


def wait_handled(record_file, ids: List[str], timeout: float = 30) -> Tally:
    """Waits until every id was handled; returns the tally (duplicates still to be judged)."""
    wait_until(lambda: Tally.of(ids, record_file.ids()).complete, timeout,
               what=lambda: Tally.of(ids, record_file.ids()).summary())
    return Tally.of(ids, record_file.ids())


def timed_worker(name: str, queue: str, record_file) -> Dict[str, object]:
    """A scripted worker (prefetch 10, 2 handler threads) that records when each call began."""
    worker = scripted_worker(name, queue, record_file, prefetch=10, concurrency=2)
    worker["settings"]["record_time"] = "true"
    return worker


def consumers_of(broker: Broker, queue: str) -> Optional[int]:
    """The consumer count of QUEUE, or None while it does not exist."""
    try:
        return broker.consumer_count(queue)
    except pika.exceptions.ChannelClosedByBroker as error:
        if error.reply_code == 404:
            return None
        raise


def assert_never_logged(process: WarrenProcess, *secrets: str) -> None:
    """No SECRET in warren's stdout or stderr (the failure shows the lines, redacted)."""
    for secret in secrets:
        lines = [line.replace(secret, "<PASSWORD>") for line in process.logs().splitlines()
                 if secret in line]
        assert not lines, "a password appears in warren's output:\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def edges_user() -> Iterator[BrokerUser]:
    """One broker user for the module's password and permission tests (creating one costs three
    rabbitmqctl calls); deleted at the end."""
    require_services("rabbitmq")
    with Broker() as broker, broker_user(broker, "edges-user") as user:
        yield user


# ---- 1. the broker cancels the consumer ----------------------------------------------------------
def test_QueueDeleted_WhileConsuming_WarrenDeclaresItAgainResubscribesAndHandlesLaterMessages(
        broker, created, warren, record_file):
    queue = created.queue("edges-deleted")
    port = free_port()
    config = warren_config(queues=[quorum_queue(queue)],
                           workers=[scripted_worker("edges-deleted", queue, record_file)],
                           metrics=metrics_section(port))
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    before = broker.publish_many("", queue, 5, prefix="edges-before-delete")
    wait_handled(record_file, before)

    broker.delete_queue(queue)

    process.wait_for_log(rf"the broker cancelled the consumer of queue '{re.escape(queue)}'")
    process.wait_for_log(rf"consuming queue '{re.escape(queue)}' again")
    wait_until(lambda: consumers_of(broker, queue) == 1, 15,
               what=lambda: f"{queue} declared again with warren's consumer "
                            f"(consumers: {consumers_of(broker, queue)})")
    wait_until(lambda: readyz_status(f"127.0.0.1:{port}") == 200, 5,
               what=lambda: f"/readyz 200 after subscribing again: {process.describe()}")
    after = broker.publish_many("", queue, 20, prefix="edges-after-delete")
    tally = wait_handled(record_file, before + after)
    assert process.running(), process.describe()

    tally.assert_exactly_once()


def test_QueueDeletedAndRedeclareRefused_NotReadyUntilItCanConsumeAgain(
        broker, created, edges_user, warren, record_file):
    # Warren re-subscribes within milliseconds of a cancel, too fast for /readyz to be seen at 503.
    # Here the broker refuses to declare the queue again (the user may no longer configure), so
    # the consumer stays gone until the permission returns: /readyz must say so meanwhile.
    queue = created.queue("edges-refused")
    port = free_port()
    config = warren_config(
        queues=[classic_queue(queue)],
        workers=[scripted_worker("edges-refused", queue, record_file)],
        broker={"uri": edges_user.uri(broker_port()), **FAST_RECONNECT},
        metrics=metrics_section(port))
    process = warren(config, **warren_options(
        env_overrides={"WARREN_BROKER_PASSWORD": edges_user.password}))
    process.wait_ready(timeout=30)
    endpoint = f"127.0.0.1:{port}"

    edges_user.set_permissions(configure="^$")  # nothing: queue.declare is refused
    try:
        broker.delete_queue(queue)
        wait_until(lambda: readyz_status(endpoint) == 503, 15,
                   what=lambda: f"/readyz 503 while {queue} cannot be declared: "
                                f"{process.describe()}")
        process.wait_for_log(r"ACCESS_REFUSED")
        assert consumers_of(broker, queue) is None, "the queue came back without permission"
        assert process.running(), process.describe()
    finally:
        edges_user.set_permissions()

    wait_until(lambda: readyz_status(endpoint) == 200, 20,
               what=lambda: f"/readyz 200 once {queue} can be declared: {process.describe()}")
    assert consumers_of(broker, queue) == 1
    ids = broker.publish_many("", queue, 10, prefix="edges-refused")
    wait_handled(record_file, ids).assert_exactly_once()
    assert_never_logged(process, edges_user.password)


def test_ExternalQueueDeleted_TwoWorkers_OnlyItsWorkerStopsNotReadyWithReasonThenResumes(
        broker, created, warren, record_file):
    # Issue 19, defect 5: deleting a queue the config does not declare (created by someone else)
    # used to stop every worker: subscribing again re-ran the whole declaration, the check of that
    # queue failed, and the connection was dropped and refused on every reconnect. Now only its
    # worker stops (not ready, with the reason, logged once) while the other keeps consuming on
    # its own channel, with no redelivery; the worker resumes when the queue exists again.
    kept, external = created.queue("edges-kept"), created.queue("edges-external")
    broker.declare_queue(external, queue_type="quorum")
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    config = warren_config(
        queues=[quorum_queue(kept)],
        workers=[scripted_worker("edges-kept", kept, record_file, sleep_ms=40),
                 scripted_worker("edges-external", external, record_file)],
        broker=FAST_RECONNECT, metrics=metrics_section(port))
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    external_before = broker.publish_many("", external, 5, prefix="edges-external-before")
    wait_handled(record_file, external_before)
    # A stream of slow messages (40 ms each, prefetch 20): some are in flight, unacked, when the
    # other worker's queue goes.
    kept_ids = broker.publish_many("", kept, 60, prefix="edges-kept")
    wait_until(lambda: len(set(kept_ids) & set(record_file.ids())) >= 10, 30,
               what=lambda: Tally.of(kept_ids, record_file.ids()).summary())

    broker.delete_queue(external)
    handled_at_delete = len(set(kept_ids) & set(record_file.ids()))

    kept_later = broker.publish_many("", kept, 20, prefix="edges-kept-later")
    wait_handled(record_file, kept_ids + kept_later)
    assert process.running(), process.describe()
    reason = (rf"queue '{re.escape(external)}' consumed by worker 'edges-external' does not "
              r"exist")
    wait_until(lambda: readyz_status(endpoint) == 503 and re.search(reason, readyz_text(endpoint)),
               15, what=lambda: f"/readyz 503 naming {external}: {readyz_text(endpoint)!r}, "
                                f"{process.describe()}")
    assert handled_at_delete < len(kept_ids), "the deletion landed after the stream"
    kept_records = [r for r in record_file.records() if r.worker == "edges-kept"]
    assert not [r.message_id for r in kept_records if r.redelivered], \
        "the kept worker's messages were redelivered: its channel was disturbed"
    Tally.of(kept_ids + kept_later, [r.message_id for r in kept_records]).assert_exactly_once()
    # Checked again with backoff, but said once.
    assert len(re.findall(reason, process.logs())) == 1, process.describe()

    broker.declare_queue(external, queue_type="quorum")
    wait_until(lambda: readyz_status(endpoint) == 200, 30,
               what=lambda: f"/readyz 200 once {external} exists again: {readyz_text(endpoint)!r}"
                            f", {process.describe()}")
    process.wait_for_log(rf"consuming queue '{re.escape(external)}' again")
    external_after = broker.publish_many("", external, 5, prefix="edges-external-after")
    wait_handled(record_file, external_before + external_after)
    Tally.of(external_before + external_after,
             [r.message_id for r in record_file.records()
              if r.worker == "edges-external"]).assert_exactly_once()
    assert process.terminate() == 0, process.describe()


# Issue 19, item 3, at a tenth of the scale (consumer_timeout 60 s, prefetch 20, 5 s
# handler) so that it takes seconds: the broker closes a channel whose oldest unacked delivery is
# older than CONSUMER_TIMEOUT_MS, checking every TICK_MS (60 s by default).
CONSUMER_TIMEOUT_MS = 5000
TICK_MS = 1000
SLOW_PREFETCH = 20
SLOW_HANDLER_MS = 400  # 20 x 400 ms = 8 s of prefetched work: the last waits past the timeout


@pytest.mark.slow  # about 20 s of a slow worker's backlog; the per-channel path runs elsewhere too
def test_ConsumerTimeout_OnOneWorkersChannel_OnlyThatChannelIsRecoveredTheOtherSeesNoDuplicates(
        broker, created, warren, record_file):
    # Issue 19, defect 3: worker A's prefetched deliveries wait in the dispatcher's inbox behind its
    # slow handler until the broker's consumer_timeout closes A's channel (406). That used to be
    # taken for the loss of the connection: every worker's in-flight acks went stale and B's
    # messages were handled twice. Now A's channel alone is recovered; B is untouched.
    slow_queue = created.queue("edges-timeout-slow")
    fast_queue = created.queue("edges-timeout-fast")
    config = warren_config(
        queues=[quorum_queue(slow_queue), quorum_queue(fast_queue)],
        workers=[scripted_worker("edges-slow", slow_queue, record_file, prefetch=SLOW_PREFETCH,
                                 sleep_ms=SLOW_HANDLER_MS,
                                 max_handler_time=f"{SLOW_HANDLER_MS}ms"),
                 scripted_worker("edges-fast", fast_queue, record_file, sleep_ms=20)],
        # The broker's setting, which the host cannot ask for: it warns at start.
        broker={**FAST_RECONNECT, "consumer_timeout": f"{CONSUMER_TIMEOUT_MS}ms"})
    with rabbit_settings(broker, consumer_timeout=CONSUMER_TIMEOUT_MS,
                         channel_tick_interval=TICK_MS):
        process = warren(config, **warren_options())
        process.wait_ready(timeout=30)
        process.wait_for_log(r"worker \"edges-slow\" can hold a delivery unacknowledged for 8s "
                             r"\(prefetch 20 over concurrency 1 .*consumer_timeout of 5s")
        slow_ids = broker.publish_many("", slow_queue, SLOW_PREFETCH, prefix="edges-slow")
        # About 12 s of B's work at 20 ms each: B has deliveries in flight when A's channel closes.
        fast_ids = broker.publish_many("", fast_queue, 600, prefix="edges-fast")
        process.wait_for_log(r"the broker closed .*'edges-slow'.*timed out", timeout=30)
        handled = wait_handled(record_file, slow_ids + fast_ids, timeout=60)

    fast_records = [r for r in record_file.records() if r.worker == "edges-fast"]
    assert not [r.message_id for r in fast_records if r.redelivered], \
        "worker edges-fast's messages were redelivered: its channel was disturbed\n" + \
        Tally.of(fast_ids, [r.message_id for r in fast_records]).summary()
    Tally.of(fast_ids, [r.message_id for r in fast_records]).assert_exactly_once()
    # A's deliveries on the closed channel go back to the queue: those its handler had started
    # run again, at most the prefetch.
    slow_duplicates = sum(handled.handled[i] - 1 for i in slow_ids)
    assert slow_duplicates <= SLOW_PREFETCH, handled.summary()
    # A's channel alone was recovered: the connection stayed.
    process.wait_for_log(rf"the broker closed the channel of worker 'edges-slow' on queue "
                         rf"'{re.escape(slow_queue)}' \([^)]*timed out")
    process.wait_for_log(rf"consuming queue '{re.escape(slow_queue)}' again")
    logs = process.logs()
    assert "unacked deliveries go back to the queue, reconnecting" not in logs, process.describe()
    assert len(re.findall(r"connected to .* worker\(s\) consuming", logs)) == 1, \
        process.describe()
    print(f"worker edges-slow: {slow_duplicates} duplicate(s) of {SLOW_PREFETCH}")
    assert process.terminate() == 0, process.describe()


# ---- 2. connection.blocked ----------------------------------------------------------------------
def test_MemoryAlarm_HandlerPublishTimesOutConsumingGoesOnAndPublishingResumesAfterIt(
        broker, created, warren, tmp_path, record_file):
    queue, out_queue = created.queue("edges-blocked"), created.queue("edges-blocked-out")
    out_exchange = created.exchange("edges-blocked-out")
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    config = warren_config(
        exchanges=[{"name": out_exchange, "type": "topic"}],
        queues=[classic_queue(queue),
                classic_queue(out_queue, bindings=[{"exchange": out_exchange,
                                                    "routing_key": "edges.#"}])],
        workers=[timed_worker("edges-blocked", queue, record_file)],
        broker={"publish_timeout": f"{PUBLISH_TIMEOUT:g}s"},
        metrics=metrics_section(port))
    config_path = tmp_path / "warren.toml"
    config_path.write_text(config)
    applied = warren_cli("topology", "apply", "-c", str(config_path),
                         env_overrides=cli_environment())
    assert applied.returncode == 0, f"{applied.stdout}{applied.stderr}"
    # Staged before the alarm (it blocks the test's publishing too): one message whose handler
    # publishes, then plain ones that a second handler thread takes meanwhile.
    [publishing] = broker.publish_many("", queue, 1, prefix="edges-blocked-publish",
                                       headers={"x-test-action": f"publish:{out_exchange}:edges.a"})
    plain = broker.publish_many("", queue, 5, prefix="edges-blocked-plain")

    def publish_cli(routing_key: str):
        started = time.monotonic()
        result = warren_cli("publish", "-c", str(config_path), "--exchange", out_exchange,
                            "--routing-key", routing_key, "--body", "from the cli",
                            env_overrides=cli_environment(), timeout=30)
        return result, time.monotonic() - started

    with memory_alarm(broker):
        process = warren(config, **warren_options())
        wait_until(lambda: value(scrape(endpoint), "warren_broker_blocked") == 1, 30,
                   ignore=(OSError,),
                   what=lambda: f"warren_broker_blocked 1 during the alarm: {process.describe()}")
        wait_handled(record_file, plain)
        # Called again for the same message: the blocked publish failed at its deadline (the
        # handler did not hang), and the consumer goes on delivering while publishing is blocked.
        wait_until(lambda: record_file.count_by_id()[publishing] >= 2, 30,
                   what=lambda: f"a second call for {publishing}: {process.describe()}")
        calls = [r for r in record_file.records() if r.message_id == publishing]
        gap = calls[1].time - calls[0].time
        assert value(scrape(endpoint), "warren_broker_blocked") == 1
        assert readyz_status(endpoint) == 200, "not ready while only publishing is blocked"
        assert broker.message_count(out_queue) == 0, "a publish got through the alarm"
        cli, cli_seconds = publish_cli("edges.cli-blocked")

    # Timing: a lower bound a busy machine cannot break (the publish waited for its deadline), and
    # an upper one generous enough for it (the handler did not hang on the blocked connection).
    assert PUBLISH_TIMEOUT - 0.05 <= gap <= 3 * PUBLISH_TIMEOUT + BUSY_MACHINE_ALLOWANCE, \
        f"{gap:.2f}s between the calls: the publish should fail at its deadline " \
        f"({PUBLISH_TIMEOUT:g}s)"
    # The first timeout already says why (the publish may have left before the block arrived).
    first_timeout = re.search(r"^.*not confirmed in time.*$", process.logs(), re.MULTILINE)
    assert first_timeout and "blocking publishers" in first_timeout.group(0), process.describe()
    assert cli.returncode == 1, f"{cli.stdout}{cli.stderr}"
    assert re.search(r"not published:.*block", cli.stderr), cli.stderr
    assert PUBLISH_TIMEOUT - 0.05 <= cli_seconds <= PUBLISH_TIMEOUT + BUSY_MACHINE_ALLOWANCE, \
        f"warren publish took {cli_seconds:.1f}s with publish_timeout {PUBLISH_TIMEOUT:g}s"

    # After the alarm: unblocked, and publishing works again, from handlers and from the cli.
    wait_until(lambda: value(scrape(endpoint), "warren_broker_blocked") == 0, 30,
               what=lambda: f"warren_broker_blocked 0 after the alarm: {process.describe()}")
    after = broker.publish_many("", queue, 3, prefix="edges-unblocked",
                                headers={"x-test-action": f"publish:{out_exchange}:edges.b"})
    cli, _ = publish_cli("edges.cli-unblocked")
    assert cli.returncode == 0, f"{cli.stdout}{cli.stderr}"
    # The blocked message's publish lands at least once (a copy sent before the block took hold
    # may land beside the retried one; the blocked cli's likewise), the later ones once each, and
    # the cli's; nothing else.
    bodies = [message.text for message in broker.drain(out_queue, expect=1 + len(after) + 1,
                                                        timeout=30)]
    assert set(bodies) == {publishing, "from the cli", *after}, bodies
    assert all(bodies.count(i) == 1 for i in after), bodies
    assert process.running(), process.describe()


def test_MemoryAlarm_DeadLettersCannotBePublished_ClassicQueueLosesNoneAllTenEndInTheDlq(
        broker, created, warren, tmp_path, record_file):
    # Issue 19, defect 1: the dead letters of a worker on a classic queue (no dead-letter exchange
    # of its own; the worker's is Warren's to publish to) time out under the memory alarm. The host
    # used to reject them "so that the broker dead-letters them": a classic queue without a
    # dead-letter exchange drops them. Now each is requeued after a backoff, held unacked
    # meanwhile, and dead-lettered once the alarm is gone.
    queue, trigger_queue = created.queue("edges-dl-blocked"), created.queue("edges-dl-trigger")
    sink = created.queue("edges-dl-trigger-sink")
    dead_exchange = created.exchange("edges-dl-blocked-dlx")
    dead_queue = created.queue("edges-dl-blocked-dlq")
    gate = tmp_path / "gate"
    failing = scripted_worker("edges-dl-blocked", queue, record_file, prefetch=10, concurrency=10,
                              default_action="permanent", dead_letter_exchange=dead_exchange,
                              dead_letter_queue=dead_queue)
    failing["settings"]["gate_file"] = str(gate)
    # The trigger's publish is the first of the publishing connection: it leaves before the broker
    # blocks the connection, which then holds every later publish back.
    trigger = scripted_worker("edges-dl-trigger", trigger_queue, default_action=f"publish::{sink}")
    del trigger["allow_message_loss"]  # its queue's allow_message_loss says it
    config = warren_config(
        exchanges=[{"name": dead_exchange, "type": "fanout"}],
        queues=[{"name": queue, "type": "classic"}, quorum_queue(trigger_queue),
                classic_queue(sink)],
        workers=[failing, trigger],
        broker={"publish_timeout": f"{PUBLISH_TIMEOUT:g}s"})
    apply_topology(config, tmp_path)
    # Staged before the alarm, which blocks the test's publishing too.
    ids = broker.publish_many("", queue, 10, prefix="edges-dl-blocked")
    broker.publish("", trigger_queue, "trigger")

    failed = re.compile(r"dead letter could not be published to '" + re.escape(dead_exchange))
    with memory_alarm(broker):
        process = warren(config, **warren_options())
        process.wait_for_log(r"the broker blocks publishing")
        gate.touch()  # now the ten fail for good, and their dead letters wait behind the block
        wait_handled(record_file, ids)
        wait_until(lambda: len(failed.findall(process.logs())) >= len(ids), 30,
                   what=lambda: f"{len(ids)} failed dead-letter publishes: {process.describe()}")
        assert broker.message_count(dead_queue) == 0, "a dead letter got through the alarm"

    letters: List = []

    def every_one_dead_lettered() -> bool:
        while (letter := broker.get(dead_queue)) is not None:
            letters.append(letter)
        return set(ids) <= {letter.message_id for letter in letters}

    wait_until(every_one_dead_lettered, 60,
               what=lambda: f"{len(set(ids) & {m.message_id for m in letters})} of {len(ids)} "
                            f"dead letters in {dead_queue}: {process.describe()}")
    assert {letter.message_id for letter in letters} == set(ids)
    assert len(letters) == len(ids), "a dead letter was published twice"
    assert all("scripted permanent failure" in str(letter.headers.get("x-warren-error"))
               for letter in letters), [letter.headers for letter in letters]
    wait_until(lambda: broker.message_count(queue) == 0, 15,
               what=lambda: f"{queue} empty: {broker.message_count(queue)} left")
    assert re.search(r"could not dead_letter the message: its dead letter could not be "
                     r"published to .*then requeued as it is", process.logs()), process.describe()
    print(f"{len(letters)} dead letters of {len(ids)} messages")
    assert process.terminate() == 0, process.describe()


# Issue 19, defect 6: the exchange-to-exchange binding by which a retry skips the top delay level
# (bit 27 clear: every delay under 155 days). Without it every retry is returned unroutable.
DELAY_TOP, DELAY_NEXT, SKIP_TOP_LEVEL = "warren.delay.27", "warren.delay.26", "0.#"
RETRY_ATTEMPTS = 3


def delay_level_bound(broker: Broker) -> bool:
    bindings = broker.rabbitmqctl("list_bindings", "--quiet", "--no-table-headers", "source_name",
                                  "destination_name", "routing_key")
    return f"{DELAY_TOP}\t{DELAY_NEXT}\t{SKIP_TOP_LEVEL}" in bindings.splitlines()


def test_DelayLevelUnbound_RetryReturned_RequeuedWithBackoffRepairedAndGoesOnToItsDeadLetter(
        broker, created, warren, record_file):
    # With the delay levels damaged, a retry publish is returned. The host used to requeue the
    # message at once: back in the handler at once, with the same attempt, forever on a classic
    # queue (thousands of calls a minute). Now it declares the delay levels again and requeues
    # the message after a backoff; the message goes on to its next attempts and its dead letter.
    queue = created.queue("edges-retry-unrouted")
    dead_exchange = created.exchange("edges-retry-unrouted-dlx")
    dead_queue = created.queue("edges-retry-unrouted-dlq")
    config = warren_config(
        exchanges=[{"name": dead_exchange, "type": "fanout"}],
        queues=[classic_queue(queue)],
        workers=[scripted_worker("edges-retry-unrouted", queue, record_file,
                                 default_action="throw", dead_letter_exchange=dead_exchange,
                                 dead_letter_queue=dead_queue,
                                 retry={"max_attempts": RETRY_ATTEMPTS, "backoff": "fixed",
                                        "initial": "200ms", "jitter": 0})])
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    broker.channel().exchange_unbind(destination=DELAY_NEXT, source=DELAY_TOP,
                                     routing_key=SKIP_TOP_LEVEL)
    try:
        [message_id] = broker.publish_many("", queue, 1, prefix="edges-retry-unrouted")
        # One call per attempt, plus the one (or, on a busy machine, two) whose retry was
        # returned before the repair; far fewer than a tight requeue loop makes in a second.
        bound = RETRY_ATTEMPTS + 3
        wait_until(lambda: broker.message_count(dead_queue) == 1
                   or record_file.count_by_id()[message_id] > bound, 60,
                   what=lambda: f"the dead letter of {message_id} "
                                f"({record_file.count_by_id()[message_id]} calls so far): "
                                f"{process.describe()}")
        calls = record_file.count_by_id()[message_id]
        assert calls <= bound, f"{calls} calls of one message with {RETRY_ATTEMPTS} attempts: " \
                               f"requeued without a backoff"
        [letter] = broker.drain(dead_queue, expect=1)
        assert letter.message_id == message_id
        assert letter.headers.get("x-warren-attempt") == str(RETRY_ATTEMPTS), letter.headers
        assert delay_level_bound(broker), "the host did not bind the delay level again"
        logs = process.logs()
        assert re.search(r"a retry was returned unroutable: declared the retry delay levels",
                         logs), process.describe()
        assert re.search(r"its retry could not be published into the delay levels .*then "
                         r"requeued as it is", logs), process.describe()
        assert "stays unacked and the broker will redeliver it" not in logs, process.describe()
        print(f"{calls} calls of {message_id} with {RETRY_ATTEMPTS} attempts")
        assert process.terminate() == 0, process.describe()
    finally:
        broker.channel().exchange_bind(destination=DELAY_NEXT, source=DELAY_TOP,
                                       routing_key=SKIP_TOP_LEVEL)


# Issue 19, defect 4: a handler's publish of a large body under the memory alarm stays in the
# socket (the broker stops reading a blocked connection, and the body is larger than the socket
# buffers hold), and used to hold the stop forever: close() stopped the watchdog that would have
# cut it short, then waited for the I/O thread.
STUCK_BODY_BYTES = 16 * 1024 * 1024
STUCK_SHUTDOWN_TIMEOUT = 2.0  # seconds: [host] shutdown_timeout
STUCK_MESSAGES = 3


def test_MemoryAlarm_SigtermWhileLargePublishesAreStuckInTheSocket_ExitsInTimeAndLosesNothing(
        broker, created, warren, tmp_path, record_file):
    queue, out_queue = created.queue("edges-stuck"), created.queue("edges-stuck-out")
    out_exchange = created.exchange("edges-stuck-out")
    host_name = unique_name("edges-stuck-host")
    config = warren_config(
        exchanges=[{"name": out_exchange, "type": "topic"}],
        queues=[classic_queue(queue),
                classic_queue(out_queue, bindings=[{"exchange": out_exchange,
                                                    "routing_key": "edges.#"}])],
        workers=[scripted_worker("edges-stuck", queue, record_file, prefetch=2, concurrency=2,
                                 default_action=f"publish:{out_exchange}:edges.stuck")],
        host={"name": host_name, "shutdown_timeout": f"{STUCK_SHUTDOWN_TIMEOUT:g}s"},
        # Far beyond the test: only the stop can end the stuck publish.
        broker={"publish_timeout": "300s"})
    apply_topology(config, tmp_path)
    # Staged before the alarm (which blocks the test's publishing too). Each body starts with
    # its message id, so a copy the handler published can be told apart.
    ids = broker.publish_many("", queue, STUCK_MESSAGES, prefix="edges-stuck",
                              body=lambda _i, mid: mid.encode().ljust(STUCK_BODY_BYTES, b"."))

    with memory_alarm(broker):
        process = warren(config, **warren_options())
        record_file.wait_for_count(2, timeout=30)  # both handlers are publishing
        wait_until(lambda: broker.connection_states_of(host_name).get("publisher") == "blocked",
                   30, what=lambda: f"the publisher blocked by the broker in the middle of a "
                                    f"publish: {broker.connection_states_of(host_name)}")
        stopping_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=STUCK_SHUTDOWN_TIMEOUT + 60)
        stopped_after = time.monotonic() - stopping_at

    assert exit_code == 0, process.describe()
    assert "shutting the socket down" in process.logs(), \
        f"no publish was stuck in the socket (raise STUCK_BODY_BYTES): {process.describe()}"
    assert stopped_after <= STUCK_SHUTDOWN_TIMEOUT + 5, \
        f"exited {stopped_after:.1f}s after SIGTERM with shutdown_timeout " \
        f"{STUCK_SHUTDOWN_TIMEOUT:g}s: {process.describe()}"
    # Nothing lost: every message not handled to completion is back in its queue; one handled to
    # completion (acked) had its publish confirmed, so its copy is in out_queue.
    wait_until(lambda: broker.queue_counts(queue)[1] == 0, 30,
               what=lambda: f"{queue}'s unacked messages back (ready, unacked: "
                            f"{broker.queue_counts(queue)})")
    back = [m.message_id for m in broker.drain(queue, timeout=30)]
    copies = [m.body[:len(ids[0])].decode() for m in broker.drain(out_queue, timeout=30)]
    assert set(ids) <= set(back) | set(copies), f"lost: back {back}, copies {copies}"
    assert sorted(back) == sorted(set(back)), f"a message twice in its queue: {back}"
    print(f"stopped {stopped_after:.1f}s after SIGTERM; {len(back)} back in the queue, "
          f"{len(copies)} published before the stop")


# ---- 3. failover ---------------------------------------------------------------------------------
def test_Hosts_FirstUnreachable_ConnectsToTheNextConsumesAndLogsTheUnreachableOne(
        broker, created, warren, tmp_path, record_file):
    queue, out_queue = created.queue("edges-failover"), created.queue("edges-failover-out")
    closed = free_port()
    uri, _password = broker_uri_and_password()
    hosts = [f"amqp://guest@127.0.0.1:{closed}/", uri]
    config = warren_config(
        queues=[classic_queue(queue), classic_queue(out_queue)],
        workers=[scripted_worker("edges-failover", queue, record_file)],
        broker={"uri": None, "hosts": hosts, **FAST_RECONNECT})
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)

    ids = broker.publish_many("", queue, 10, prefix="edges-failover",
                              headers={"x-test-action": f"publish::{out_queue}"})
    wait_handled(record_file, ids).assert_exactly_once()
    wait_until(lambda: broker.message_count(out_queue) == len(ids), 15,
               what="the handlers' publishes (through the publisher's failover too)")
    logs = process.logs()
    assert re.search(rf"cannot connect to amqp://guest@127\.0\.0\.1:{closed}/: \S", logs), \
        process.describe()
    assert re.search(rf"connected to amqp://guest@127\.0\.0\.1:{broker_port()}/", logs), \
        process.describe()

    # `warren publish` fails over the same way.
    config_path = tmp_path / "warren.toml"
    config_path.write_text(config)
    cli = warren_cli("publish", "-c", str(config_path), "--exchange", "", "--routing-key",
                     out_queue, "--body", "failover", env_overrides=cli_environment())
    assert cli.returncode == 0, f"{cli.stdout}{cli.stderr}"


# ---- 4. passwords --------------------------------------------------------------------------------
def password_test_config(queue: str, record_file, user: BrokerUser, port: int, *,
                         uri: Optional[str] = None, **broker_keys) -> str:
    return warren_config(queues=[classic_queue(queue)],
                         workers=[scripted_worker("edges-password", queue, record_file)],
                         broker={"uri": uri or user.uri(broker_port()), **FAST_RECONNECT,
                                 **broker_keys},
                         metrics=metrics_section(port))


@pytest.fixture
def no_password_in_environment(monkeypatch):
    monkeypatch.delenv("WARREN_BROKER_PASSWORD", raising=False)


def consumes_as(broker: Broker, process: WarrenProcess, queue: str, record_file,
                prefix: str) -> None:
    process.wait_ready(timeout=30)
    ids = broker.publish_many("", queue, 3, prefix=prefix)
    wait_handled(record_file, ids).assert_exactly_once()


def test_Password_FromEnvironmentWithUriWithoutPassword_ConnectsAndIsNeverLogged(
        broker, created, edges_user, warren, record_file, no_password_in_environment):
    queue = created.queue("edges-pw-env")
    process = warren(password_test_config(queue, record_file, edges_user, free_port()),
                     **warren_options(env_overrides={
                         "WARREN_BROKER_PASSWORD": edges_user.password}))
    consumes_as(broker, process, queue, record_file, "edges-pw-env")
    assert_never_logged(process, edges_user.password)
    assert "holds a password" not in process.logs()


def test_Password_FromPasswordFile_ConnectsAndIsNeverLogged(
        broker, created, edges_user, warren, record_file, tmp_path, no_password_in_environment):
    queue = created.queue("edges-pw-file")
    password_file = tmp_path / "broker-password"
    password_file.write_text(edges_user.password + "\n")
    password_file.chmod(0o600)
    config = password_test_config(queue, record_file, edges_user, free_port(),
                                  password_file=str(password_file))
    process = warren(config, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"))
    consumes_as(broker, process, queue, record_file, "edges-pw-file")
    assert_never_logged(process, edges_user.password)


def test_Password_Wrong_LoginRefusedClearlyKeepsRetryingNotReadyAndIsNeverLogged(
        created, edges_user, warren, record_file, no_password_in_environment):
    queue = created.queue("edges-pw-wrong")
    port = free_port()
    wrong = edges_user.password.replace("pw-", "wrong-pw-")
    process = warren(password_test_config(queue, record_file, edges_user, port),
                     **warren_options(env_overrides={"WARREN_BROKER_PASSWORD": wrong}))

    # Two refused logins: it keeps trying (a fixed password may yet be deployed).
    refused = re.compile(r"^\S+ warning +cannot connect to amqp://\S+: connection closed by the "
                         r"broker: ACCESS_REFUSED - Login was refused", re.MULTILINE)
    wait_until(lambda: len(refused.findall(process.logs())) >= 2, 30,
               what=lambda: f"two refused logins of the consumer: {process.describe()}")
    assert process.running(), process.describe()
    assert readyz_status(f"127.0.0.1:{port}") == 503, process.describe()
    assert "consuming" not in process.logs(), process.describe()
    assert_never_logged(process, wrong, edges_user.password)


def test_Password_InsideTheUri_ConnectsButWarnsAndIsNeverLogged(
        broker, created, edges_user, warren, record_file, no_password_in_environment):
    queue = created.queue("edges-pw-uri")
    config = password_test_config(queue, record_file, edges_user, free_port(),
                                  uri=edges_user.uri(broker_port(), with_password=True))
    process = warren(config, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"))
    consumes_as(broker, process, queue, record_file, "edges-pw-uri")
    assert re.search(r"warn.*broker URI holds a password", process.logs()), process.describe()
    assert_never_logged(process, edges_user.password)
