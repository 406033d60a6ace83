#!/usr/bin/python3
"""Issue 21's frozen follower, measured: three `warren run` hosts on a three-node RabbitMQ cluster,
each listing all three nodes own node first (heartbeat 5s), consume a quorum queue led by node 1
under continuous load; node 2 (a follower) is frozen with SIGSTOP for 40 s, then thawed.

Prints, per host, the longest pause in its handling (time between two handled messages) around the
freeze, when the host on node 2 consumes again, the nodes each host connected to, and the account
of the messages (confirmed, handled, lost, duplicated, unexpected). Exits 1 when a target fails:
  - the hosts on the healthy nodes (1 and 3) pause no more than --max-healthy-pause (5 s);
  - the host on the frozen node consumes again within --max-frozen-recovery (20 s);
  - no confirmed message is lost, none handled that was never published.

Usage (from the repository root, after a build):
  tests/chaos/frozen_follower.py [--cluster-dir DIR] [--freeze 40] [--rate 150] [--keep-cluster]
      [--diagnose]
With --cluster-dir naming a running cluster (tests/chaos/cluster.sh start DIR) it is used as it
is; otherwise a cluster is started in DIR (default: a temp dir) and stopped at the end unless
--keep-cluster. --diagnose saves, 20 s into the freeze, the stacks of node 3's processes that wait
for a lock or a call (node3-waits.txt next to the records): before the fix, a channel's queue.bind
waiting in an mnesia transaction for the frozen node's write lock. WARREN_BIN,
WARREN_PLUGIN_DIR and WARREN_FIXTURE_PLUGIN_DIR default to the ./build tree.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration" / "support"))
for _name, _path in (("WARREN_BIN", "build/host/src/cli/warren"),
                     ("WARREN_PLUGIN_DIR", "build/plugins"),
                     ("WARREN_FIXTURE_PLUGIN_DIR", "build/tests/plugins")):
    os.environ.setdefault(_name, str(REPO / _path))

import pika  # noqa: E402  (after sys.path: the kit's modules import it too)

from testkit_config import quorum_queue, scripted_worker, warren_config  # noqa: E402
from testkit_env import wait_until  # noqa: E402
from testkit_records import RecordFile  # noqa: E402
from testkit_traffic import Tally  # noqa: E402
from testkit_warren import WarrenProcess  # noqa: E402

CLUSTER_SCRIPT = REPO / "tests" / "chaos" / "cluster.sh"
FROZEN = 2  # the follower frozen; node 1 leads the queue


# -- the cluster ----------------------------------------------------------------------------------
def cluster(*args: str, timeout: float = 180) -> str:
    result = subprocess.run([str(CLUSTER_SCRIPT), *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def load_env_file(path: Path) -> Dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            values[name] = shlex.split(value)[0] if value else ""
    return values


def start_cluster(directory: Path) -> bool:
    """Starts the cluster in DIRECTORY unless it runs already; returns whether it started it."""
    if (directory / "env").exists():
        try:
            if len(cluster("status", str(directory), timeout=30).split()) == 3:
                return False
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
    print(f"starting a three-node cluster in {directory} ...", flush=True)
    cluster("start", str(directory))
    return True


# -- the load -------------------------------------------------------------------------------------
class Load(threading.Thread):
    """Publishes numbered persistent messages at RATE a second, each waiting for its confirm, on
    node 1 (the queue's leader, never frozen here), until stopped."""

    def __init__(self, uri: str, exchange: str, rate: float):
        super().__init__(daemon=True)
        self.uri, self.exchange, self.rate = uri, exchange, rate
        self.run_id = uuid.uuid4().hex[:8]
        self.confirmed: List[str] = []
        self.failed: List[str] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        parameters = pika.URLParameters(self.uri)
        parameters.heartbeat = 0
        connection = pika.BlockingConnection(parameters)
        channel = connection.channel()
        channel.confirm_delivery()
        started, index = time.monotonic(), 0
        while not self.stop_event.is_set():
            message_id = f"ff-{self.run_id}-{index:07d}"
            properties = pika.BasicProperties(message_id=message_id, delivery_mode=2,
                                              headers={"x-test-id": message_id})
            try:
                channel.basic_publish(self.exchange, "frozen.follower", message_id.encode(),
                                      properties, mandatory=True)
                self.confirmed.append(message_id)
            except pika.exceptions.AMQPError as error:
                self.failed.append(f"{message_id}: {error!r}")
                if not channel.is_open:
                    channel = connection.channel()
                    channel.confirm_delivery()
            index += 1
            delay = started + index / self.rate - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
        connection.close()


# -- the figures ----------------------------------------------------------------------------------
def longest_pause(times: List[float], since: float, until: float, end: float) -> tuple:
    """(seconds, gap start, gap end): the longest time between two handled messages, among the
    gaps that end after SINCE and begin before UNTIL; a host that handled nothing after its last
    message pauses until END (the end of the measurement)."""
    best = (0.0, since, since)
    for before, after in zip(times, times[1:] + [end]):
        if after > since and before < until and after - before > best[0]:
            best = (after - before, before, after)
    return best


def connections_of(process: WarrenProcess, ports: Dict[int, int]) -> List[str]:
    """`node N at +Ts` for each "connected to" line of the consumer (port -> node)."""
    found = []
    for line in process.logs().splitlines():
        if "connected to amqp" in line and "worker(s) consuming" in line:
            port = int(line.split("connected to amqp://")[1].split(":")[1].split("/")[0])
            found.append(f"node {ports.get(port, '?')} ({line.split()[0]})")
    return found


def diagnose(cluster_dir: Path, out: Path) -> None:
    """What node 3's processes wait in, during the freeze: the stack of each process waiting for
    a lock or a call (not the lock managers' own idle loops)."""
    expression = (
        "[{P, S} || P <- processes(), "
        "{current_function, {M, F, _}} <- [erlang:process_info(P, current_function)], "
        "lists:member({M, F}, [{mnesia_locker, receive_wlocks}, {mnesia_locker, receive_release_tid_acc}, "
        "{gen, do_call}, {mnesia_tm, commit_participant}, {global, set_lock}]), "
        "{current_stacktrace, S} <- [erlang:process_info(P, current_stacktrace)]].")
    with open(out, "w") as stream:
        subprocess.run(["timeout", "60", str(cluster_dir / "node3" / "rabbitmqctl"), "eval",
                        expression], stdout=stream, stderr=subprocess.STDOUT, check=False)


# -- the scenario ---------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-dir", type=Path)
    parser.add_argument("--keep-cluster", action="store_true")
    parser.add_argument("--freeze", type=float, default=40.0, help="seconds node 2 stays frozen")
    parser.add_argument("--rate", type=float, default=150.0, help="messages published a second")
    parser.add_argument("--max-healthy-pause", type=float, default=5.0)
    parser.add_argument("--max-frozen-recovery", type=float, default=20.0)
    parser.add_argument("--diagnose", action="store_true")
    options = parser.parse_args()

    cluster_dir = (options.cluster_dir or Path(tempfile.mkdtemp(prefix="warren-cluster-"))).resolve()
    started = start_cluster(cluster_dir)
    environment = load_env_file(cluster_dir / "env")
    os.environ.update(environment)  # the kit's config helpers read WARREN_TEST_AMQP_URI
    os.environ.pop("WARREN_BROKER_URI", None)  # it would replace every host's `hosts`
    uris = [environment[f"WARREN_CLUSTER_NODE{n}_AMQP_URI"] for n in (1, 2, 3)]
    ports = {int(environment[f"WARREN_CLUSTER_NODE{n}_AMQP_PORT"]): n for n in (1, 2, 3)}
    bare = [uri.replace("guest:guest@", "guest@") for uri in uris]  # the password comes apart

    run = uuid.uuid4().hex[:6]
    exchange, queue = f"ff-{run}.x", f"ff-{run}.q"
    work = Path(tempfile.mkdtemp(prefix="frozen-follower-"))
    # Declared through node 1, so that node 1 leads the queue (a new quorum queue's leader is the
    # node that declared it).
    setup = pika.BlockingConnection(pika.URLParameters(uris[0]))
    setup_channel = setup.channel()
    setup_channel.exchange_declare(exchange, "topic", durable=True)
    setup_channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    setup_channel.queue_bind(queue, exchange, "#")
    setup.close()
    leader = cluster("leader", str(cluster_dir), queue).strip()
    if leader != "1":
        print(f"queue {queue} is led by node {leader}, not node 1: cannot measure", file=sys.stderr)
        return 2

    records = {n: RecordFile(work / f"host{n}.tsv") for n in (1, 2, 3)}
    hosts: Dict[int, WarrenProcess] = {}
    load: Optional[Load] = None
    failed_targets: List[str] = []
    measured = False  # the figures were printed (else the files are kept, for the logs)
    try:
        for n in (1, 2, 3):
            own_first = [bare[n - 1]] + [uri for i, uri in enumerate(bare) if i != n - 1]
            text = warren_config(
                exchanges=[{"name": exchange, "type": "topic"}],
                queues=[quorum_queue(queue, bindings=[{"exchange": exchange, "routing_key": "#"}])],
                workers=[scripted_worker("w", queue, records[n], prefetch=20, concurrency=2,
                                         record_time=True)],
                host={"name": f"frozen-follower-host{n}"},
                broker={"uri": None, "hosts": own_first, "heartbeat": "5s"})
            hosts[n] = WarrenProcess(text, plugin_dir=os.environ["WARREN_FIXTURE_PLUGIN_DIR"],
                                     env_overrides={"WARREN_BROKER_PASSWORD": "guest"},
                                     name=f"frozen-follower-host{n}").start()
        for process in hosts.values():
            process.wait_for_log(r"worker\(s\) consuming", timeout=60)

        load = Load(uris[0], exchange, options.rate)
        load.start()
        wait_until(lambda: all(len(records[n].records()) >= 20 for n in (1, 2, 3)), 60,
                   what="every host handling messages")
        time.sleep(3)  # steady state before the fault: a measured interval, not a wait for state

        print(f"freezing node {FROZEN} for {options.freeze:g} s ...", flush=True)
        frozen_at = time.time()
        cluster("freeze", str(cluster_dir), str(FROZEN))
        try:
            if options.diagnose:
                time.sleep(min(20.0, options.freeze))
                diagnose(cluster_dir, work / "node3-waits.txt")
            time.sleep(max(0.0, frozen_at + options.freeze - time.time()))
        finally:
            cluster("thaw", str(cluster_dir), str(FROZEN))
        thawed_at = time.time()
        time.sleep(10)  # load goes on after the thaw: a measured interval
        load.stop_event.set()
        load.join(30)

        confirmed = set(load.confirmed)
        handled_ids = lambda: [i for n in (1, 2, 3) for i in records[n].ids()]  # noqa: E731
        try:
            wait_until(lambda: confirmed <= set(handled_ids()), 90,
                       what="every confirmed message handled")
        except AssertionError:
            pass  # reported as lost below
        tally = Tally.of(confirmed, handled_ids())
        measured_until = time.time()

        print(f"\nfrozen follower: node {FROZEN} frozen {options.freeze:g} s, {options.rate:g} msg/s "
              f"published on node 1, queue led by node 1, heartbeat 5s")
        print(f"{'host':<8}{'longest pause':>15}{'from':>9}{'to':>9}   connected to")
        for n in (1, 2, 3):
            times = sorted(r.time for r in records[n].records() if r.time is not None)
            pause, start, end = longest_pause(times, frozen_at - 1, thawed_at + 5, measured_until)
            print(f"host {n:<3}{pause:>14.1f}s{start - frozen_at:>+8.1f}s{end - frozen_at:>+8.1f}s"
                  f"   {', '.join(connections_of(hosts[n], ports))}")
            if n != FROZEN and pause > options.max_healthy_pause:
                failed_targets.append(f"host {n} (healthy node) paused {pause:.1f} s > "
                                      f"{options.max_healthy_pause:g} s")
            if n == FROZEN:
                recovery = end - frozen_at
                print(f"host {n} consumes again {recovery:.1f} s after the freeze")
                if recovery > options.max_frozen_recovery:
                    failed_targets.append(f"host {n} (frozen node) consumed again after "
                                          f"{recovery:.1f} s > {options.max_frozen_recovery:g} s")
        print(f"messages: {len(confirmed)} confirmed, {len(load.failed)} publishes failed; "
              f"{tally.summary()}")
        if tally.lost:
            failed_targets.append(f"{len(tally.lost)} confirmed message(s) lost")
        if tally.unexpected:
            failed_targets.append(f"{len(tally.unexpected)} unexpected message(s) handled")
        measured = True
    finally:
        if load is not None:
            load.stop_event.set()
        problems = []
        for n, process in hosts.items():
            problems += [f"host {n}: {p}" for p in process.stop_and_check()]
        failed_targets += problems
        if failed_targets or not measured or options.diagnose:
            print(f"kept: records in {work}; hosts' logs in "
                  + ", ".join(str(p.workdir) for p in hosts.values()))
        else:
            for directory in [work, *(p.workdir for p in hosts.values())]:
                shutil.rmtree(directory, ignore_errors=True)
        try:
            cleanup = pika.BlockingConnection(pika.URLParameters(uris[0]))
            cleanup.channel().queue_delete(queue)
            cleanup.channel().exchange_delete(exchange)
            cleanup.close()
        except pika.exceptions.AMQPError as error:
            print(f"could not delete {queue}: {error!r}", file=sys.stderr)
        if started and not options.keep_cluster:
            cluster("stop", str(cluster_dir))

    for target in failed_targets:
        print(f"FAILED: {target}")
    print("PASSED" if not failed_targets else "")
    return 1 if failed_targets else 0


if __name__ == "__main__":
    sys.exit(main())
