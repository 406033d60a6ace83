"""The test's own hands on RabbitMQ: topology, publishing with known ids, reading queues back, and
broker-level faults (closing every connection, restarting the node).

Publishing goes through a pika BlockingConnection with publisher confirms, so a publish has reached
the broker when it returns. Every test message carries a unique message_id, also in the header
`x-test-id`, so a test can account for each one. Counts of unacknowledged messages come from
rabbitmqctl (the only place the broker reports them).
"""

import json
import re
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

import pika
import pika.exceptions

from testkit_env import WaitTimeout, env

Body = Union[bytes, str, None, Callable[[int, str], Union[bytes, str]]]


@dataclass
class Message:
    """One message read back from a queue."""

    body: bytes
    exchange: str
    routing_key: str
    redelivered: bool
    properties: pika.BasicProperties

    @property
    def message_id(self) -> Optional[str]:
        return self.properties.message_id

    @property
    def headers(self) -> Dict[str, Any]:
        return dict(self.properties.headers or {})

    @property
    def test_id(self) -> Optional[str]:
        value = self.headers.get("x-test-id")
        return value.decode() if isinstance(value, bytes) else value

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        return json.loads(self.body)


def _as_bytes(value: Union[bytes, str]) -> bytes:
    return value.encode() if isinstance(value, str) else value


