"""The chaos scenarios of issue 21, one function each, and the driver that runs one under load.

Every scenario runs three `warren run` hosts (fleet.py) on one quorum queue while a publisher
sends numbered messages with confirms (load.py); the scenario's fault comes after a warm-up, the
load goes on through it and after it, then the driver waits until every confirmed message was
handled (or dead-lettered), stops the hosts, drains the dead-letter queue and makes the account
(account.py). A scenario may also state expectations of its own (`scene.expect`), e.g. what the
host logs; a failed one fails the scenario like a lost message.
"""

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional

import kit_path  # noqa: F401 - the integration kit, for the testkit_* imports
from account import Account, Handled
from fleet import (DEAD_LETTER_QUEUE, EXCHANGE, QUEUE, ROUTING_KEY, Fleet)
from load import ConfirmedPublisher
from outbox_load import OutboxInserter
from nodes import Nodes
from testkit_broker import Broker
from testkit_config import cli_environment
from testkit_env import WaitTimeout, wait_until
from testkit_warren import warren_cli
from test_outbox_kit import OutboxSchema


@dataclass
class Pace:
    """How big a run is: --short (CI) or full."""

    short: bool
    rate: float            # messages per second

    def seconds(self, full: float, short: float) -> float:
        return short if self.short else full


@dataclass
class Scene:
    name: str
    nodes: Nodes
    fleet: Fleet
    pace: Pace
    last: bool = False  # the last scenario of the run: what it breaks need not be mended
    publisher: Optional[ConfirmedPublisher] = None
    fault_at: Optional[float] = None
    recovery_from: Optional[float] = None
    fault_hosts: List[str] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    cleanups: List[Callable[[], None]] = field(default_factory=list)
    account_checks: List[tuple] = field(default_factory=list)
    outbox_dsn: str = ""
    notes: List[str] = field(default_factory=list)

    def mark_fault(self, hosts: List[str] = ()) -> None:
        self.fault_at = time.time()
        self.fault_hosts = list(hosts)

    def expect(self, condition: bool, what: str) -> None:
        if not condition:
            self.failures.append(what)

    def check_account(self, condition: Callable[[Account], bool], what: str) -> None:
        """An expectation judged on the account, once the run is over."""
        self.account_checks.append((condition, what))

    def duplicates_only_from(self, host: str) -> None:
        """Expects every duplicate to be a message HOST handled (it had it in flight when the
        fault hit) or one the publisher sent twice (its confirm was lost)."""
        def only_theirs(account: Account) -> bool:
            theirs = {h.message_id for h in account.handled if h.host == host}
            return set(account.duplicated) <= theirs | self.publisher.republished_ids
        self.check_account(only_theirs, f"duplicates only among {host}'s in-flight messages")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # the fault's own duration: nothing to wait for but time

    def handled_by(self, host: str, since: float) -> int:
        return sum(1 for record in self.fleet.host(host).record_file.records()
                   if record.time >= since)


@dataclass
class Scenario:
    number: int
    name: str
    title: str
    fault: Callable[[Scene], None]
    load_seconds: Callable[[Pace], float]
    prepare: Optional[Callable[[Scene], None]] = None   # before the hosts start
    load: Optional[Callable[[Scene, int], object]] = None  # default: a ConfirmedPublisher
    cleanup: Optional[Callable[[Scene], None]] = None   # after the account, even on failure
    needs: tuple = ()


