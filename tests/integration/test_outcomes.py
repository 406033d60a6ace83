"""Where each outcome of a handler ends, on a real broker: an ack removes the message; a failure is
retried under the worker's policy (after the policy's delays, with the attempt number counting up)
and then dead-lettered with Warren's x-warren-* headers; dead_letter and PermanentError go to the
dead-letter queue at once; retry(ms) waits at least as long as asked; and the broker never has more
unacknowledged messages out than the worker's prefetch."""

from dataclasses import dataclass
from datetime import datetime
from typing import List

import pytest

from testkit_broker_state import UnackedSampler
from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import scripted_worker, warren_config, warren_options
from testkit_traffic import Tally, publish_bulk, wait_for_ready
from warren_testkit import Message, RecordFile, WarrenProcess, wait_until

# max_attempts 3, exponential from 200 ms, no jitter: attempt 2 comes >= 200 ms after attempt 1,
# attempt 3 >= 400 ms after attempt 2, then the message is dead-lettered.
RETRY = {"max_attempts": 3, "backoff": "exponential", "initial": "200ms", "max": "10s",
         "jitter": 0.0}
POLICY_DELAYS = [0.200, 0.400]

@dataclass
class Setup:
    process: WarrenProcess
    exchange: str           # topic exchange bound to the queue with "job.#"
    queue: str              # the worker's queue
    dead_letter_queue: str  # where the worker's dead letters land


def start_worker(warren, created, record_file, *, worker: str, retry=None,
                 queue_type: str = "quorum") -> Setup:
    """Starts warren with exchange -> queue (with a dead-letter exchange) -> scripted worker
    (prefetch 20, 2 threads, recording when each call began) whose dead letters land in a
    dead-letter queue."""
    exchange, dead_letters = created.exchange(f"{worker}-in"), created.exchange(f"{worker}-dlx")
    queue, dead_letter_queue = created.queue(worker), created.queue(f"{worker}-dlq")
    config = warren_config(
        exchanges=[{"name": exchange, "type": "topic"}, {"name": dead_letters, "type": "fanout"}],
        queues=[{"name": queue, "type": queue_type, "dead_letter_exchange": dead_letters,
                 "bindings": [{"exchange": exchange, "routing_key": "job.#"}]}],
        workers=[scripted_worker(worker, queue, record_file, prefetch=20, concurrency=2,
                                 record_time=True, retry=retry or RETRY,
                                 dead_letter_queue=dead_letter_queue)])
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    return Setup(process, exchange, queue, dead_letter_queue)


def record_times(record_file: RecordFile, n: int, timeout: float) -> List[float]:
    """Waits for N records and returns when each handler call began (the scripted plugin's
    record_time: its wall clock, in microseconds, at the start of the call)."""
    records = record_file.wait_for_count(n, timeout)
    return [record.time for record in records[:n]]


def dead_letters(broker, queue: str, n: int, timeout: float = 30) -> List[Message]:
    return broker.drain(queue, expect=n, timeout=timeout)


def timestamp(message: Message, header: str) -> datetime:
    return datetime.fromisoformat(message.headers[header].replace("Z", "+00:00"))


def test_Ack_MessagesAreHandledOnceAndGoneFromTheQueue(broker, created, warren, record_file):
    # A classic queue: rabbitmqctl reports its unacknowledged count exactly at any moment.
    setup = start_worker(warren, created, record_file, worker="out-ack", queue_type="classic")
    ids = broker.publish_many(setup.exchange, "job.created", 20, prefix="ack",
                              headers={"x-test-action": "ack"})

    record_file.wait_for_count(len(ids), timeout=30)
    # While warren still runs: nothing ready, nothing unacknowledged.
    wait_until(lambda: broker.queue_counts(setup.queue) == (0, 0), 30,
               what=lambda: f"{setup.queue} empty and fully acked "
                            f"(ready, unacked: {broker.queue_counts(setup.queue)})")

    assert setup.process.terminate() == 0, setup.process.describe()
    assert broker.message_count(setup.dead_letter_queue) == 0
    Tally.of(ids, record_file.ids()).assert_exactly_once()


def test_Throw_RetriedWithPolicyDelaysThenDeadLetteredWithWarrenHeaders(
        broker, created, warren, record_file):
    setup = start_worker(warren, created, record_file, worker="out-throw")
    [message_id] = broker.publish_many(setup.exchange, "job.failing", 1, prefix="throw",
                                       headers={"x-test-action": "throw"})

    times = record_times(record_file, 3, timeout=30)
    [dead] = dead_letters(broker, setup.dead_letter_queue, 1)

    records = record_file.records()
    assert [(r.message_id, r.attempt) for r in records] == [(message_id, 1), (message_id, 2),
                                                            (message_id, 3)]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    for gap, delay in zip(gaps, POLICY_DELAYS):
        assert gap >= delay, \
            f"attempts came {gaps} s apart; the policy asks for {POLICY_DELAYS}"
    assert dead.message_id == message_id and dead.text == message_id
    headers = dead.headers
    assert "scripted failure" in headers["x-warren-error"], headers
    assert headers["x-warren-attempt"] == "3", headers
    assert headers["x-warren-worker"] == "out-throw", headers
    assert headers["x-warren-original-exchange"] == setup.exchange, headers
    assert headers["x-warren-original-routing-key"] == "job.failing", headers
    failed_for = (timestamp(dead, "x-warren-dead-lettered-at")
                  - timestamp(dead, "x-warren-first-failed-at")).total_seconds()
    assert failed_for >= sum(POLICY_DELAYS), headers
    assert broker.message_count(setup.queue) == 0
    # Nothing more happens to it: no fourth attempt.
    assert setup.process.terminate() == 0, setup.process.describe()
    assert len(record_file.records()) == 3


