"""Many test messages, fast, and the accounting of what became of them.

`publish_bulk` fills a queue with thousands of messages in seconds: the kit's Broker.publish waits
for a confirm per message (a few hundred a second on a quorum queue here), too slow to stage
20,000. It keeps every publish in flight at once on an asynchronous connection and returns when
the broker confirmed them all, so a message lost on the way in fails the test there, not later
as a false "lost by Warren".

`wait_drained` waits until a queue nobody consumes any more is empty.

`Tally` compares the ids a test published with the ids a handler saw (the scripted plugin's
record file) and names the lost, duplicated and unexpected ones.
"""

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Set

import pika

from testkit_broker import Broker
from testkit_env import env, wait_until


def publish_bulk(exchange: str, routing_key: str, n: int, prefix: str = "bulk", *,
                 headers: Optional[Dict[str, Any]] = None, body: Optional[bytes] = None,
                 uri: Optional[str] = None, timeout: float = 120,
                 ids: Optional[List[str]] = None,
                 headers_by_id: Optional[Dict[str, Dict[str, Any]]] = None) -> List[str]:
    """Publishes N persistent messages with unique ids PREFIX-<run>-<index> (also in the header
    x-test-id, like Broker.publish_many) on a connection of its own and returns the ids in order
    once the broker confirmed every one. The publishes are pipelined (pika's asynchronous
    connection, all in flight at once), so thousands take seconds; an unconfirmed publish can be
    dropped by a quorum queue when its channel closes, which would look like a message lost by
    Warren. IDS: the message ids to use instead (N must be their number); HEADERS_BY_ID: headers
    of some messages on top of HEADERS."""
    if ids is None:
        run = uuid.uuid4().hex[:8]
        ids = [f"{prefix}-{run}-{index:06d}" for index in range(n)]
    assert len(ids) == n, f"publish_bulk: {len(ids)} ids for {n} messages"
    headers_by_id = headers_by_id or {}
    parameters = pika.URLParameters(uri or env("WARREN_TEST_AMQP_URI"))
    parameters.heartbeat = 0
    state = {"confirmed": 0, "nacked": 0, "error": None}

    def on_confirm(frame) -> None:
        method = frame.method
        if isinstance(method, pika.spec.Basic.Nack):
            state["nacked"] += 1
        tag = method.delivery_tag
        state["confirmed"] = tag if method.multiple else state["confirmed"] + 1
        if state["confirmed"] >= n:
            connection.close()

    def on_channel(channel) -> None:
        channel.confirm_delivery(on_confirm)
        for message_id in ids:
            properties = pika.BasicProperties(
                message_id=message_id, delivery_mode=2,
                headers={**(headers or {}), **headers_by_id.get(message_id, {}),
                         "x-test-id": message_id})
            channel.basic_publish(exchange, routing_key, body if body is not None
                                  else message_id.encode(), properties)
        if n == 0:
            connection.close()

    def on_open(opened) -> None:
        opened.channel(on_open_callback=on_channel)

    def on_failure(_connection, error) -> None:
        state["error"] = error
        connection.ioloop.stop()

    connection = pika.SelectConnection(parameters, on_open_callback=on_open,
                                       on_open_error_callback=on_failure,
                                       on_close_callback=lambda *_: connection.ioloop.stop())
    timer = connection.ioloop.call_later(timeout, lambda: on_failure(connection, "timeout"))
    connection.ioloop.start()
    connection.ioloop.remove_timeout(timer)
    if state["error"] is not None or state["confirmed"] < n:
        raise AssertionError(f"publish_bulk: {state['confirmed']} of {n} confirmed "
                             f"({state['error']})")
    if state["nacked"]:
        raise AssertionError(f"publish_bulk: the broker nacked {state['nacked']} of {n}")
    return ids


def wait_for_ready(broker: Broker, queue: str, n: int, timeout: float = 60) -> None:
    """Waits until QUEUE holds at least N ready messages (nobody consuming it yet)."""
    wait_until(lambda: broker.message_count(queue) >= n, timeout,
               what=lambda: f"{n} ready messages in {queue} (has {broker.message_count(queue)})")


def wait_drained(broker: Broker, queue: str, timeout: float = 15) -> None:
    """Waits until QUEUE has no consumer and holds no message. With nobody consuming, nothing can
    be unacknowledged either (a closing channel hands its unacked messages back as ready), so this
    is "nothing ready, nothing unacked", asked of the queue itself (a passive declare): exact and
    fast, where rabbitmqctl costs an Erlang VM per call and reports quorum-queue counts up to 5 s
    late."""
    def consumers_and_messages():
        method = broker.channel().queue_declare(queue, passive=True).method
        return method.consumer_count, method.message_count

    wait_until(lambda: consumers_and_messages() == (0, 0), timeout,
               what=lambda: f"{queue} drained, nobody consuming (consumers, messages: "
                            f"{consumers_and_messages()})")


@dataclass
class Tally:
    """What became of the published ids, given the ids handled (with repeats)."""

    expected: Set[str]
    handled: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, expected: Iterable[str], handled: Iterable[str]) -> "Tally":
        return cls(set(expected), Counter(handled))

    @property
    def lost(self) -> Set[str]:
        return self.expected - set(self.handled)

    @property
    def duplicated(self) -> Dict[str, int]:
        return {i: count for i, count in self.handled.items() if count > 1 and i in self.expected}

    @property
    def unexpected(self) -> Set[str]:
        return set(self.handled) - self.expected

    @property
    def complete(self) -> bool:
        """Every expected id handled at least once."""
        return not self.lost

    def summary(self) -> str:
        def sample(items) -> str:
            items = sorted(items)
            return ", ".join(items[:5]) + (" ..." if len(items) > 5 else "")

        return (f"{len(self.expected)} published, {len(set(self.handled) & self.expected)} "
                f"handled; lost {len(self.lost)} [{sample(self.lost)}], duplicated "
                f"{len(self.duplicated)} [{sample(self.duplicated)}], unexpected "
                f"{len(self.unexpected)} [{sample(self.unexpected)}]")

    def assert_exactly_once(self) -> None:
        assert not self.lost and not self.duplicated and not self.unexpected, self.summary()
