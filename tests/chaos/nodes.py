"""The broker nodes a chaos scenario runs on, and what a scenario does to them.

Either the three-node cluster of tests/chaos/cluster.sh (its env file sourced: WARREN_CLUSTER_*;
every fault goes through that script's command line) or the single private node of
scripts/services/rabbitmq.sh (its env file sourced: the WARREN_TEST_* variables). A Node can be
killed (-9), frozen (SIGSTOP), thawed, stopped gracefully and started again, and runs
rabbitmqctl; Nodes finds the leader of a quorum queue.
"""

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List


@dataclass
class Node:
    index: int             # 1-based
    name: str              # Erlang node name
    amqp_port: int
    ctl: List[str]         # rabbitmqctl bound to this node (a command line)
    command: Callable[[str], List[str]]  # the command line of start|stop|kill|freeze|thaw

    @property
    def uri(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/"

    def rabbitmqctl(self, *args: str, timeout: float = 60) -> str:
        return _run([*self.ctl, *args], timeout, f"rabbitmqctl {' '.join(args)} on {self.name}")

    def eval(self, erlang: str) -> str:
        return self.rabbitmqctl("eval", erlang)

    def kill9(self) -> None:
        _run(self.command("kill"), 30, f"kill -9 of {self.name}")

    def freeze(self) -> None:
        _run(self.command("freeze"), 30, f"SIGSTOP of {self.name}")

    def thaw(self) -> None:
        _run(self.command("thaw"), 30, f"SIGCONT of {self.name}")

    def stop(self) -> None:
        """Graceful stop (also cleans up after a kill -9); the data stays."""
        _run(self.command("stop"), 120, f"stopping {self.name}")

    def start(self) -> None:
        _run(self.command("start"), 180, f"starting {self.name}")


def _run(command: List[str], timeout: float, what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}): {result.stdout}{result.stderr}")
    return result.stdout


class Nodes(list):
    """The nodes, in order (node 1 first)."""

    leader_command: Callable[[str], List[str]] = None

    def leader_of(self, queue: str) -> Node:
        """The node leading quorum queue QUEUE."""
        if len(self) == 1:
            return self[0]
        number = int(_run(self.leader_command(queue), 60, f"the leader of {queue}").strip())
        return self[number - 1]

    def everywhere(self, erlang: str) -> None:
        for node in self:
            node.eval(erlang)


def single_node_from_env() -> Nodes:
    """The node of scripts/services/rabbitmq.sh whose env file the caller sourced."""
    ctl = os.environ["WARREN_TEST_RABBITMQCTL"]
    pid_file = Path(ctl).parent / "rabbitmq.pid"
    signals = {"kill": signal.SIGKILL, "freeze": signal.SIGSTOP, "thaw": signal.SIGCONT}

    def command(verb: str) -> List[str]:
        if verb in signals:
            return ["kill", f"-{signals[verb].value}", pid_file.read_text().strip()]
        return [os.environ[f"WARREN_TEST_RABBITMQ_{verb.upper()}"]]

    return Nodes([Node(index=1, name=os.environ.get("WARREN_TEST_RABBITMQ_NODE", "node"),
                       amqp_port=int(os.environ["WARREN_TEST_AMQP_PORT"]), ctl=[ctl],
                       command=command)])


def cluster_nodes() -> Nodes:
    """The nodes of tests/chaos/cluster.sh whose env file the caller sourced."""
    script, state = os.environ["WARREN_CLUSTER_SCRIPT"], os.environ["WARREN_CLUSTER_DIR"]
    verbs = {"start": "node-start", "stop": "node-stop"}

    def node(n: int) -> Node:
        prefix = f"WARREN_CLUSTER_NODE{n}_"
        return Node(index=n, name=os.environ[prefix + "NAME"],
                    amqp_port=int(os.environ[prefix + "AMQP_PORT"]),
                    ctl=[os.environ[prefix + "RABBITMQCTL"]],
                    command=lambda verb: [script, verbs.get(verb, verb), state, str(n)])

    nodes = Nodes([node(n) for n in range(1, len(os.environ["WARREN_CLUSTER_NODES"].split()) + 1)])
    nodes.leader_command = lambda queue: [script, "leader", state, queue]
    return nodes


def nodes_from_env() -> Nodes:
    """The cluster when its env is sourced (WARREN_CLUSTER_DIR), else the single node."""
    return cluster_nodes() if os.environ.get("WARREN_CLUSTER_DIR") else single_node_from_env()