def test_DeadLetterWithReason_GoesToTheDeadLetterQueueAtOnceWithTheReason(
        broker, created, warren, record_file):
    setup = start_worker(warren, created, record_file, worker="out-dl")
    ids = broker.publish_many(setup.exchange, "job.bad", 5, prefix="deadletter",
                              headers={"x-test-action": "dead_letter:invoice total is negative"})

    letters = dead_letters(broker, setup.dead_letter_queue, len(ids))

    assert sorted(m.message_id for m in letters) == sorted(ids)
    for letter in letters:
        assert letter.headers["x-warren-error"] == "invoice total is negative", letter.headers
        assert letter.headers["x-warren-attempt"] == "1", letter.headers
        assert letter.headers["x-warren-worker"] == "out-dl", letter.headers
        assert letter.headers["x-warren-original-routing-key"] == "job.bad", letter.headers
    assert setup.process.terminate() == 0, setup.process.describe()
    assert [(r.attempt, r.action) for r in record_file.records()] == \
        [(1, "dead_letter:invoice total is negative")] * len(ids)
    Tally.of(ids, record_file.ids()).assert_exactly_once()
    assert broker.message_count(setup.queue) == 0


def test_PermanentError_IsDeadLetteredAtTheFirstAttempt(broker, created, warren, record_file):
    setup = start_worker(warren, created, record_file, worker="out-perm")
    ids = broker.publish_many(setup.exchange, "job.poison", 5, prefix="permanent",
                              headers={"x-test-action": "permanent"})

    letters = dead_letters(broker, setup.dead_letter_queue, len(ids))

    assert sorted(m.message_id for m in letters) == sorted(ids)
    for letter in letters:
        assert "scripted permanent failure" in letter.headers["x-warren-error"], letter.headers
        assert letter.headers["x-warren-attempt"] == "1", letter.headers
    assert setup.process.terminate() == 0, setup.process.describe()
    assert {r.attempt for r in record_file.records()} == {1}
    Tally.of(ids, record_file.ids()).assert_exactly_once()
    assert broker.message_count(setup.queue) == 0


def test_RetryAfter_IsRedeliveredNoSoonerThanAskedEvenWhenThePolicyIsShorter(
        broker, created, warren, record_file):
    asked = 0.700  # the handler's delay; the policy alone would wait 200 ms
    setup = start_worker(
        warren, created, record_file, worker="out-later",
        retry={**RETRY, "max_attempts": 2})
    [message_id] = broker.publish_many(setup.exchange, "job.later", 1, prefix="later",
                                       headers={"x-test-action": f"retry:{int(asked * 1000)}"})

    times = record_times(record_file, 2, timeout=30)
    [dead] = dead_letters(broker, setup.dead_letter_queue, 1)

    assert [(r.message_id, r.attempt) for r in record_file.records()] == \
        [(message_id, 1), (message_id, 2)]
    assert times[1] - times[0] >= asked, \
        f"redelivered after {times[1] - times[0]:.3f} s, asked for {asked} s"
    assert dead.message_id == message_id and dead.headers["x-warren-attempt"] == "2"


# slow: the broker's prefetch accounting; warren sets the same QoS in every test.
@pytest.mark.slow
def test_Prefetch_UnackedNeverExceedsPrefetchAndEveryMessageIsHandledOnce(
        broker, created, warren, record_file):
    # A classic queue: its unacked count is exact at any moment (see testkit_broker_state).
    exchange, queue = created.exchange("out-prefetch-in"), created.queue("out-prefetch")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(queue, queue_type="classic")
    broker.bind_queue(queue, exchange, "job.#")
    ids = publish_bulk(exchange, "job.slow", 200, prefix="prefetch",
                       headers={"x-test-action": "sleep:30"})
    wait_for_ready(broker, queue, len(ids))
    sampler = UnackedSampler(broker, queue).start()
    config = warren_config(workers=[scripted_worker("out-prefetch", queue, record_file,
                                                    prefetch=10, concurrency=4)])

    warren(config, **warren_options())
    record_file.wait_for_count(len(ids), timeout=60)
    wait_until(lambda: broker.message_count(queue) == 0, 30, what=f"{queue} drained")
    samples = sampler.stop()

    assert samples.missing == 0, samples
    assert samples.nonzero >= 20, f"the sampler barely saw the run: {samples}"
    assert samples.maximum <= 10, f"more unacked messages than the prefetch of 10: {samples}"
    assert samples.maximum >= 4, f"never even `concurrency` messages in flight: {samples}"
    Tally.of(ids, record_file.ids()).assert_exactly_once()