# -- the scenarios --------------------------------------------------------------------------------
def kill_leader(scene: Scene) -> None:
    """1. kill -9 of the node leading the queue; the hosts on it move and resume within 10 s."""
    leader = scene.nodes.leader_of(QUEUE)
    scene.notes.append(f"leader {leader.name}")
    leader.kill9()
    scene.mark_fault([h.name for h in scene.fleet.hosts_on(leader)])
    if len(scene.nodes) == 1:  # nowhere to move: the node comes back
        leader.stop()
        leader.start()
    elif not scene.last:  # (the last scenario of a run leaves it: the cluster stops next)
        scene.sleep(scene.pace.seconds(20, 5))
        leader.stop()
        leader.start()
    recovery = _first_handle_after(scene, scene.fault_hosts, scene.fault_at, timeout=60)
    # No host can consume before the queue has a leader again: the target counts from the first
    # publish the broker confirmed after the kill (it nacks them until then).
    available = min((t for t in scene.publisher.confirmed.values() if t >= scene.fault_at),
                    default=scene.fault_at)
    scene.notes.append(f"the queue confirmed publishes again {available - scene.fault_at:.1f} s "
                       "after the kill")
    resumed = None if recovery is None else scene.fault_at + recovery - max(available,
                                                                           scene.fault_at)
    scene.expect(resumed is not None and (len(scene.nodes) == 1 or resumed <= 10),
                 f"the hosts on {leader.name} resumed {resumed and round(resumed, 1)} s after "
                 "the queue had a leader again (target 10 s)")


def freeze_node(scene: Scene) -> None:
    """2. SIGSTOP of a node (a follower of the queue: the case issue 21 found) for 60 s, then
    SIGCONT; heartbeats detect it, the hosts on it move."""
    leader = scene.nodes.leader_of(QUEUE)
    node = [n for n in scene.nodes if n is not leader][-1] if len(scene.nodes) > 1 else leader
    scene.notes.append(f"froze {node.name}, the leader is {leader.name}")
    frozen = [h.name for h in scene.fleet.hosts_on(node)]
    healthy = [h.name for h in scene.fleet.hosts if h.name not in frozen]
    node.freeze()
    scene.mark_fault(frozen)
    try:
        scene.sleep(scene.pace.seconds(60, 20))
    finally:
        node.thaw()
    # The targets of issue 21 (the frozen-follower stall).
    scene.check_account(lambda a: a.recovery() is not None and a.recovery() <= 20,
                        f"the hosts on the frozen node ({', '.join(frozen)}) consume again "
                        "within 20 s")
    scene.check_account(lambda a: a.longest_pause(healthy) <= 5,
                        f"the hosts on healthy nodes ({', '.join(healthy)}) pause 5 s at most")


def blackhole_host(scene: Scene) -> None:
    """3. Blackhole between one host and its node for 60 s: it notices within two heartbeats,
    moves (or waits), and its unacknowledged messages go to the other hosts."""
    host = scene.fleet.hosts[0]
    route = host.route_to(host.own_node)
    scene.fleet.proxy.set_mode(route, "blackhole")
    scene.mark_fault([host.name])
    scene.duplicates_only_from(host.name)
    try:
        noticed = _wait_log(host, r"heartbeat|connection (?:lost|closed)|reconnect", 20)
        scene.expect(noticed is not None and noticed - scene.fault_at <= 12,
                     f"{host.name} noticed the blackhole after {noticed and noticed - scene.fault_at}"
                     " s (two heartbeats: 10 s)")
        scene.sleep(max(0.0, scene.fault_at + scene.pace.seconds(60, 15) - time.time()))
    finally:
        scene.fleet.proxy.set_mode(route, "pass")


def rolling_restart(scene: Scene) -> None:
    """4. Every node restarted, one at a time, under load."""
    scene.mark_fault()
    for node in scene.nodes:
        node.stop()
        node.start()
        if len(scene.nodes) > 1:
            _wait_queue_members(scene, len(scene.nodes))


