"""The load of a chaos scenario: numbered messages published with confirms, at a steady rate.

Each message gets the id PREFIX-<7-digit number> (message_id and header x-test-id). A publish
counts as confirmed only when the broker acked it (pika's confirm_delivery); on a nack, a return
(mandatory) or any connection trouble the publisher moves to the next node and publishes the same
id again until it is confirmed. So every id sent ends confirmed (unless the run ends first), and a
message that reached the queue although its confirm was lost is no "unexpected" one: it shows as
a duplicate, and its id is in `republished_ids`.

It connects straight to the nodes (not through the fault proxy: the faults are between the hosts
and the broker), with a 5 s heartbeat, so a frozen node is noticed like the hosts notice it, and
blocked_connection_timeout, so a disk or memory alarm ends in an error and a retry, not a hang.
"""

import threading
import time
from typing import Dict, List, Set

import pika
import pika.exceptions

import kit_path  # noqa: F401 - the integration kit, for the testkit_* imports
from testkit_broker import Broker

RETRYABLE = (pika.exceptions.AMQPError, OSError)


class PacedLoad(threading.Thread):
    """COUNT ids PREFIX-<number>, one sent every 1/RATE s (late ones go at once, to catch up);
    a subclass says how one is sent (send(), True once it is in). start(), then wait_done()."""

    def __init__(self, count: int, rate: float, prefix: str):
        super().__init__(name=f"chaos-load-{prefix}", daemon=True)
        self.count, self.rate, self.prefix = count, rate, prefix
        self.sent: Dict[str, float] = {}       # id -> wall time of its first send
        self.confirmed: Dict[str, float] = {}  # id -> wall time of its confirm
        self.republished_ids: Set[str] = set()
        self.errors: List[str] = []            # what went wrong, in order (first 50)
        self.error_count = 0
        self._stopping = threading.Event()

    @property
    def republished(self) -> int:
        return len(self.republished_ids)

    def stop(self) -> None:
        """Stops after the send in progress."""
        self._stopping.set()

    def wait_done(self, timeout: float) -> bool:
        self.join(timeout)
        return not self.is_alive()

    def run(self) -> None:
        started = time.monotonic()
        try:
            for index in range(self.count):
                delay = started + index / self.rate - time.monotonic()
                if delay > 0 and self._stopping.wait(delay):
                    break
                if not self.send(f"{self.prefix}-{index:07d}"):
                    break
        finally:
            self.finish()

    def send(self, message_id: str) -> bool:
        raise NotImplementedError

    def finish(self) -> None:
        """After the last send."""

    def note(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < 50:
            self.errors.append(f"{time.strftime('%H:%M:%S')} {text}")


class ConfirmedPublisher(PacedLoad):
    """Publishes to EXCHANGE/ROUTING_KEY on the first of URIS that works."""

    def __init__(self, uris: List[str], exchange: str, routing_key: str, count: int, rate: float,
                 prefix: str = "chaos"):
        super().__init__(count, rate, prefix)
        self.exchange, self.routing_key = exchange, routing_key
        self._brokers = [Broker(uri, rabbitmqctl="(not used)", heartbeat=5,
                                blocked_connection_timeout=10) for uri in uris]
        self._node = 0

    def send(self, message_id: str) -> bool:
        properties = pika.BasicProperties(message_id=message_id, delivery_mode=2,
                                          headers={"x-test-id": message_id})
        while not self._stopping.is_set():
            broker = self._brokers[self._node]
            try:
                channel = broker.channel()
                if message_id in self.sent:
                    self.republished_ids.add(message_id)
                self.sent.setdefault(message_id, time.time())
                channel.basic_publish(self.exchange, self.routing_key, message_id.encode(),
                                      properties, mandatory=True)
                self.confirmed[message_id] = time.time()
                return True
            except (pika.exceptions.UnroutableError, pika.exceptions.NackError) as error:
                self.note(f"{message_id}: {type(error).__name__}")
                # A channel opened while the queue's leader moved can go on nacking after the
                # new leader is elected (seen here for minutes): try again on a new connection.
                broker.reconnect()
                self._stopping.wait(0.2)
            except RETRYABLE as error:
                self.note(f"{message_id} via {broker.uri}: {type(error).__name__} {error}")
                broker.reconnect()
                self._node = (self._node + 1) % len(self._brokers)
                self._stopping.wait(0.2)
        return False

    def finish(self) -> None:
        for broker in self._brokers:
            broker.close()
