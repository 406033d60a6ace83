"""Levers and gauges for tests of the transport's edges (test_transport_edges.py, test_tls.py):
/readyz of a running warren (its metrics: testkit_metrics), a broker user of the test's own, the
broker's memory alarm and application settings (consumer_timeout), and the TLS listener that
scripts/services/rabbitmq.sh opens with WARREN_RABBITMQ_TLS=1, with the checks that warren works
over it or is refused by it (test_tls.py, test_tls_client_certs.py).
(Free and closed ports: testkit_env.free_port.)

Each rabbitmqctl call starts an Erlang VM (about a second here, more on a busy machine), so these
helpers make as few as they can and wait on conditions rather than sleeping.
"""

import os
import re
import secrets
import shutil
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

import requests

from testkit_broker import Broker
from testkit_env import skip_or_fail, unique_name, wait_until
from testkit_traffic import Tally


# -- what a running warren reports -----------------------------------------------------------------
def readyz_status(endpoint: str) -> Optional[int]:
    """The HTTP status of http://ENDPOINT/readyz, or None while nothing answers."""
    try:
        return requests.get(f"http://{endpoint}/readyz", timeout=2).status_code
    except requests.RequestException:
        return None


def readyz_text(endpoint: str) -> str:
    """The body of http://ENDPOINT/readyz (the reasons when not ready), or "" while nothing
    answers."""
    try:
        return requests.get(f"http://{endpoint}/readyz", timeout=2).text
    except requests.RequestException:
        return ""


# -- a broker user of the test's own ---------------------------------------------------------------
@dataclass
class BrokerUser:
    """A user on the test broker with a distinctive password, permitted on vhost "/"."""

    broker: Broker
    name: str
    password: str

    def set_permissions(self, configure: str = ".*", write: str = ".*", read: str = ".*") -> None:
        self.broker.rabbitmqctl("set_permissions", "-p", "/", self.name, configure, write, read)

    def uri(self, port: int, *, with_password: bool = False, host: str = "127.0.0.1",
            scheme: str = "amqp") -> str:
        credentials = urllib.parse.quote(self.name, safe="")
        if with_password:
            credentials += ":" + urllib.parse.quote(self.password, safe="")
        return f"{scheme}://{credentials}@{host}:{port}/"


@contextmanager
def broker_user(broker: Broker, prefix: str = "itest-user") -> Iterator[BrokerUser]:
    """Creates a user with all permissions on "/" and deletes it afterwards. The password is
    long, random and easy to search for in logs (it starts with "pw-")."""
    user = BrokerUser(broker, unique_name(prefix), f"pw-{secrets.token_hex(12)}-SeCrEt")
    broker.rabbitmqctl("add_user", user.name, user.password)
    try:
        user.set_permissions()
        yield user
    finally:
        broker.rabbitmqctl("delete_user", user.name)


# -- the memory alarm -----------------------------------------------------------------------------
def memory_alarm_active(broker: Broker) -> bool:
    alarms = broker.rabbitmqctl("eval", "rabbit_alarm:get_alarms().")
    return "memory" in alarms


@contextmanager
def memory_alarm(broker: Broker, timeout: float = 30) -> Iterator[None]:
    """Raises the broker's memory alarm (a 10 MiB watermark: the node uses far more), so it blocks
    every connection that publishes; restores the default watermark (0.4) afterwards, whatever
    happens, and waits until the alarm has cleared."""
    broker.rabbitmqctl("set_vm_memory_high_watermark", "absolute", "10MiB")
    try:
        wait_until(lambda: memory_alarm_active(broker), timeout, interval=0.5,
                   what="the broker's memory alarm after set_vm_memory_high_watermark 10MiB")
        yield
    finally:
        broker.rabbitmqctl("set_vm_memory_high_watermark", "0.4")
        broker.reconnect()  # the kit's own connection may have been blocked
        wait_until(lambda: not memory_alarm_active(broker), timeout, interval=0.5,
                   what="the memory alarm to clear after set_vm_memory_high_watermark 0.4")