def disk_alarm(scene: Scene) -> None:
    """5. A disk alarm on every node for 30 s: publishers block and time out with clear errors,
    consumers keep consuming, nothing is lost when it clears."""
    for node in scene.nodes:
        node.rabbitmqctl("set_disk_free_limit", "100000GB")
    scene.mark_fault()
    try:
        host = scene.fleet.hosts[0]
        # To a routing key no queue is bound for: if it did go out after the alarm, it must
        # not reach the load's queue (an unexpected message) but come back unroutable.
        publish = warren_cli("publish", "-c", str(host.process.config_path), "--exchange",
                             "amq.direct", "--routing-key", "chaos.nowhere", "--body",
                             "during-alarm", "--message-id", "cli-during-alarm", timeout=60,
                             env_overrides=cli_environment())
        error = (publish.stdout + publish.stderr).strip().splitlines()
        scene.notes.append(f"`warren publish` during the alarm: exit {publish.returncode}: "
                           f"{error[-1] if error else ''}")
        scene.expect(publish.returncode != 0 and any("alarm" in l or "blocked" in l
                                                     for l in error),
                     "`warren publish` under a disk alarm must fail naming the alarm/block")
        scene.sleep(max(0.0, scene.fault_at + scene.pace.seconds(30, 10) - time.time()))
    finally:
        for node in scene.nodes:
            node.rabbitmqctl("set_disk_free_limit", "50MB")


def consumer_timeout_prepare(scene: Scene) -> None:
    # The broker reads these when a channel opens: set before the hosts connect.
    scene.nodes.everywhere("application:set_env(rabbit, consumer_timeout, 5000), "
                           "application:set_env(rabbit, channel_tick_interval, 1000).")
    gate = scene.fleet.workdir / "h1.gate"
    gate.touch()
    scene.fleet.worker_settings["h1"] = {"gate_file": str(gate)}


def consumer_timeout_cleanup(scene: Scene) -> None:
    scene.nodes.everywhere("application:set_env(rabbit, consumer_timeout, 600000), "
                           "application:set_env(rabbit, channel_tick_interval, 60000).")


def slow_handler(scene: Scene) -> None:
    """6. A handler slower than the broker's consumer_timeout (5 s here): the broker closes the
    channel; the host opens it again, the messages are redelivered and handled, and the log says
    why and what to change."""
    host = scene.fleet.hosts[0]
    gate = Path(scene.fleet.workdir / "h1.gate")
    scene.mark_fault([host.name])
    scene.duplicates_only_from(host.name)
    gate.unlink()  # h1's handlers now wait, past the consumer_timeout
    try:
        closed = _wait_log(host, r"delivery acknowledgement on channel \d+ timed out", 30)
        scene.expect(closed is not None, "the broker closed h1's channel (consumer_timeout)")
        scene.recovery_from = closed
    finally:
        gate.touch()
    log = host.process.logs()
    scene.expect("consumer_timeout" in log.split("timed out", 1)[-1],
                 "h1's log names the cause as a config mistake: raise the broker's "
                 "consumer_timeout or the worker's max_handler_time")


def outbox_prepare(scene: Scene) -> None:
    schema = OutboxSchema()
    scene.cleanups.append(schema.close)
    scene.fleet.outbox = {"name": "chaos", "dsn": schema.dsn, "exchange": EXCHANGE, "batch": 20,
                          "poll_interval": "200ms"}
    config = scene.fleet.workdir / "outbox-init.toml"
    config.write_text(scene.fleet.hosts[0].config())
    result = warren_cli("outbox", "init", "-c", str(config), env_overrides=cli_environment())
    assert result.returncode == 0, f"warren outbox init: {result.stdout}{result.stderr}"
    scene.outbox_dsn = schema.dsn


def outbox_load(scene: Scene, count: int) -> OutboxInserter:
    return OutboxInserter(scene.outbox_dsn, ROUTING_KEY, count, scene.pace.rate, scene.name)


def outbox_relays(scene: Scene) -> None:
    """7. Three outbox relays (one on each host) over one table; kill -9 of one relay (its host)
    and of one node: every row is sent, duplicates only among the rows in flight, and no row is
    marked sent without a confirm (it would be lost)."""
    host = scene.fleet.hosts[1]
    node = scene.nodes[-1]
    host.process.kill9()
    node.kill9()
    scene.mark_fault()
    scene.sleep(scene.pace.seconds(10, 3))
    node.stop()
    node.start()
    host.start()


