"""Crash accounting (issue 18) with a real broker and real crashes: a message that crashes the host
must not take its neighbours to the dead-letter queue.

Each test runs the `scripted` test plugin as worker "w" (prefetch 20, concurrency 4) on a quorum
queue with a dead-letter exchange and queue, with a state directory of its own that outlives each
host process, and starts the host again whenever it dies, as systemd's Restart= would (the
Supervisor). A poison message segfaults the plugin (a real SIGSEGV) or aborts it; every call is
recorded by the plugin with its time, so the tests know which run handled what, and each restarted
host logs which messages the previous run died on.
"""

import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import (apply_topology, cli_environment, quorum_queue, scripted_worker,
                            warren_config, warren_options)
from testkit_metrics import scrape, total, value
from testkit_traffic import wait_drained
from warren_testkit import free_port, wait_until, warren_cli

MAX_CRASHES = 3  # the default
GOOD = 50
PREFETCH = 20
CONCURRENCY = 4
HANDLER_MS = 20  # each good message sleeps this long: neighbours are in handlers at a crash
DEATHS = {"segfault": signal.SIGSEGV, "abort": signal.SIGABRT}

# What a restarted host logs about each message the previous run died on.
BLAMED = re.compile(r"the previous run \(pid \d+\) died (?:of (SIG[A-Z]+)|\(no fatal signal "
                    r"recorded[^)]*\)) while message id '([^']+)' of queue")


def text(value_) -> str:
    """A header value as text (pika gives AMQP long strings as bytes)."""
    return value_.decode() if isinstance(value_, bytes) else str(value_)


class Names:
    """One test's topology: topic exchange -> quorum queue (worker "w") -> fanout dead-letter
    exchange -> dead-letter queue (deleted after the test), the host's state directory and its
    metrics endpoint."""

    def __init__(self, created, tmp_path: Path, prefix: str):
        self.exchange = created.exchange(f"{prefix}-ex")
        self.queue = created.queue(prefix)
        self.dead_letters = created.exchange(f"{prefix}-dlx")
        self.dead_letter_queue = created.queue(f"{prefix}-dlq")
        self.routing_key = "order.created"
        self.state_dir = tmp_path / "state"
        self.state_dir.mkdir()
        self.host_name = self.queue
        self.metrics = f"127.0.0.1:{free_port()}"

    @property
    def journal(self) -> Path:
        return self.state_dir / f"{self.host_name}.crash-journal"

    @property
    def ledger(self) -> Path:
        return self.state_dir / f"{self.host_name}.crash-ledger"

    def config(self, record_file, *, delivery_limit: Optional[int] = None,
               gate_file: Optional[Path] = None, **worker_keys) -> str:
        """warren.toml: delivery_limit None is Warren's default for a quorum queue with a
        dead-letter exchange (20)."""
        worker = scripted_worker("w", self.queue, record_file, prefetch=PREFETCH,
                                 concurrency=CONCURRENCY, default_action=f"sleep:{HANDLER_MS}",
                                 record_time=True, dead_letter_queue=self.dead_letter_queue,
                                 retry={"max_attempts": 3, "immediate": 0}, **worker_keys)
        if gate_file is not None:
            worker["settings"]["gate_file"] = str(gate_file)
        return warren_config(
            host={"name": self.host_name, "state_dir": str(self.state_dir),
                  "shutdown_timeout": "10s"},
            metrics={"enabled": True, "listen": self.metrics},
            exchanges=[{"name": self.exchange, "type": "topic"},
                       {"name": self.dead_letters, "type": "fanout"}],
            queues=[quorum_queue(self.queue, dead_letter_exchange=self.dead_letters,
                                 delivery_limit=delivery_limit,
                                 bindings=[{"exchange": self.exchange, "routing_key": "order.#"}])],
            workers=[worker])

    def publish(self, broker, n: int, prefix: str, action: Optional[str] = None) -> List[str]:
        headers = {"x-test-action": action} if action else None
        return broker.publish_many(self.exchange, self.routing_key, n, prefix=prefix,
                                   headers=headers)


# ---- a host restarted as systemd would ----------------------------------------------------------

