"""`warren dlq list|peek|replay|purge` on a real broker, as an operator uses it after a bug: the
`scripted` worker dead-letters messages whose action is `ack_if_file:<path>` while the file is
missing (max_attempts = 2, both in-process); creating the file "fixes the bug"; a replay must then
get every dead letter processed (attempt reset to 1) and leave the dead-letter queue empty.

The record file tells which ids the handler saw; its first lines are the failed attempts, so the
lines after them are what the replay delivered.
"""

import subprocess
import textwrap
from collections import Counter
from typing import Dict, List, Optional

import pytest

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import quorum_queue, scripted_worker, warren_config
from testkit_traffic import wait_drained
from testkit_warren import die_with_parent
from warren_testkit import env, free_port, require_services, wait_until, warren_cli

MAX_ATTEMPTS = 2


class DeadLetterScene:
    """A running host whose worker "w" dead-letters until `fix()` creates the file."""

    def __init__(self, broker, created, warren, record_file, tmp_path):
        self.broker = broker
        self.record_file = record_file
        self.exchange = created.exchange("dlq-ex")
        self.queue = created.queue("dlq-work")
        self.dead_letters = created.exchange("dlq-dlx")
        self.dead_letter_queue = created.queue("dlq-dead")
        self.routing_key = "order.created"
        self.fix_file = tmp_path / "bug-fixed"
        self.action = f"ack_if_file:{self.fix_file}"
        self.host = warren(self._config(), plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"))
        self.host.wait_ready(timeout=60)
        self.dead_lettered: List[str] = []

    def _config(self) -> str:
        # concurrency 1: the handler sees messages in queue order (the barrier below relies on it).
        return textwrap.dedent(f"""\
            [host]
            name = "dlq-test"
            shutdown_timeout = "10s"

            [log]
            level = "error"

            [metrics]
            listen = "127.0.0.1:{free_port()}"

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

            [[workers]]
            name = "w"
            plugin = "scripted"
            queue = "{self.queue}"
            prefetch = 20
            concurrency = 1
            dead_letter_queue = "{self.dead_letter_queue}"
            retry = {{ max_attempts = {MAX_ATTEMPTS}, immediate = 1 }}
            [workers.settings]
            record_file = "{self.record_file}"
            """)

    # -- making and counting dead letters ----------------------------------------------------------
    def dead_letter(self, n: int, headers: Optional[Dict[str, str]] = None,
                    prefix: str = "dead") -> List[str]:
        """Publishes N messages that fail (the bug is not fixed) and waits until all are dead
        letters (each after MAX_ATTEMPTS handler calls)."""
        assert not self.fix_file.exists()
        calls_before = len(self.record_file.records())
        ids = self.broker.publish_many(self.exchange, self.routing_key, n, prefix=prefix,
                                       headers={"x-test-action": self.action, **(headers or {})})
        self.dead_lettered += ids
        self.record_file.wait_for_count(calls_before + n * MAX_ATTEMPTS, timeout=60)
        self.wait_dead_letters(len(self.dead_lettered))
        return ids

    def dead_letter_count(self) -> int:
        return self.broker.message_count(self.dead_letter_queue)

    def wait_dead_letters(self, n: int, timeout: float = 30) -> None:
        """Waits until the dead-letter queue holds N ready messages (a dlq verb that exits hands
        back what it did not take; that may take the broker a moment)."""
        wait_until(lambda: self.dead_letter_count() == n, timeout,
                   what=lambda: f"{n} dead letters (have {self.dead_letter_count()})")

    def wait_drained(self, queue: str) -> None:
        """Nothing ready, nothing unacked and nobody consuming QUEUE."""
        wait_drained(self.broker, queue)

    def fix(self) -> None:
        self.fix_file.write_text("fixed\n")

    def calls_after(self, index: int) -> List:
        return self.record_file.records()[index:]

    def barrier(self) -> None:
        """Publishes a message the handler acks and waits for it: with one handler thread, every
        message queued before it has been handled by then."""
        [marker] = self.broker.publish_many(self.exchange, self.routing_key, 1, prefix="barrier",
                                            headers={"x-test-action": "ack"})
        wait_until(lambda: marker in self.record_file.ids(), timeout=30,
                   what=f"the barrier message {marker} to be handled")

    # -- the CLI ---------------------------------------------------------------------------------
    def dlq_args(self, verb: str, *args: str) -> List[str]:
        return ["dlq", verb, "-c", str(self.host.config_path), "--worker", "w", *args]

    def dlq(self, verb: str, *args: str) -> subprocess.CompletedProcess:
        return warren_cli(*self.dlq_args(verb, *args), timeout=120)


@pytest.fixture
def scene(broker, created, warren, record_file, tmp_path) -> DeadLetterScene:
    """`created` before `warren`: the host stops before its queues are deleted."""
    return DeadLetterScene(broker, created, warren, record_file, tmp_path)


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


# ---- replay after the fix ------------------------------------------------------------------------

def test_DlqReplay_AfterTheFix_EveryDeadLetterIsProcessedOnceWithAttemptReset_DryRunMovesNothing(
        scene):
    ids = scene.dead_letter(100)
    failed_calls = len(scene.record_file.records())

    listing = scene.dlq("list")
    assert listing.returncode == 0, output(listing)
    assert f"{scene.dead_letter_queue}: 100 dead letter(s) of worker 'w'" in listing.stdout
    error = (f"gave up after {MAX_ATTEMPTS} attempts: std::runtime_error: scripted: "
             f"'{scene.fix_file}' does not exist yet")
    assert f"100  {error}" in listing.stdout, output(listing)
    assert f"100  {scene.exchange} / {scene.routing_key}" in listing.stdout, output(listing)

    peek = scene.dlq("peek", "--limit", "2")
    assert peek.returncode == 0, output(peek)
    shown = [line for line in peek.stdout.splitlines() if line.startswith("message ")]
    assert len(shown) == 2, output(peek)
    assert f"error: {error}" in peek.stdout and "x-warren-attempt: 2" in peek.stdout, output(peek)
    assert "2 shown" in peek.stdout

    dry_run = scene.dlq("replay", "--dry-run")
    assert dry_run.returncode == 0, output(dry_run)
    assert "100 message(s) would be replayed (dry run: nothing moved)" in dry_run.stdout
    scene.wait_dead_letters(100)
    scene.barrier()
    assert [r.action for r in scene.calls_after(failed_calls)] == ["ack"], \
        "the dry run delivered something"

    scene.fix()
    replay = scene.dlq("replay")
    assert replay.returncode == 0, output(replay)
    assert f"100 message(s) replayed from {scene.dead_letter_queue}" in replay.stdout
    replayed_from = failed_calls + 1  # after the barrier message
    wait_until(lambda: set(ids) <= {r.message_id for r in scene.calls_after(replayed_from)},
               timeout=60, what="every replayed message to be handled")
    scene.barrier()
    scene.wait_dead_letters(0)

    replayed = [r for r in scene.calls_after(replayed_from) if r.message_id in set(ids)]
    assert Counter(r.message_id for r in replayed) == Counter(ids), "not exactly once each"
    assert {r.attempt for r in replayed} == {1}, "the replay must reset the attempt"
    assert {r.action for r in replayed} == {scene.action}
    assert scene.host.terminate() == 0, scene.host.describe()
    scene.wait_drained(scene.queue)
    scene.wait_drained(scene.dead_letter_queue)


def test_DlqReplay_WhereAndLimit_SelectWhichDeadLettersMove(scene):
    batch_a = scene.dead_letter(20, headers={"x-batch": "a"}, prefix="a")
    batch_b = scene.dead_letter(20, headers={"x-batch": "b"}, prefix="b")
    failed_calls = len(scene.record_file.records())
    scene.fix()

    first = scene.dlq("replay", "--where", "x-batch=a", "--limit", "5")
    assert first.returncode == 0, output(first)
    assert "5 message(s) replayed" in first.stdout, output(first)
    scene.wait_dead_letters(35)
    rest = scene.dlq("replay", "--where", "x-batch=a")
    assert rest.returncode == 0, output(rest)
    assert "15 message(s) replayed" in rest.stdout, output(rest)
    scene.wait_dead_letters(20)
    scene.barrier()

    handled = [r.message_id for r in scene.calls_after(failed_calls) if r.action != "ack"]
    assert Counter(handled) == Counter(batch_a)
    listing = scene.dlq("list", "--where", "x-batch=b")
    assert "20 dead letter(s) of worker 'w'" in listing.stdout, output(listing)
    assert sorted(m.message_id for m in scene.broker.drain(scene.dead_letter_queue, expect=len(batch_b))) == \
        sorted(batch_b)


# ---- purge ---------------------------------------------------------------------------------------

def test_DlqPurge_WithoutYesExits2AndDeletesNothing_WithYesDeletes(scene):
    scene.dead_letter(20)

    refused = scene.dlq("purge")
    assert refused.returncode == 2, output(refused)
    assert "--yes" in refused.stderr
    scene.wait_dead_letters(20)

    purged = scene.dlq("purge", "--yes")
    assert purged.returncode == 0, output(purged)
    assert f"20 message(s) deleted from {scene.dead_letter_queue}" in purged.stdout
    scene.wait_dead_letters(0)
    scene.wait_drained(scene.dead_letter_queue)


# RabbitMQ 3.10 quorum queues drop acks still in flight at channel.close (rabbitmq-server
# issue 10327): the purge must make its acks land before closing.
def test_DlqPurge_TwoHundredDeadLetters_AllAreDeleted(scene):
    scene.dead_letter(200)

    purged = scene.dlq("purge", "--yes")
    assert purged.returncode == 0, output(purged)
    assert "200 message(s) deleted" in purged.stdout, output(purged)
    scene.wait_dead_letters(0, timeout=5)


# ---- a replay killed midway ----------------------------------------------------------------------

def test_DlqReplay_KilledMidway_LosesNothing_ASecondReplayFinishesTheJob(scene, tmp_path):
    ids = scene.dead_letter(100)
    failed_calls = len(scene.record_file.records())
    scene.fix()

    with open(tmp_path / "replay.out", "wb") as out:
        replay = subprocess.Popen([env("WARREN_BIN"), *scene.dlq_args("replay", "--rate", "20/s")],
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  preexec_fn=die_with_parent)
    try:
        # About a second in: 20 messages moved and handled, 80 still held by the tool.
        scene.record_file.wait_for_count(failed_calls + 20, timeout=30)
    finally:
        replay.kill()
        replay.wait()
    interrupted = {r.message_id for r in scene.calls_after(failed_calls)}
    assert 20 <= len(interrupted) < 100, "the kill came too late to interrupt anything"

    again = scene.dlq("replay")
    assert again.returncode == 0, output(again)
    wait_until(lambda: set(ids) <= set(r.message_id for r in scene.calls_after(failed_calls)),
               timeout=60, what="every id handled after the fix")
    scene.barrier()
    scene.wait_dead_letters(0)

    counts = Counter(r.message_id for r in scene.calls_after(failed_calls) if r.action != "ack")
    assert set(counts) == set(ids), "a dead letter was lost"
    # A letter whose republish was confirmed but whose ack had not reached the broker at the kill
    # is replayed twice; at 20/s at most one or two are in that window.
    twice = [message_id for message_id, n in counts.items() if n > 1]
    assert len(twice) <= 2 and all(counts[i] == 2 for i in twice), counts.most_common(5)


# ---- --help --------------------------------------------------------------------------------------

@pytest.mark.parametrize("verb", ["list", "peek", "replay", "purge"])
def test_DlqVerb_Help_ExitsZeroDescribingItsOptions(verb):
    require_services("warren")
    result = warren_cli("dlq", verb, "--help")
    assert result.returncode == 0, output(result)
    for option in ("--config", "--worker", "--limit", "--where"):
        assert option in result.stdout, output(result)
    expected = {"replay": ["--dry-run", "--rate", "--original-route"],
                "purge": ["--yes", "--dry-run"]}
    for option in expected.get(verb, []):
        assert option in result.stdout, output(result)


# ---- what a republished copy keeps (issue 19 item 9) ---------------------------------------------

# Every property a publisher can set that a copy must keep, as pika names them. user_id is not
# among them: the broker refuses a user_id other than the publishing connection's own user.
KEPT_PROPERTIES = ("content_type", "content_encoding", "correlation_id", "reply_to", "type",
                   "app_id", "priority", "expiration", "timestamp", "message_id", "delivery_mode",
                   "cluster_id")


def without_warren_headers(headers: Dict) -> Dict:
    return {name: value for name, value in headers.items() if not name.startswith("x-warren-")}


def fidelity_config(exchange: str, queue: str, bystander: str, dead_letters: str,
                    dead_letter_queue: str, record_file) -> str:
    """Worker "w" on QUEUE: one broker-delayed retry, then a dead letter into DEAD_LETTER_QUEUE.
    BYSTANDER, bound to the same exchange and key, belongs to no worker: it keeps the copy the
    broker routed to it at the publish, and shows where a replay goes."""
    bindings = [{"exchange": exchange, "routing_key": "order.#"}]
    return warren_config(
        host={"name": "dlq-fidelity", "shutdown_timeout": "10s"},
        log={"level": "error"},
        metrics={"enabled": True, "listen": f"127.0.0.1:{free_port()}"},
        exchanges=[{"name": exchange, "type": "topic"}, {"name": dead_letters, "type": "fanout"}],
        queues=[quorum_queue(queue, dead_letter_exchange=dead_letters, bindings=bindings),
                quorum_queue(bystander, bindings=bindings)],
        workers=[scripted_worker("w", queue, record_file, dead_letter_queue=dead_letter_queue,
                                 retry={"max_attempts": 2, "backoff": "fixed",
                                        "initial": "100ms", "jitter": 0})])


def test_DlqReplay_OfAMessageRetriedThenDeadLettered_IsIdenticalButForWarrenHeaders_AndReachesOnlyTheWorkersQueue(  # noqa: E501
        broker, created, warren, record_file, tmp_path):
    exchange = created.exchange("dlq-fid-ex")
    dead_letters = created.exchange("dlq-fid-dlx")
    queue = created.queue("dlq-fid-work")
    bystander = created.queue("dlq-fid-bystander")
    dead_letter_queue = created.queue("dlq-fid-dead")
    host = warren(fidelity_config(exchange, queue, bystander, dead_letters, dead_letter_queue,
                                  record_file),
                  plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"))
    host.wait_ready(timeout=60)

    # Fails until the file exists: it never will. With a trace context of its own: Warren starts
    # one for a message that has none, and its copies carry it (the README's tracing promise).
    action = f"ack_if_file:{tmp_path / 'never'}"
    message_id = broker.publish(
        exchange, "order.created", b"\x1f\x8b\x08\x00gzipped-order",
        headers={"x-test-action": action, "x-int": 42, "x-negative": -7, "x-flag": True,
                 "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                 "x-table": {"sku": "B-1", "quantity": 3, "nested": {"deep": 1}},
                 "x-list": [1, "two"]},
        content_type="application/json", content_encoding="gzip", correlation_id="corr-42",
        reply_to="replies", type="order.created", app_id="shop", priority=3,
        expiration="600000", timestamp=1700000000, cluster_id="c1")
    record_file.wait_for_count(2, timeout=60)
    assert [r.attempt for r in record_file.records()] == [1, 2], "the first and its delayed retry"
    wait_until(lambda: broker.message_count(dead_letter_queue) == 1, timeout=30,
               what="the dead letter")
    assert host.terminate() == 0, host.describe()  # the replayed copy stays in the queue
    [original] = broker.drain(bystander, expect=1)
    assert original.message_id == message_id

    replay = warren_cli("dlq", "replay", "-c", str(host.config_path), "--worker", "w",
                        timeout=120)

    assert replay.returncode == 0, output(replay)
    assert "1 message(s) replayed" in replay.stdout, output(replay)
    # The replay's publish was confirmed before the tool exited: it is in every queue it reached.
    assert broker.message_count(bystander) == 0, "the replay reached a queue of no worker"
    assert broker.message_count(dead_letter_queue) == 0
    [replayed] = broker.drain(queue, expect=1)
    assert replayed.body == original.body
    differences = {name: (getattr(original.properties, name), getattr(replayed.properties, name))
                   for name in KEPT_PROPERTIES
                   if getattr(original.properties, name) != getattr(replayed.properties, name)}
    assert differences == {}, differences
    assert without_warren_headers(replayed.headers) == without_warren_headers(original.headers)
    assert replayed.headers["x-warren-replay-count"] in ("1", b"1"), replayed.headers


def test_DlqReplay_OriginalRoute_GoesToEveryQueueBoundThere_TheDefaultOnlyToTheWorkersQueue(
        broker, created, tmp_path):
    require_services("rabbitmq", "warren")
    exchange = created.exchange("dlq-route-ex")
    work = created.queue("dlq-route-work")
    bystander = created.queue("dlq-route-bystander")
    dead = created.queue("dlq-route-dead")
    broker.declare_exchange(exchange, "topic")
    for bound in (work, bystander):
        broker.declare_queue(bound)
        broker.bind_queue(bound, exchange, "order.#")
    broker.declare_queue(dead)
    for letter in ("letter-1", "letter-2"):
        broker.publish("", dead, "{}", message_id=letter, headers={
            "x-warren-worker": "w",
            "x-warren-original-exchange": exchange,
            "x-warren-original-routing-key": "order.created",
        })
    config = tmp_path / "warren.toml"
    config.write_text(textwrap.dedent(f"""\
        [broker]
        uri = "{env("WARREN_TEST_AMQP_URI")}"

        [[workers]]
        name = "w"
        plugin = "scripted"
        queue = "{work}"
        allow_message_loss = true
        """))

    def replay(*args: str) -> subprocess.CompletedProcess:
        result = warren_cli("dlq", "replay", "-c", str(config), "--worker", "w", "--queue", dead,
                            "--limit", "1", *args, timeout=60)
        assert result.returncode == 0, output(result)
        assert "1 message(s) replayed" in result.stdout, output(result)
        return result

    default = replay()
    assert f"-> {exchange} / order.created (worker queue only)" in default.stdout, output(default)
    assert [m.message_id for m in broker.drain(work, expect=1)] == ["letter-1"]
    assert broker.message_count(bystander) == 0

    original_route = replay("--original-route")
    assert f"-> {exchange} / order.created\n" in original_route.stdout, output(original_route)
    assert [m.message_id for m in broker.drain(work, expect=1)] == ["letter-2"]
    assert [m.message_id for m in broker.drain(bystander, expect=1)] == ["letter-2"]


# ---- browsing spends nothing (issue 19 item 8) ---------------------------------------------------

def standalone_config(tmp_path, work_queue: str) -> str:
    """A config with worker "w" on WORK_QUEUE and nothing else: the dlq verbs read --queue."""
    config = tmp_path / "warren.toml"
    config.write_text(textwrap.dedent(f"""\
        [broker]
        uri = "{env("WARREN_TEST_AMQP_URI")}"

        [[workers]]
        name = "w"
        plugin = "scripted"
        queue = "{work_queue}"
        allow_message_loss = true
        """))
    return str(config)


def letter_headers() -> Dict[str, str]:
    return {"x-warren-worker": "w", "x-warren-error": "boom",
            "x-warren-original-exchange": "orders", "x-warren-original-routing-key": "order.created"}


def test_DlqPeek_ThreeTimesOnAQuorumQueueWithDeliveryLimit2_TheLetterIsStillThere(
        broker, created, tmp_path):
    require_services("rabbitmq", "warren")
    dead = created.queue("dlq-limit-dead")
    broker.declare_queue(dead, queue_type="quorum")
    policy = f"warren-test-{dead}"
    broker.rabbitmqctl("set_policy", "--apply-to", "queues", policy, f"^{dead}$",
                       '{"delivery-limit": 2}')
    try:
        [letter] = [broker.publish("", dead, "{}", message_id="the-letter",
                                   headers=letter_headers())]
        config = standalone_config(tmp_path, created.queue("dlq-limit-work"))
        for _ in range(3):
            peek = warren_cli("dlq", "peek", "-c", config, "--worker", "w", "--queue", dead,
                              timeout=60)
            assert peek.returncode == 0, output(peek)
            assert "message the-letter" in peek.stdout, output(peek)
            assert "1 shown" in peek.stdout, output(peek)

        listing = warren_cli("dlq", "list", "-c", config, "--worker", "w", "--queue", dead,
                             timeout=60)
        assert listing.returncode == 0, output(listing)
        assert f"{dead}: 1 dead letter(s) of worker 'w'" in listing.stdout, output(listing)
        [kept] = broker.drain(dead, expect=1)
        assert kept.message_id == letter and kept.headers["x-warren-error"] in ("boom", b"boom")
    finally:
        broker.rabbitmqctl("clear_policy", policy)


def test_DlqPeek_Limit3OfFiveHundredLetters_ReadsOnlyThree(broker, created, tmp_path):
    """A letter the tool read is moved to the tail of the queue (a confirmed copy, then the
    original acked) rather than handed back: the queue's order afterwards tells how many were
    read, and no letter comes back redelivered."""
    require_services("rabbitmq", "warren")
    dead = created.queue("dlq-bounded-dead")
    broker.declare_queue(dead, queue_type="quorum")
    ids = broker.publish_many("", dead, 500, prefix="letter", headers=letter_headers(),
                              body=b"x" * 1000)
    config = standalone_config(tmp_path, created.queue("dlq-bounded-work"))

    peek = warren_cli("dlq", "peek", "-c", config, "--worker", "w", "--queue", dead,
                      "--limit", "3", timeout=60)

    assert peek.returncode == 0, output(peek)
    shown = [line for line in peek.stdout.splitlines() if line.startswith("message ")]
    assert shown == [f"message {i}" for i in ids[:3]], output(peek)
    after = broker.drain(dead, expect=500)
    # A quorum queue counts every return in x-delivery-count (3.10 shows 0 before the first).
    redelivered = [m.message_id for m in after
                   if m.redelivered or m.headers.get("x-delivery-count", 0) > 0]
    assert redelivered == [], f"{len(redelivered)} letters were handed back: {redelivered[:5]}"
    assert [m.message_id for m in after] == ids[3:] + ids[:3], \
        "not exactly the three shown were read (moved to the tail)"


# ---- --queue alone: another producer's dead letters (issue 22) ----------------------------------

def test_DlqQueueAlone_BrokerDeadLetteredLetters_ListShowsTheBrokersReasonAndReplayPutsThemBack(
        broker, created, tmp_path):
    """A queue no worker of the config consumes, whose expired messages the broker dead-letters
    (x-death, no x-warren-* header): `--queue` without `--worker` lists them with the broker's
    reason and queue, and replays each into the queue it died in, and nowhere else."""
    require_services("rabbitmq", "warren")
    dead = broker.declare_queue(created.queue("dlq-foreign-dead"), queue_type="quorum")
    source = broker.declare_queue(created.queue("dlq-foreign-src"), arguments={
        "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead})
    ids = broker.publish_many("", source, 3, prefix="foreign", expiration="1")
    wait_until(lambda: broker.message_count(dead) == 3, timeout=30,
               what=lambda: f"3 expired letters in {dead}: {broker.message_count(dead)}")
    config = standalone_config(tmp_path, created.queue("dlq-foreign-work"))

    listing = warren_cli("dlq", "list", "-c", config, "--queue", dead, timeout=60)
    assert listing.returncode == 0, output(listing)
    assert f"{dead}: 3 dead letter(s) (" in listing.stdout, output(listing)
    assert f"3  dead-lettered by the broker: expired (in queue '{source}')" in listing.stdout, \
        output(listing)
    assert "no reason recorded" not in listing.stdout, output(listing)

    replay = warren_cli("dlq", "replay", "-c", config, "--queue", dead, timeout=60)
    assert replay.returncode == 0, output(replay)
    assert "3 message(s) replayed" in replay.stdout, output(replay)
    assert broker.message_count(dead) == 0, output(replay)
    assert sorted(m.message_id for m in broker.drain(source, expect=3)) == sorted(ids)


def test_DlqVerb_NeitherWorkerNorQueue_ExitsTwoSayingWhatToName(tmp_path, created):
    require_services("warren")
    config = standalone_config(tmp_path, created.queue("dlq-nothing-work"))
    result = warren_cli("dlq", "list", "-c", config, timeout=30)
    assert result.returncode == 2, output(result)
    assert "--worker W" in result.stderr and "--queue NAME" in result.stderr, output(result)
