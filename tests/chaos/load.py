"""The load of a chaos scenario: numbered messages published with confirms, at a steady rate.

Each message gets the id PREFIX-<7-digit number> (message_id and header x-test-id). A publish
counts as confirmed only when the broker acked it (pika's confirm_delivery); on a nack, a return
(mandatory) or any connection trouble the publisher moves to the next node and publishes the same
id again until it is confirmed. So every id sent ends confirmed (unless the run ends first), and a
message that reached the queue although its confirm was lost is no "unexpected" one: it shows as
a duplicate, counted in `republished`.

It connects straight to the nodes (not through the fault proxy: the faults are between the hosts
and the broker), with a 5 s heartbeat, so a frozen node is noticed like the hosts notice it, and
blocked_connection_timeout, so a disk or memory alarm ends in an error and a retry, not a hang.
"""

import threading
import time
from typing import Dict, List, Optional, Set

import pika
import pika.exceptions

RETRYABLE = (pika.exceptions.AMQPError, OSError)


class ConfirmedPublisher(threading.Thread):
    """Publishes COUNT messages at RATE a second to EXCHANGE/ROUTING_KEY on the first of URIS that
    works; start() it, then wait_done()."""

    def __init__(self, uris: List[str], exchange: str, routing_key: str, count: int, rate: float,
                 prefix: str = "chaos"):
        super().__init__(name="chaos-publisher", daemon=True)
        self.uris = list(uris)
        self.exchange, self.routing_key = exchange, routing_key
        self.count, self.rate, self.prefix = count, rate, prefix
        self.sent: Dict[str, float] = {}       # id -> wall time of its first publish
        self.confirmed: Dict[str, float] = {}  # id -> wall time of its confirm
        self.republished = 0
        self.republished_ids: Set[str] = set()
        self.errors: List[str] = []            # what went wrong, in order (first 50)
        self.error_count = 0
        self._stopping = threading.Event()
        self._node = 0
        self._connection: Optional[pika.BlockingConnection] = None
        self._channel = None

    def ids(self) -> List[str]:
        return [f"{self.prefix}-{index:07d}" for index in range(self.count)]

    def stop(self) -> None:
        """Stops after the publish in progress (unconfirmed ids stay unconfirmed)."""
        self._stopping.set()

    def wait_done(self, timeout: float) -> bool:
        self.join(timeout)
        return not self.is_alive()

    def run(self) -> None:
        started = time.monotonic()
        for index, message_id in enumerate(self.ids()):
            due = started + index / self.rate
            delay = due - time.monotonic()
            if delay > 0 and self._stopping.wait(delay):
                break
            if not self._publish_until_confirmed(message_id):
                break
        self._disconnect()

    def _publish_until_confirmed(self, message_id: str) -> bool:
        properties = pika.BasicProperties(message_id=message_id, delivery_mode=2,
                                          headers={"x-test-id": message_id})
        attempt = 0
        while not self._stopping.is_set():
            attempt += 1
            try:
                channel = self._open_channel()
                self.sent.setdefault(message_id, time.time())
                if attempt > 1:
                    self.republished += 1
                    self.republished_ids.add(message_id)
                channel.basic_publish(self.exchange, self.routing_key, message_id.encode(),
                                      properties, mandatory=True)
                self.confirmed[message_id] = time.time()
                return True
            except (pika.exceptions.UnroutableError, pika.exceptions.NackError) as error:
                self._note(f"{message_id}: {type(error).__name__}")
                self._stopping.wait(0.2)  # the queue's leader may be moving: try again soon
            except RETRYABLE as error:
                self._note(f"{message_id} via {self.uris[self._node]}: {type(error).__name__} "
                           f"{error}")
                self._disconnect()
                self._node = (self._node + 1) % len(self.uris)
                self._stopping.wait(0.2)
        return False

    def _open_channel(self):
        if self._connection is None or not self._connection.is_open:
            parameters = pika.URLParameters(self.uris[self._node])
            parameters.heartbeat = 5
            parameters.blocked_connection_timeout = 10
            parameters.socket_timeout = 5
            parameters.stack_timeout = 10
            parameters.connection_attempts = 1
            self._connection = pika.BlockingConnection(parameters)
            self._channel = None
        if self._channel is None or not self._channel.is_open:
            self._channel = self._connection.channel()
            self._channel.confirm_delivery()
        return self._channel

    def _disconnect(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except RETRYABLE:
                pass  # already dead: nothing to close

    def _note(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < 50:
            self.errors.append(f"{time.strftime('%H:%M:%S')} {text}")