@dataclass
class Run:
    process: object
    started: float
    ended: Optional[float] = None  # when the supervisor saw it dead
    blamed: List[str] = field(default_factory=list)  # what it logged the previous run died on
    signals: Set[str] = field(default_factory=set)  # the fatal signals it logged


class Supervisor:
    """Starts the host, and starts it again whenever it died, as systemd's Restart= would (with no
    RestartSec: the tests have no time to lose)."""

    def __init__(self, warren, config: str):
        self.warren = warren
        self.config = config
        self.runs: List[Run] = []
        self.start()

    @property
    def host(self):
        return self.runs[-1].process

    def start(self) -> None:
        # Under ASan, its own SEGV handler would report the plugin's fault and exit 1: the host
        # must die of the signal, as a release build does.
        asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "handle_segv=0"]))
        started = time.time()
        process = self.warren(self.config, **warren_options(env_overrides={"ASAN_OPTIONS": asan}))
        for sig in DEATHS.values():
            process.allow_death_by(sig)  # the deaths the tests provoke are no crash of the kit's
        self.runs.append(Run(process=process, started=started))

    def restart_if_dead(self) -> None:
        if not self.host.running():
            self.runs[-1].ended = time.time()
            self.start()

    def deaths(self) -> List[int]:
        return [run.process.returncode for run in self.runs if run.ended is not None]

    def read_blame(self) -> List[Run]:
        """Fills each run's `blamed` and `signals` from its log; returns the restarted runs."""
        for run in self.runs:
            found = BLAMED.findall(run.process.logs())
            run.blamed = [message_id for _signal, message_id in found]
            run.signals = {sig for sig, _message_id in found if sig}
        return self.runs[1:]

    def run_of(self, at: float) -> int:
        """The index of the run that was alive at time AT."""
        for index, run in enumerate(self.runs):
            if run.started <= at and (run.ended is None or at <= run.ended):
                return index
        raise AssertionError(f"no run alive at {at}")


def scenario(broker, names: Names, config: str, record_file, warren, tmp_path: Path,
             poisons: List[str]) -> Dict[str, object]:
    """The issue's scenario: GOOD good messages with one poison message per action in POISONS
    spread evenly among them, published before the host starts; the host supervised until every
    good message was handled and every poison is in the dead-letter queue, then stopped with
    SIGTERM (exit 0). Returns what happened."""
    apply_topology(config, tmp_path)
    chunk = GOOD // (len(poisons) + 1)
    good: List[str] = []
    poison: List[str] = []
    for action in poisons + [None]:
        good += names.publish(broker, chunk if action else GOOD - chunk * len(poisons), "good")
        if action:
            poison += names.publish(broker, 1, action, action=action)
    supervisor = Supervisor(warren, config)

    def done() -> bool:
        supervisor.restart_if_dead()
        if broker.message_count(names.dead_letter_queue) < len(poisons):
            return False
        if not set(good) <= set(record_file.ids()):
            return False
        # Nothing ready in the queue and nothing received but unsettled in the (healthy) host.
        in_flight = value(scrape(names.metrics), "warren_messages_in_flight", worker="w")
        return broker.message_count(names.queue) == 0 and in_flight == 0

    wait_until(done, timeout=240, interval=0.05, ignore=(OSError,),
               what=lambda: f"every good message handled and {len(poisons)} dead letter(s) "
                            f"({len(supervisor.runs) - 1} restarts so far)")
    host = supervisor.host
    series = scrape(names.metrics)
    assert host.terminate() == 0, host.describe()
    wait_drained(broker, names.queue)
    return {"good": good, "poison": poison, "supervisor": supervisor,
            "restarted": supervisor.read_blame(), "metrics": series,
            "dead_letters": broker.drain(names.dead_letter_queue, expect=len(poisons),
                                         settle=0.5)}


