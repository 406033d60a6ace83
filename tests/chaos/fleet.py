"""The Warren hosts of a chaos scenario, each reaching every broker node through the fault proxy.

Host i (1-based) gets a route "hI-nJ" of the proxy to each node J, and `hosts = [...]` listing
them own node first (host i's own node is node ((i - 1) mod nodes) + 1, the others in turn
after it), so a fault can hit one host's link to one node. Every host runs the `scripted` test
plugin on the one quorum queue (4 handlers, 50 ms a message: 240 messages a second for the
fleet, so that every host has messages in flight when a fault comes), recording each handler call
with its time in a record file of its own; its dead letters go to a dead-letter queue the account
drains. The 4 handlers are threads of the host (isolation "thread") or, with isolation "process",
4 warren-worker children of it (docs/operations.md, "Process isolation").
"""

from pathlib import Path
from typing import Dict, List, Optional

import kit_path  # noqa: F401 - the integration kit, for the testkit_* imports
from fault_proxy import FaultProxy
from nodes import Node, Nodes
from testkit_config import (apply_topology, quorum_queue, scripted_worker, toml_key, toml_value,
                            warren_config, warren_options)
from testkit_records import RecordFile
from testkit_warren import WarrenProcess

EXCHANGE = "chaos.load"
ROUTING_KEY = "chaos.msg"
QUEUE = "chaos.q"
DEAD_LETTERS = "chaos.dead"
DEAD_LETTER_QUEUE = "chaos.dead.q"
HEARTBEAT = "5s"
HANDLERS = 4  # per host: threads (concurrency) or worker processes (processes)
ISOLATIONS = ("thread", "process")


class Host:
    """One `warren run` of the fleet."""

    def __init__(self, index: int, fleet: "Fleet"):
        self.index = index
        self.name = f"h{index}"
        self.fleet = fleet
        self.own_node = fleet.nodes[(index - 1) % len(fleet.nodes)]
        self.record_file = RecordFile(fleet.workdir / f"{self.name}.records")
        self.routes = [f"{self.name}-n{node.index}" for node in self.node_order()]
        self.process: Optional[WarrenProcess] = None
        self.generation = 0

    def node_order(self) -> List[Node]:
        """Its own node first, then the others in turn."""
        nodes = list(self.fleet.nodes)
        start = nodes.index(self.own_node)
        return nodes[start:] + nodes[:start]

    def route_to(self, node: Node) -> str:
        return f"{self.name}-n{node.index}"

    def config(self) -> str:
        ports = [self.fleet.proxy.route(route).port for route in self.routes]
        worker = scripted_worker("chaos", QUEUE, self.record_file, record_time=True,
                                 prefetch=self.fleet.prefetch, concurrency=HANDLERS,
                                 sleep_ms=50, dead_letter_queue=DEAD_LETTER_QUEUE,
                                 **self.fleet.worker_keys.get(self.name, {}))
        worker.pop("allow_message_loss", None)  # the queue has a dead-letter exchange
        if self.fleet.isolation == "process":
            # The config refuses concurrency with process isolation: a child runs one message
            # at a time, so as many children as there were threads.
            del worker["concurrency"]
            worker.update({"isolation": "process", "processes": HANDLERS})
        worker["settings"].update(self.fleet.worker_settings.get(self.name, {}))
        text = warren_config(
            host={"name": f"chaos-{self.name}", "shutdown_timeout": "20s"},
            broker={"uri": None, "hosts": [f"amqp://guest@127.0.0.1:{p}/" for p in ports],
                    "heartbeat": HEARTBEAT, "connect_timeout": "5s",
                    "reconnect_max": "2s", **self.fleet.broker_keys},
            **self.fleet.topology(), workers=[worker])
        if self.fleet.outbox:  # every host relays the same outbox table
            text += "\n[[outbox]]\n" + "".join(f"{toml_key(k)} = {toml_value(v)}\n"
                                              for k, v in self.fleet.outbox.items())
        return text

    def start(self, wait_ready: bool = True) -> None:
        self.generation += 1
        self.process = WarrenProcess(self.config(), name=f"chaos-{self.name}-{self.generation}",
                                     **warren_options()).start()
        self.fleet.processes.append(self.process)
        if wait_ready:
            self.process.wait_ready(timeout=60)


class Fleet:
    """The proxy, the hosts and the topology of one scenario."""

    def __init__(self, nodes: Nodes, workdir: Path, hosts: int = 3, prefetch: int = 20,
                 isolation: str = "thread"):
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}, not {isolation!r}")
        self.nodes = nodes
        self.isolation = isolation                   # where the handlers run: ISOLATIONS
        self.workdir = workdir
        self.prefetch = prefetch
        self.proxy = FaultProxy()
        self.processes: List[WarrenProcess] = []
        self.worker_keys: Dict[str, dict] = {}       # per host name: extra [[workers]] keys
        self.worker_settings: Dict[str, dict] = {}   # per host name: extra plugin settings
        self.broker_keys: dict = {}                  # extra [broker] keys for every host
        self.outbox: Optional[dict] = None           # an [[outbox]] relay on every host
        self.hosts = [Host(i, self) for i in range(1, hosts + 1)]
        for host in self.hosts:
            for node in nodes:
                self.proxy.add_route(host.route_to(node), node.amqp_port)

    @staticmethod
    def topology() -> dict:
        return {
            "exchanges": [{"name": EXCHANGE, "type": "topic"},
                          {"name": DEAD_LETTERS, "type": "fanout"}],
            "queues": [quorum_queue(QUEUE, dead_letter_exchange=DEAD_LETTERS, delivery_limit=50,
                                    bindings=[{"exchange": EXCHANGE, "routing_key": "#"}])]}
                                    # the dead-letter queue: the workers' dead_letter_queue

    def apply_topology(self) -> None:
        """Declares the exchanges and queues before any publish (`warren topology apply`)."""
        apply_topology(warren_config(**self.topology()), self.workdir)

    def start(self) -> None:
        for host in self.hosts:
            host.start(wait_ready=False)
        for host in self.hosts:
            host.process.wait_ready(timeout=60)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def hosts_on(self, node: Node) -> List[Host]:
        return [h for h in self.hosts if h.own_node is node]

    def handled(self):
        """Every handler call of every host: (host name, record)."""
        return [(host.name, record) for host in self.hosts
                for record in host.record_file.records()]

    def stop(self) -> List[str]:
        """SIGTERM to every host still running; returns what went wrong."""
        problems = []
        for process in self.processes:
            problems += process.stop_and_check()
        self.proxy.close()
        return problems
