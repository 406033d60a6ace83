#!/usr/bin/python3
"""Prints every message that passes through the broker's exchanges, for scripts/run: what was
published, what the plugins produced, what went to retry or dead-letter.

It binds one private, exclusive queue to each non-default exchange (topic: '#', fanout and
headers: everything, direct: every routing key already bound), so the real queues and their
consumers are untouched. Reads WARREN_TEST_AMQP_URI and WARREN_TEST_RABBITMQCTL (DIR/env of
scripts/services/rabbitmq.sh).

Usage: scripts/lib/amqp_tap.py [READY_FILE]   (runs until killed; creates READY_FILE once bound)
"""

import os
import subprocess
import sys

import pika


def rabbitmqctl_rows(*args):
    output = subprocess.run([os.environ["WARREN_TEST_RABBITMQCTL"], *args, "--quiet",
                             "--no-table-headers"], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    return [line.split("\t") for line in output.splitlines() if line]


def bindings_to_tap():
    """(exchange, routing_key, arguments) for every message-carrying non-default exchange."""
    keys_by_exchange = {}
    for source, key in rabbitmqctl_rows("list_bindings", "source_name", "routing_key"):
        keys_by_exchange.setdefault(source, set()).add(key)
    for name, kind in rabbitmqctl_rows("list_exchanges", "name", "type"):
        if not name or name.startswith("amq."):
            continue
        if kind == "topic":
            yield name, "#", None
        elif kind in ("fanout", "headers"):
            yield name, "", None  # headers: no match arguments with x-match=all matches everything
        elif kind == "direct":
            for key in sorted(keys_by_exchange.get(name, ())):
                yield name, key, None


def show(_channel, method, properties, body):
    text = body.decode(errors="replace")
    if len(text) > 300:
        text = text[:300] + "..."
    headers = properties.headers or {}
    extra = ""
    if headers:
        extra = " headers=" + ",".join(f"{k}={v}" for k, v in sorted(headers.items()))
    print(f"[tap] {method.exchange} {method.routing_key}{extra}: {text}", flush=True)


def main():
    parameters = pika.URLParameters(os.environ["WARREN_TEST_AMQP_URI"])
    connection = pika.BlockingConnection(parameters)
    channel = connection.channel()
    queue = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
    tapped = set()
    for exchange, key, arguments in bindings_to_tap():
        channel.queue_bind(queue, exchange, routing_key=key, arguments=arguments)
        tapped.add(exchange)
    names = sorted(tapped)
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    print(f"[tap] watching exchanges: {shown or '(none declared yet)'}", flush=True)
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").close()
    channel.basic_consume(queue, show, auto_ack=True)
    try:
        channel.start_consuming()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