def kill_host(scene: Scene) -> None:
    """8. kill -9 of a Warren host during load, then its restart: the others handle its unacked
    messages."""
    host = scene.fleet.hosts[0]
    host.process.kill9()
    scene.mark_fault([host.name])
    scene.duplicates_only_from(host.name)
    scene.sleep(scene.pace.seconds(10, 3))
    scene.recovery_from = time.time()  # recovery: from the restart to its first message
    host.start()


SCENARIOS = [
    Scenario(1, "kill-leader", "kill -9 of the queue's leader node", kill_leader,
             lambda p: p.seconds(60, 14)),
    Scenario(2, "freeze-node", "SIGSTOP of a node, then SIGCONT", freeze_node,
             lambda p: p.seconds(100, 30), needs=("cluster",)),
    Scenario(3, "blackhole-host", "blackhole between one host and its node", blackhole_host,
             lambda p: p.seconds(90, 22)),
    Scenario(4, "rolling-restart", "rolling restart of every node", rolling_restart,
             lambda p: p.seconds(120, 40), needs=("cluster",)),
    Scenario(5, "disk-alarm", "disk alarm on every node", disk_alarm,
             lambda p: p.seconds(60, 20)),
    Scenario(6, "slow-handler", "a handler slower than consumer_timeout", slow_handler,
             lambda p: p.seconds(40, 20), prepare=consumer_timeout_prepare,
             cleanup=consumer_timeout_cleanup),
    Scenario(7, "outbox-relays", "three outbox relays, kill -9 of a relay and a node",
             outbox_relays, lambda p: p.seconds(60, 20), prepare=outbox_prepare,
             load=outbox_load, needs=("postgres",)),
    Scenario(8, "kill-host", "kill -9 of a Warren host, then its restart", kill_host,
             lambda p: p.seconds(40, 12)),
]


# -- the driver -----------------------------------------------------------------------------------
def run(scenario: Scenario, nodes: Nodes, pace: Pace, workdir: Path,
        last: bool = False, isolation: str = "thread") -> Account:
    """ISOLATION: where the hosts run their handlers (fleet.ISOLATIONS)."""
    workdir.mkdir(parents=True, exist_ok=True)
    fleet = Fleet(nodes, workdir, isolation=isolation)
    scene = Scene(scenario.name, nodes, fleet, pace, last=last)
    try:
        _clear_queues(nodes)
        fleet.apply_topology()
        if scenario.prepare:
            scenario.prepare(scene)
        fleet.start()
        load_seconds = scenario.load_seconds(pace)
        count = int(load_seconds * pace.rate)
        scene.publisher = publisher = (
            scenario.load(scene, count) if scenario.load else
            ConfirmedPublisher([n.uri for n in nodes], EXCHANGE, ROUTING_KEY, count, pace.rate,
                               prefix=scenario.name))
        publisher.start()
        wait_until(lambda: len(fleet.handled()) >= pace.rate * min(3.0, load_seconds / 4), 60,
                   what="the warm-up: messages handled before the fault")
        scenario.fault(scene)
        if not publisher.wait_done(timeout=load_seconds + 180):
            publisher.stop()
            scene.failures.append("the publisher did not finish in time")
            publisher.wait_done(30)
        if isinstance(publisher, OutboxInserter):
            publisher.settle(timeout=120)
            unsent = publisher.unsent()
            scene.expect(not unsent, f"outbox rows not sent: {unsent}")
        confirmed = set(publisher.confirmed)
        load_ended = max(publisher.confirmed.values(), default=time.time())
        try:
            wait_until(lambda: confirmed <= {r.message_id for _h, r in fleet.handled()},
                       180, interval=0.5,
                       what=lambda: f"every confirmed message handled ({len(confirmed)})")
        except WaitTimeout as timeout:
            scene.failures.append(str(timeout).split(";")[0])
        time.sleep(pace.seconds(2, 1))  # late duplicates: redeliveries still on their way
    finally:
        problems = fleet.stop()
        if scenario.cleanup:
            scenario.cleanup(scene)
        for cleanup in scene.cleanups:
            cleanup()
    dead = _drain_dead_letters(nodes)
    left = _left_in(nodes)
    account = Account(scenario=f"{scenario.number}. {scenario.title}", confirmed=confirmed,
                      handled=[Handled(h, r.message_id, r.time) for h, r in fleet.handled()],
                      dead_lettered=dead, fault_at=scene.recovery_from or scene.fault_at,
                      fault_hosts=tuple(scene.fault_hosts), load_ended_at=load_ended,
                      sent_at=dict(publisher.sent))
    account.notes += scene.notes
    account.notes.append(f"publisher: {len(publisher.sent)} sent, {publisher.republished} "
                         f"republished, {publisher.error_count} errors "
                         f"{publisher.errors[:3]}")
    (workdir / "load.json").write_text(json.dumps(  # for a closer look: when each id went out
        {"sent": publisher.sent, "confirmed": publisher.confirmed, "errors": publisher.errors}))
    account.notes += [f"host: {p}" for p in problems]
    account.failed_checks = list(scene.failures) + [
        what for condition, what in scene.account_checks if not condition(account)]
    if left:
        account.failed_checks.append(f"{left} message(s) left in {QUEUE}")
    account.notes += [f"FAILED: {f}" for f in account.failed_checks]
    return account