def duplicates_by_death(record_file, good: List[str], supervisor: Supervisor) -> Dict[int, int]:
    """For each run that died: how many good messages it had started that a later run handled
    again. Asserts that every repeated call is of that kind: a good message is handled at most once
    per run, and again only after the run that had it died."""
    calls: Dict[str, List[float]] = {}
    for record in record_file.records():
        calls.setdefault(record.message_id, []).append(record.time)
    per_death: Counter = Counter()
    for message_id in good:
        runs = [supervisor.run_of(at) for at in sorted(calls.get(message_id, []))]
        assert runs, f"{message_id} was never handled"
        assert len(set(runs)) == len(runs), f"{message_id} handled twice in one run: {runs}"
        for earlier in runs[:-1]:
            assert supervisor.runs[earlier].ended is not None, (
                f"{message_id} handled in runs {runs}: again after run {earlier}, which did not "
                f"die")
            per_death[earlier] += 1
    return {death: per_death[death] for death, run in enumerate(supervisor.runs)
            if run.ended is not None}


def assert_good_ones_handled(label: str, record_file, result: Dict[str, object], capsys) -> None:
    """Every good message handled; repeats only of messages a dying run had started: at least the
    innocents blamed for that death (they were in handlers), at most its prefetch window. Prints
    the counts."""
    supervisor: Supervisor = result["supervisor"]
    duplicates = duplicates_by_death(record_file, result["good"], supervisor)
    blamed = {death: len(set(run.blamed) & set(result["good"]))
              for death, run in enumerate(supervisor.runs[1:])}
    assert all(blamed[death] <= count <= PREFETCH for death, count in duplicates.items()), \
        (duplicates, blamed)
    with capsys.disabled():
        print(f"\n[{label}] deaths {len(supervisor.deaths())}, messages blamed per death "
              f"{[len(run.blamed) for run in result['restarted']]}, good messages handled again "
              f"after each death {list(duplicates.values())}")


def assert_blamed_alone_after_first(restarted: List[Run], poison: str, good: List[str],
                                    record_file, supervisor: Supervisor) -> None:
    """The first death a poison caused blamed it and whatever ran beside it (at most concurrency
    - 1 innocents, each then run alone once, and handled); from then on it ran alone, so each of
    its later deaths blamed it alone."""
    deaths = [index for index, run in enumerate(restarted) if poison in run.blamed]
    assert len(deaths) == MAX_CRASHES, [run.blamed for run in restarted]
    first, later = deaths[0], deaths[1:]
    innocents = [message_id for message_id in restarted[first].blamed if message_id != poison]
    assert len(innocents) <= CONCURRENCY - 1, restarted[first].blamed
    assert set(innocents) <= set(good), restarted[first].blamed
    assert [restarted[death].blamed for death in later] == [[poison]] * (MAX_CRASHES - 1)
    # Each innocent ran again in the run after that death (alone) and succeeded.
    handled_in = {record.message_id: supervisor.run_of(record.time)
                  for record in record_file.records() if record.message_id in innocents}
    assert all(handled_in[message_id] >= first + 1 for message_id in innocents), handled_in


# ---- the scenario ----------------------------------------------------------------------

@pytest.mark.parametrize("delivery_limit", [5, None], ids=["delivery_limit_5", "default_limit"])
def test_CrashAccounting_OneSegfaultAmong50_DeadLetteredAloneAfterMaxCrashesEveryGoodOneHandled(
        broker, created, warren, record_file, tmp_path, delivery_limit, capsys):
    names = Names(created, tmp_path, "crash-one")
    config = names.config(record_file, delivery_limit=delivery_limit)
    result = scenario(broker, names, config, record_file, warren, tmp_path, ["segfault"])
    supervisor: Supervisor = result["supervisor"]
    restarted: List[Run] = result["restarted"]
    [poison] = result["poison"]

    # Exactly max_crashes deaths, each of SIGSEGV, recorded as such by the next run.
    assert supervisor.deaths() == [-signal.SIGSEGV] * MAX_CRASHES, supervisor.deaths()
    assert [run.signals for run in restarted] == [{"SIGSEGV"}] * MAX_CRASHES
    assert_blamed_alone_after_first(restarted, poison, result["good"], record_file, supervisor)
    assert record_file.ids().count(poison) == MAX_CRASHES, "it ran max_crashes times, then never"

    # The dead-letter queue holds the poison only, dead-lettered by the host with the reason.
    [dead] = result["dead_letters"]
    assert dead.message_id == poison
    assert text(dead.headers["x-warren-error"]) == \
        f"crash: the host died {MAX_CRASHES} times while handling this message"
    assert text(dead.headers["x-warren-crashes"]) == str(MAX_CRASHES)
    assert text(dead.headers["x-warren-worker"]) == "w"
    assert "x-death" not in dead.headers, "dead-lettered by the broker's delivery limit"
    # The last run: one suspect found at its start (the poison), one dead letter for a crash.
    series = result["metrics"]
    assert value(series, "warren_host_crash_suspects_total", worker="w") == 1
    assert value(series, "warren_messages_dead_lettered_total", worker="w", reason="crash") == 1
    assert not names.ledger.exists(), "the ledger keeps nothing once the poison is dead-lettered"
    assert not names.journal.exists(), "a clean stop leaves no journal"

    assert_good_ones_handled(f"{delivery_limit=}", record_file, result, capsys)