# -- the broker's application settings -------------------------------------------------------------
@contextmanager
def rabbit_settings(broker: Broker, **values: int) -> Iterator[None]:
    """Sets the broker's `rabbit` application settings (consumer_timeout=5000, ...) at runtime and
    restores the old values afterwards, whatever happens. A channel reads consumer_timeout when it
    opens and channel_tick_interval (how often it checks that timeout) at each check, so set them
    before the consumer under test opens its channels."""
    old = {}
    for key in values:
        old[key] = broker.rabbitmqctl("eval", f"application:get_env(rabbit, {key}).").strip()
    try:
        for key, value in values.items():
            broker.rabbitmqctl("eval", f"application:set_env(rabbit, {key}, {int(value)}).")
        yield
    finally:
        for key, was in old.items():
            if was.startswith("{ok,"):  # "{ok,600000}"
                broker.rabbitmqctl("eval", f"application:set_env(rabbit, {key}, {was[4:-1]}).")
            else:  # "undefined"
                broker.rabbitmqctl("eval", f"application:unset_env(rabbit, {key}).")


# -- the TLS listener ------------------------------------------------------------------------------
TLS_VARIABLES = ("WARREN_TEST_AMQPS_URI", "WARREN_TEST_CA_FILE")


def require_tls_broker() -> None:
    """Skips the test unless the broker has a TLS listener and openssl is installed; fails it
    instead when WARREN_REQUIRE_SERVICES=1."""
    problems = [f"{name} is not set" for name in TLS_VARIABLES if not os.environ.get(name)]
    if shutil.which("openssl") is None:
        problems.insert(0, "the openssl command is missing (apt-get install openssl)")
    if problems:
        skip_or_fail("no TLS broker: " + "; ".join(problems) + ". Start the broker with "
                     "WARREN_RABBITMQ_TLS=1 scripts/services/rabbitmq.sh start DIR (scripts/test "
                     "does)")


def amqps_port() -> int:
    port = urllib.parse.urlsplit(os.environ["WARREN_TEST_AMQPS_URI"]).port
    assert port is not None, "WARREN_TEST_AMQPS_URI has no port"
    return port


def assert_consumes_and_publishes_over_tls(process, broker: Broker, uri: str, queue: str,
                                           out_queue: str, record_file, count: int = 20) -> None:
    """Publishes COUNT messages to QUEUE over the kit's plain connection, each asking its handler
    to publish to OUT_QUEUE, then checks that the running warren PROCESS, connected to URI
    (amqps://...), handled each exactly once and published all COUNT over its TLS publisher."""
    ids = broker.publish_many("", queue, count, prefix="tls",
                              headers={"x-test-action": f"publish::{out_queue}"})
    wait_until(lambda: Tally.of(ids, record_file.ids()).complete, 30,
               what=lambda: Tally.of(ids, record_file.ids()).summary())
    Tally.of(ids, record_file.ids()).assert_exactly_once()
    wait_until(lambda: broker.message_count(out_queue) == len(ids), 15,
               what=f"the handlers' {count} publishes over the TLS publisher connection")
    logs = process.logs()
    assert re.search(rf"connected to {re.escape(uri)}; 1 worker\(s\) consuming", logs), \
        process.describe()
    assert f"publisher connected to {uri}" in logs, process.describe()


def assert_refused_over_tls(process, uri: str, reason: str, port: int) -> None:
    """Waits until the running warren PROCESS's consumer has failed twice to connect to URI, the
    rest of its log line matching the regular expression REASON (it keeps trying), then checks
    that it never consumed and that its /readyz (metrics on 127.0.0.1:PORT) answers 503."""
    failed = re.compile(rf"^\S+ warning +cannot connect to {re.escape(uri)}: {reason}$",
                        re.MULTILINE)
    wait_until(lambda: len(failed.findall(process.logs())) >= 2, 30,
               what=lambda: f"two connection attempts refused with '{reason}': "
                            f"{process.describe()}")
    assert process.running(), process.describe()
    assert "consuming" not in process.logs(), process.describe()
    assert readyz_status(f"127.0.0.1:{port}") == 503, process.describe()
