"""Routing through exchanges that warren.toml declares, seen from the handlers: each queue's worker
gets exactly the ids whose routing key (or headers) match its binding, once each, and nothing else.

Each test starts warren (which declares the topology), publishes keys that must and must not match,
waits for the expected number of handle calls, stops warren gracefully and then checks that every
queue is empty: a message routed where it should not be would be a record too many or would still
sit in a queue."""

from collections import defaultdict
from typing import Dict, List, Mapping, Set

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import scripted_worker, warren_config, warren_options
from testkit_traffic import Tally
from warren_testkit import RecordFile, WaitTimeout


def run_and_collect(warren, broker, record_file: RecordFile, exchange: Mapping,
                    bindings: Dict[str, List[Mapping]], publish) -> Dict[str, List[str]]:
    """Starts warren with one classic queue + scripted worker per entry of BINDINGS (worker name =
    queue name), calls publish() -> {queue: expected ids}, waits for that many handle calls,
    stops warren, and returns {queue: ids handled by its worker}. (Tests list the `created`
    fixture before `warren`, so warren stops before the queues are deleted.)"""
    queues = list(bindings)
    config = warren_config(
        exchanges=[exchange],
        queues=[{"name": queue, "type": "classic", "bindings": bindings[queue]}
                for queue in queues],
        workers=[scripted_worker(queue, queue, record_file, prefetch=20, concurrency=2)
                 for queue in queues])
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)

    expected: Dict[str, Set[str]] = publish()
    total = sum(len(ids) for ids in expected.values())
    try:
        record_file.wait_for_count(total, timeout=30)
    except WaitTimeout:
        pass  # the tallies below say which ids are missing where
    assert process.terminate() == 0, process.describe()

    for queue in queues:
        assert broker.message_count(queue) == 0, f"{queue} still holds messages"
    handled: Dict[str, List[str]] = defaultdict(list)
    for record in record_file.records():
        handled[record.worker].append(record.message_id)
    for queue in queues:
        tally = Tally.of(expected.get(queue, set()), handled.get(queue, []))
        assert not (tally.lost or tally.duplicated or tally.unexpected), \
            f"queue {queue}: {tally.summary()}"
    return handled


def test_TopicExchange_StarAndHashBindings_EachQueueGetsExactlyTheMatchingIds(
        broker, created, warren, record_file):
    exchange = created.exchange("route-topic")
    star, hash_, middle = (created.queue("route-star"), created.queue("route-hash"),
                           created.queue("route-mid"))
    # key -> the queues it must reach
    keys = {
        "order": {hash_},                          # '#' matches zero words; '*' needs one
        "order.created": {star, hash_, middle},
        "order.created.eu": {hash_, middle},       # '*' matches exactly one word
        "invoice.created": {middle},
        "orders.created": {middle},                # 'orders' is not 'order'
        "invoice.paid": set(),                     # unroutable: nobody gets it
    }

    def publish():
        expected = defaultdict(set)
        for key, targets in keys.items():
            for message_id in broker.publish_many(exchange, key, 3, prefix="topic"):
                for queue in targets:
                    expected[queue].add(message_id)
        return expected

    run_and_collect(warren, broker, record_file, {"name": exchange, "type": "topic"}, {
        star: [{"exchange": exchange, "routing_key": "order.*"}],
        hash_: [{"exchange": exchange, "routing_key": "order.#"}],
        middle: [{"exchange": exchange, "routing_key": "*.created.#"}],
    }, publish)


def test_FanoutExchange_EveryBoundQueueGetsEveryId(broker, created, warren, record_file):
    exchange = created.exchange("route-fanout")
    queues = [created.queue(f"route-fan{i}") for i in range(3)]

    def publish():
        ids = []
        for key in ("a", "b.c", ""):  # a fanout ignores the routing key
            ids += broker.publish_many(exchange, key, 10, prefix="fanout")
        return {queue: set(ids) for queue in queues}

    run_and_collect(warren, broker, record_file, {"name": exchange, "type": "fanout"},
                    {queue: [{"exchange": exchange, "routing_key": ""}] for queue in queues},
                    publish)


def test_HeadersExchange_MatchAllAndMatchAny_EachQueueGetsExactlyTheMatchingIds(
        broker, created, warren, record_file):
    exchange = created.exchange("route-headers")
    match_all, match_any = created.queue("route-all"), created.queue("route-any")
    cases = [
        ({"format": "pdf", "type": "report"}, {match_all, match_any}),
        ({"format": "pdf", "type": "report", "extra": "x"}, {match_all, match_any}),
        ({"format": "pdf", "type": "log"}, {match_any}),
        ({"format": "zip", "type": "report"}, {match_any}),
        ({"format": "pdf"}, {match_any}),
        ({"format": "zip"}, set()),
        ({}, set()),
    ]

    def publish():
        expected = defaultdict(set)
        for headers, targets in cases:
            for message_id in broker.publish_many(exchange, "ignored", 3, prefix="headers",
                                                  headers=headers):
                for queue in targets:
                    expected[queue].add(message_id)
        return expected

    wanted = {"format": "pdf", "type": "report"}
    run_and_collect(warren, broker, record_file, {"name": exchange, "type": "headers"}, {
        match_all: [{"exchange": exchange, "routing_key": "",
                     "arguments": {"x-match": "all", **wanted}}],
        match_any: [{"exchange": exchange, "routing_key": "",
                     "arguments": {"x-match": "any", **wanted}}],
    }, publish)