def test_CrashAccounting_TwoDifferentPoisons_EachDeadLetteredAfterMaxCrashes_GoodOnesAllHandled(
        broker, created, warren, record_file, tmp_path, capsys):
    names = Names(created, tmp_path, "crash-two")
    # The default delivery limit (20): a message prefetched beside both poisons may come back at
    # each of their 2 x max_crashes deaths, more than a limit of 5 allows (docs/operations.md).
    config = names.config(record_file)
    result = scenario(broker, names, config, record_file, warren, tmp_path,
                      ["segfault", "abort"])
    supervisor: Supervisor = result["supervisor"]
    restarted: List[Run] = result["restarted"]
    segfaulting, aborting = result["poison"]

    # Never both in handlers at once (a suspect runs alone), so each death is one poison's: the
    # next run blames it and names its signal. (Which comes first depends on the order in which
    # the broker returns a dead host's window.)
    assert Counter(supervisor.deaths()) == {-signal.SIGSEGV: MAX_CRASHES,
                                            -signal.SIGABRT: MAX_CRASHES}, supervisor.deaths()
    signal_of = {segfaulting: signal.SIGSEGV, aborting: signal.SIGABRT}
    for death, run in zip(supervisor.deaths(), restarted):
        [poison] = [message_id for message_id in run.blamed if message_id in signal_of]
        assert (death, run.signals) == (-signal_of[poison], {signal_of[poison].name}), run.blamed
    for poison in (segfaulting, aborting):
        assert_blamed_alone_after_first(restarted, poison, result["good"], record_file,
                                        supervisor)
        assert record_file.ids().count(poison) == MAX_CRASHES

    dead = {letter.message_id: letter for letter in result["dead_letters"]}
    assert sorted(dead) == sorted([segfaulting, aborting])
    assert [text(letter.headers["x-warren-crashes"]) for letter in dead.values()] == \
        [str(MAX_CRASHES)] * 2
    assert_good_ones_handled("two poisons", record_file, result, capsys)


# ---- kill -9 of a healthy host -----------------------------------------------------------------

def kill_inside_a_handler(broker, names: Names, supervisor: Supervisor, record_file) -> str:
    """Publishes one message, waits until its handler runs (held by the gate file), and kills the
    host with SIGKILL. Returns the message id."""
    supervisor.host.wait_ready(timeout=60)
    [slow] = names.publish(broker, 1, "slow")
    record_file.wait_for_count(1, timeout=30)
    assert supervisor.host.kill9() == -signal.SIGKILL
    return slow


def test_CrashAccounting_KilledWhileASlowHealthyHandlerRuns_BlamedOnceThenSucceeds(
        broker, created, warren, record_file, tmp_path):
    names = Names(created, tmp_path, "crash-kill9")
    gate = tmp_path / "let-the-handler-finish"
    supervisor = Supervisor(warren, names.config(record_file, gate_file=gate))
    slow = kill_inside_a_handler(broker, names, supervisor, record_file)

    supervisor.restart_if_dead()
    host = supervisor.host
    host.wait_ready(timeout=60)
    host.wait_for_log(r"running it alone", timeout=30)  # redelivered, blamed once, in its handler
    record_file.wait_for_count(2, timeout=30)
    gate.write_text("")
    wait_until(lambda: not names.ledger.exists(), timeout=30,
               what="the slow message to succeed and leave the ledger")
    series = scrape(names.metrics)
    assert host.terminate() == 0, host.describe()
    wait_drained(broker, names.queue)
    [_, restarted] = supervisor.runs
    supervisor.read_blame()

    assert restarted.blamed == [slow]
    assert restarted.signals == set(), "SIGKILL cannot be recorded"
    assert "no fatal signal recorded" in host.logs()
    assert record_file.ids() == [slow, slow]
    assert value(series, "warren_host_crash_suspects_total", worker="w") == 1
    assert value(series, "warren_messages_dead_lettered_total", worker="w", reason="crash") == 0
    assert total(series, "warren_messages_settled_total", worker="w", outcome="ack") == 1
    assert broker.message_count(names.dead_letter_queue) == 0
    assert not names.journal.exists(), "a clean stop leaves no journal"