class Broker:
    """A connection to the test broker (WARREN_TEST_AMQP_URI) plus its rabbitmqctl wrapper."""

    def __init__(self, uri: Optional[str] = None, rabbitmqctl: Optional[str] = None, *,
                 heartbeat: int = 0, blocked_connection_timeout: float = 60):
        """HEARTBEAT 0 (none): a test may sit in a long wait without servicing heartbeats; a
        load that must notice a frozen node sets one (tests/chaos/load.py)."""
        self.uri = uri or env("WARREN_TEST_AMQP_URI")
        self._rabbitmqctl = rabbitmqctl or env("WARREN_TEST_RABBITMQCTL")
        self._heartbeat = heartbeat
        self._blocked_connection_timeout = blocked_connection_timeout
        self._connection: Optional[pika.BlockingConnection] = None
        self._channel = None

    # -- connection ------------------------------------------------------------------------------
    def channel(self):
        """The kit's channel (publisher confirms on), reconnecting when it or its connection closed."""
        if self._connection is None or not self._connection.is_open:
            parameters = pika.URLParameters(self.uri)
            parameters.heartbeat = self._heartbeat
            parameters.blocked_connection_timeout = self._blocked_connection_timeout
            self._connection = pika.BlockingConnection(parameters)
            self._channel = None
        if self._channel is None or not self._channel.is_open:
            self._channel = self._connection.channel()
            self._channel.confirm_delivery()
        return self._channel

    def reconnect(self) -> None:
        """Drops the kit's connection; the next call opens a new one."""
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except pika.exceptions.AMQPError:
                pass  # already dead: nothing to close

    close = reconnect

    def __enter__(self) -> "Broker":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    # -- topology ---------------------------------------------------------------------------------
    def declare_queue(self, name: str, *, durable: bool = True, queue_type: Optional[str] = None,
                      arguments: Optional[Dict[str, Any]] = None, exclusive: bool = False,
                      auto_delete: bool = False) -> str:
        """Declares queue NAME (queue_type "quorum"/"classic" sets x-queue-type) and returns NAME."""
        arguments = dict(arguments or {})
        if queue_type:
            arguments["x-queue-type"] = queue_type
        self.channel().queue_declare(name, durable=durable, exclusive=exclusive,
                                     auto_delete=auto_delete, arguments=arguments or None)
        return name

    def delete_queue(self, name: str) -> None:
        self.channel().queue_delete(name)

    def purge_queue(self, name: str) -> int:
        return self.channel().queue_purge(name).method.message_count

    def declare_exchange(self, name: str, exchange_type: str = "topic", *, durable: bool = True,
                         arguments: Optional[Dict[str, Any]] = None) -> str:
        self.channel().exchange_declare(name, exchange_type=exchange_type, durable=durable,
                                        arguments=arguments)
        return name

    def delete_exchange(self, name: str) -> None:
        self.channel().exchange_delete(name)

    def bind_queue(self, queue: str, exchange: str, routing_key: str = "#",
                   arguments: Optional[Dict[str, Any]] = None) -> None:
        self.channel().queue_bind(queue, exchange, routing_key=routing_key, arguments=arguments)

    # -- publishing -------------------------------------------------------------------------------
    def publish(self, exchange: str, routing_key: str, body: Union[bytes, str], *,
                message_id: Optional[str] = None, headers: Optional[Dict[str, Any]] = None,
                persistent: bool = True, **properties: Any) -> str:
        """Publishes one message (confirmed by the broker) and returns its message_id."""
        message_id = message_id or uuid.uuid4().hex
        all_headers = dict(headers or {})
        all_headers.setdefault("x-test-id", message_id)
        props = pika.BasicProperties(message_id=message_id, headers=all_headers,
                                     delivery_mode=2 if persistent else 1, **properties)
        self.channel().basic_publish(exchange, routing_key, _as_bytes(body), props)
        return message_id

    def publish_many(self, exchange: str, routing_key: str, n: int, prefix: str = "msg", *,
                     headers: Optional[Dict[str, Any]] = None, body: Body = None,
                     persistent: bool = True, **properties: Any) -> List[str]:
        """Publishes N messages with ids PREFIX-<run>-<000000..> and returns the ids in order.

        body: None (the id itself), bytes/str (the same for all), or f(index, message_id).
        """
        run = uuid.uuid4().hex[:8]
        ids = []
        for index in range(n):
            message_id = f"{prefix}-{run}-{index:06d}"
            if body is None:
                payload = message_id
            elif callable(body):
                payload = body(index, message_id)
            else:
                payload = body
            ids.append(self.publish(exchange, routing_key, payload, message_id=message_id,
                                    headers=headers, persistent=persistent, **properties))
        return ids

    # -- reading back -----------------------------------------------------------------------------
    def get(self, queue: str) -> Optional[Message]:
        """One message from QUEUE, acknowledged; None when it is empty."""
        method, props, body = self.channel().basic_get(queue, auto_ack=True)
        if method is None:
            return None
        return Message(body=body, exchange=method.exchange, routing_key=method.routing_key,
                       redelivered=method.redelivered, properties=props)

    def drain(self, queue: str, expect: Optional[int] = None, *, settle: float = 1.0,
              timeout: float = 60) -> List[Message]:
        """Takes (and acks) messages from QUEUE, in order, until EXPECT of them have arrived, then
        goes on taking until SETTLE seconds have passed since the last one, and returns them all.

        What this can see: every message that arrives within SETTLE of the last expected one (a
        duplicate, a stray); not one that comes later. Nothing is decided by how quiet the queue
        happened to be before the expected messages arrived: fewer than EXPECT within TIMEOUT
        seconds fails the test. Without EXPECT (nothing is known to be coming) it takes until
        SETTLE seconds pass without a message, and TIMEOUT is unused."""
        messages: List[Message] = []
        started = last_arrival = time.monotonic()
        while True:
            message = self.get(queue)
            now = time.monotonic()
            if message is not None:
                messages.append(message)
                last_arrival = now
            elif expect is not None and len(messages) < expect:
                if now - started >= timeout:
                    raise WaitTimeout(f"{queue}: {len(messages)} of {expect} messages arrived "
                                      f"within {timeout:g}s: "
                                      f"{[m.message_id for m in messages][:10]}")
                time.sleep(0.02)
            elif now - last_arrival >= settle:
                return messages
            else:
                time.sleep(0.02)

    def message_count(self, queue: str) -> int:
        """Ready messages in QUEUE (a passive declare: fast, no rabbitmqctl)."""
        return self.channel().queue_declare(queue, passive=True).method.message_count

    def consumer_count(self, queue: str) -> int:
        return self.channel().queue_declare(queue, passive=True).method.consumer_count

    def queue_counts(self, name: str) -> Tuple[int, int]:
        """(ready, unacknowledged) messages of queue NAME, from rabbitmqctl list_queues."""
        output = self.rabbitmqctl("list_queues", "--quiet", "--no-table-headers",
                                  "name", "messages_ready", "messages_unacknowledged")
        for line in output.splitlines():
            fields = line.split("\t")
            if len(fields) == 3 and fields[0] == name:
                return int(fields[1]), int(fields[2])
        raise KeyError(f"queue {name!r} is not on the broker; rabbitmqctl listed:\n{output}")

    # -- the broker itself ------------------------------------------------------------------------
    def rabbitmqctl(self, *args: str, timeout: float = 120) -> str:
        """Runs rabbitmqctl against the test node; returns stdout, raises with stderr on failure."""
        result = subprocess.run([self._rabbitmqctl, *args], capture_output=True, text=True,
                                timeout=timeout, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}")
        return result.stdout

    def close_all_connections(self, reason: str = "closed by integration test") -> None:
        """Closes every client connection (the kit's own too: it reconnects on next use)."""
        self.reconnect()
        self.rabbitmqctl("close_all_connections", reason)

    def connections_of(self, host_name: str) -> Set[str]:
        """The pids of the connections of the warren whose [host] name is HOST_NAME (its
        connections are named "warren consumer (HOST_NAME)" and so on), not those of tests
        running beside it."""
        listing = self.rabbitmqctl("list_connections", "--quiet", "--no-table-headers", "pid",
                                   "client_properties")  # they hold the connection_name
        return {line.split("\t")[0] for line in listing.splitlines() if f"({host_name})" in line}

    def connection_states_of(self, host_name: str) -> Dict[str, str]:
        """The state (running, blocking, blocked, ...) of each connection of the warren whose
        [host] name is HOST_NAME, by role ("publisher", "consumer"; see connections_of). "blocked":
        the broker stopped reading it (a memory or disk alarm, and it published)."""
        listing = self.rabbitmqctl("list_connections", "--quiet", "--no-table-headers", "state",
                                   "client_properties")
        states = {}
        for line in listing.splitlines():
            match = re.search(rf"warren (\S+) \({re.escape(host_name)}\)", line)
            if match:
                states[match.group(1)] = line.split("\t")[0]
        return states

    def close_connections_of(self, host_name: str, reason: str) -> Set[str]:
        """Closes the connections of the warren named HOST_NAME (see connections_of); returns
        their pids."""
        pids = self.connections_of(host_name)
        for pid in pids:
            self.rabbitmqctl("close_connection", pid, reason)
        return pids

    def stop_broker(self) -> None:
        """Stops the node (data kept). Clients see their connections drop."""
        self.reconnect()
        self._run_wrapper("WARREN_TEST_RABBITMQ_STOP")

    def start_broker(self) -> None:
        """Starts the node stopped by stop_broker: same name, port and data."""
        self._run_wrapper("WARREN_TEST_RABBITMQ_START")

    def restart_broker(self) -> None:
        """Stops and starts the node; durable queues and persistent messages survive."""
        self.stop_broker()
        self.start_broker()

    @staticmethod
    def _run_wrapper(variable: str) -> None:
        result = subprocess.run([env(variable)], capture_output=True, text=True, timeout=180,
                                check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{variable} ({env(variable)}) failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}")