def _broker(nodes: Nodes) -> Broker:
    for node in nodes:
        try:
            broker = Broker(uri=node.uri, rabbitmqctl=node.ctl[0])
            broker.channel()
            return broker
        except Exception:  # noqa: BLE001 - a node down: try the next
            continue
    raise RuntimeError("no node accepts connections")


def _clear_queues(nodes: Nodes) -> None:
    broker = _broker(nodes)
    for queue in (QUEUE, DEAD_LETTER_QUEUE):
        broker.delete_queue(queue)
    broker.close()


def _left_in(nodes: Nodes) -> int:
    broker = _broker(nodes)
    try:
        return broker.message_count(QUEUE)
    finally:
        broker.close()


def _drain_dead_letters(nodes: Nodes) -> set:
    broker = _broker(nodes)
    try:
        return {m.message_id for m in broker.drain(DEAD_LETTER_QUEUE, settle=0.5)}
    except Exception:  # noqa: BLE001 - no dead-letter queue: nothing was dead-lettered
        return set()
    finally:
        broker.close()


def _first_handle_after(scene: Scene, hosts: List[str], since: float,
                        timeout: float) -> Optional[float]:
    """Seconds from SINCE to the first handle, by one of HOSTS (none: any), of a message first
    published after SINCE (None: not within TIMEOUT)."""
    names = hosts or [h.name for h in scene.fleet.hosts]
    sent = scene.publisher.sent

    def first():
        times = [r.time for name in names for r in scene.fleet.host(name).record_file.records()
                 if sent.get(r.message_id, 0) >= since]
        return min(times) if times else None
    try:
        return wait_until(first, timeout, interval=0.2) - since
    except WaitTimeout:
        return None


def _wait_log(host, pattern: str, timeout: float) -> Optional[float]:
    """Wall time at which HOST's log first matched PATTERN (None: not within TIMEOUT)."""
    try:
        host.process.wait_for_log(pattern, timeout=timeout)
        return time.time()
    except (WaitTimeout, AssertionError):
        return None


def _wait_queue_members(scene: Scene, members: int) -> None:
    def online():
        output = scene.nodes[0].rabbitmqctl("list_queues", "--quiet", "--no-table-headers",
                                            "name", "online", timeout=30)
        for line in output.splitlines():
            name, _, nodes = line.partition("\t")
            if name == QUEUE:
                return nodes.count("@") >= members
        return False
    wait_until(online, 120, interval=1, what=f"{QUEUE} with {members} members online",
               ignore=(RuntimeError, subprocess.TimeoutExpired))