# ---- a journal that cannot be trusted, a state directory that cannot hold one -------------------

@pytest.mark.parametrize("damage", ["garbage", "truncated", "shorter_than_a_header"])
def test_CrashAccounting_CorruptOrTruncatedJournal_DiscardedWithAWarningAndTheHostRuns(
        broker, created, warren, record_file, tmp_path, damage):
    names = Names(created, tmp_path, f"crash-{damage}")
    gate = tmp_path / "let-the-handler-finish"
    config = names.config(record_file, gate_file=gate)
    killed: List[str] = []
    if damage == "garbage":
        names.journal.write_bytes(b"\x00not a journal\xff" * 300)
        gate.write_text("")
    else:
        # A real journal of a host killed in a handler, then cut short.
        killed = [kill_inside_a_handler(broker, names, Supervisor(warren, config), record_file)]
        gate.write_text("")
        size = names.journal.stat().st_size
        with open(names.journal, "r+b") as journal:
            journal.truncate(size // 2 if damage == "truncated" else 10)

    supervisor = Supervisor(warren, config)
    host = supervisor.host
    host.wait_ready(timeout=60)
    after = names.publish(broker, 5, "after")
    wait_until(lambda: Counter(record_file.ids()) == Counter(killed * 2 + after), timeout=30,
               what=lambda: f"the 5 new messages handled: {record_file.ids()}")
    assert host.terminate() == 0, host.describe()
    wait_drained(broker, names.queue)

    why = {"garbage": "it does not begin like a crash journal",
           "truncated": r"it is \d+ bytes long where its \d+ slots need \d+ \(truncated or extended\)",
           "shorter_than_a_header": "it is 10 bytes long, shorter than a header"}[damage]
    logs = host.logs()
    assert len(re.findall(rf"crash journal {re.escape(str(names.journal))} discarded: {why}; "
                          rf"nobody is blamed", logs)) == 1, logs
    assert not BLAMED.search(logs), "a discarded journal blames nobody"
    assert "running it alone" not in logs
    assert len(supervisor.runs) == 1, "no crash loop"
    assert broker.message_count(names.dead_letter_queue) == 0


def test_CrashAccounting_StateDirectoryMissing_OneWarningAndTheHostRuns(
        broker, created, warren, record_file, tmp_path):
    names = Names(created, tmp_path, "crash-nodir")
    names.state_dir.rmdir()
    host = Supervisor(warren, names.config(record_file)).host
    host.wait_ready(timeout=60)
    [message] = names.publish(broker, 1, "one")
    record_file.wait_for_count(1, timeout=30)
    assert host.terminate() == 0, host.describe()
    assert record_file.ids() == [message]
    logs = host.logs()
    assert logs.count("crash accounting is off for this run") == 1, logs
    assert f"the state directory {names.state_dir} does not exist" in logs


def test_Check_DeliveryLimitNotAboveMaxCrashes_WarnsAndPasses(created, tmp_path, record_file):
    names = Names(created, tmp_path, "crash-check")
    config_file = tmp_path / "warren.toml"
    for delivery_limit, warned in ((3, True), (4, False)):
        config_file.write_text(names.config(record_file, delivery_limit=delivery_limit,
                                            max_crashes=3))
        result = warren_cli("check", "-c", str(config_file), env_overrides=cli_environment())
        assert result.returncode == 0, result.stdout + result.stderr
        warnings = re.findall(r"warning: .*worker \"w\" has max_crashes = 3 but its quorum queue "
                              rf"\"{names.queue}\" has delivery_limit = 3", result.stderr)
        assert len(warnings) == (1 if warned else 0), result.stderr
