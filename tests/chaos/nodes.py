"""The broker nodes a chaos scenario runs on, and what a scenario does to them.

Either the single private node of scripts/services/rabbitmq.sh (its env file sourced: the
WARREN_TEST_* variables) or the three-node cluster of tests/chaos/cluster.sh (CHAOS_CLUSTER_ENV
names its env file). A Node can be killed (-9), stopped gracefully, frozen (SIGSTOP), thawed and
started again, and runs rabbitmqctl; Nodes finds the leader of a quorum queue.
"""

import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List


@dataclass
class Node:
    index: int             # 1-based
    name: str              # Erlang node name, e.g. warren1@localhost
    amqp_port: int
    ctl: List[str]         # rabbitmqctl bound to this node (a command line)
    pid_file: Path         # the broker's (beam's) pid
    start_cmd: List[str]
    stop_cmd: List[str]

    @property
    def uri(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/"

    def pid(self) -> int:
        return int(self.pid_file.read_text().strip())

    def rabbitmqctl(self, *args: str, timeout: float = 60) -> str:
        result = subprocess.run([*self.ctl, *args], capture_output=True, text=True,
                                timeout=timeout, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} on {self.name} failed "
                               f"({result.returncode}): {result.stdout}{result.stderr}")
        return result.stdout

    def kill9(self) -> None:
        os.kill(self.pid(), signal.SIGKILL)

    def freeze(self) -> None:
        os.kill(self.pid(), signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.pid(), signal.SIGCONT)

    def stop(self) -> None:
        """Graceful stop (also cleans up after a kill -9); the data stays."""
        subprocess.run(self.stop_cmd, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        result = subprocess.run(self.start_cmd, capture_output=True, text=True, timeout=180,
                                check=False)
        if result.returncode != 0:
            raise RuntimeError(f"starting {self.name} failed: {result.stdout}{result.stderr}")

    def eval(self, erlang: str) -> str:
        return self.rabbitmqctl("eval", erlang)


class Nodes(list):
    """The nodes, in order (node 1 first)."""

    def leader_of(self, queue: str) -> Node:
        """The node leading quorum queue QUEUE (asked of any running node)."""
        if len(self) == 1:
            return self[0]
        for node in self:
            try:
                output = node.rabbitmqctl("list_queues", "--quiet", "--formatter", "json",
                                          "name", "leader", timeout=30)
            except (RuntimeError, subprocess.TimeoutExpired):
                continue  # that node is down: ask the next one
            for row in json.loads(output):
                if row.get("name") == queue:
                    return next(n for n in self if n.name == row["leader"])
        raise RuntimeError(f"no running node knows the leader of {queue}")

    def everywhere(self, erlang: str) -> None:
        for node in self:
            node.eval(erlang)


def _read_env_file(path: Path) -> Dict[str, str]:
    """NAME=VALUE lines (optionally `export`, values as bash's printf %q writes them)."""
    values = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line.strip())
        if match:
            values[match.group(1)] = subprocess.run(
                ["bash", "-c", f"printf %s {match.group(2)}"], capture_output=True,
                text=True, check=True).stdout
    return values


def single_node_from_env() -> Nodes:
    """The node of scripts/services/rabbitmq.sh whose env file the caller sourced."""
    ctl = os.environ["WARREN_TEST_RABBITMQCTL"]
    state = Path(ctl).parent
    return Nodes([Node(index=1, name=os.environ.get("WARREN_TEST_RABBITMQ_NODE", "node"),
                       amqp_port=int(os.environ["WARREN_TEST_AMQP_PORT"]), ctl=[ctl],
                       pid_file=state / "rabbitmq.pid",
                       start_cmd=[os.environ["WARREN_TEST_RABBITMQ_START"]],
                       stop_cmd=[os.environ["WARREN_TEST_RABBITMQ_STOP"]])])


def nodes_from_env() -> Nodes:
    """The cluster of CHAOS_CLUSTER_ENV when set, else the single node."""
    cluster_env = os.environ.get("CHAOS_CLUSTER_ENV")
    if not cluster_env:
        return single_node_from_env()
    return cluster_nodes(Path(cluster_env))


def cluster_nodes(env_file: Path) -> Nodes:
    """The nodes described by tests/chaos/cluster.sh's env file."""
    raise NotImplementedError(f"cluster env {env_file}: waiting for tests/chaos/cluster.sh")

