"""Where integration tests find their services, and how they wait.

Reads the WARREN_TEST_* environment that scripts/services/*.sh write (scripts/test exports it),
decides whether a test with a missing service is skipped or fails (WARREN_REQUIRE_SERVICES=1: fail,
so CI can never pass by skipping), polls conditions against a deadline instead of sleeping, and
hands out names and ports no other test uses.
"""

import os
import random
import shutil
import socket
import time
import uuid
from typing import Callable, TypeVar, Union

import pytest

T = TypeVar("T")

# What each service needs from the environment.
SERVICE_VARIABLES = {
    "rabbitmq": ("WARREN_TEST_AMQP_URI", "WARREN_TEST_RABBITMQCTL"),
    "postgres": ("WARREN_TEST_PG_DSN",),
    "warren": ("WARREN_BIN", "WARREN_PLUGIN_DIR"),
    "prometheus": (),
}

HOW_TO_GET_SERVICES = (
    "run the test through scripts/test (or ctest after sourcing the env files that "
    "scripts/services/rabbitmq.sh and postgres.sh write)"
)


def services_required() -> bool:
    """True when a missing service must fail the test rather than skip it."""
    return os.environ.get("WARREN_REQUIRE_SERVICES") == "1"


def _problems_with(service: str) -> list:
    if service not in SERVICE_VARIABLES:
        raise ValueError(f"require_services: unknown service {service!r}; "
                         f"known: {', '.join(SERVICE_VARIABLES)}")
    problems = [f"{name} is not set" for name in SERVICE_VARIABLES[service]
                if not os.environ.get(name)]
    if service == "warren" and not problems:
        binary = os.environ["WARREN_BIN"]
        if not os.access(binary, os.X_OK):
            problems.append(f"WARREN_BIN={binary} is not an executable file (build the tree first)")
    if service == "prometheus" and not shutil.which("prometheus", path="/usr/bin:" + os.environ.get("PATH", "")):
        problems.append("the prometheus binary is not installed (scripts/bootstrap installs it)")
    return problems


def require_services(*services: str) -> None:
    """Skips the calling test when a service is unavailable; fails it instead when
    WARREN_REQUIRE_SERVICES=1. Services: rabbitmq (default), postgres, warren, prometheus."""
    problems = []
    for service in services or ("rabbitmq",):
        problems += [f"{service}: {p}" for p in _problems_with(service)]
    if problems:
        skip_or_fail(f"services missing ({'; '.join(problems)}); {HOW_TO_GET_SERVICES}")


def skip_or_fail(message: str) -> None:
    """Skips the calling test because something it needs is missing (MESSAGE says what and how to
    get it), or fails it when WARREN_REQUIRE_SERVICES=1: CI never passes by skipping. The one
    place that decides; every require_* helper of the kit ends here."""
    if services_required():
        pytest.fail(f"WARREN_REQUIRE_SERVICES=1 but {message}", pytrace=False)
    pytest.skip(message)


def env(name: str) -> str:
    """The value of a required environment variable, or an error saying where it comes from."""
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"environment variable {name} is not set; {HOW_TO_GET_SERVICES}")
    return value


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1, below Linux's ephemeral range (32768 and up),
    as scripts/services pick theirs. Not port 0's pick: that comes from the ephemeral range, where
    any outgoing connection (warren's own, to the broker or PostgreSQL) may take it as its source
    port before the process under test binds it. Also what a test uses as a "closed port": a
    connection to it is refused at once."""
    for port in random.sample(range(20000, 32768), 500):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port on 127.0.0.1 in 20000-32767")


def unique_name(prefix: str) -> str:
    """A queue/exchange/file name no other test or run uses: PREFIX-<10 hex digits>."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class WaitTimeout(AssertionError):
    """A condition did not come true in time; the message says which and the last value seen."""


def wait_until(predicate: Callable[[], T], timeout: float, interval: float = 0.05,
               what: Union[str, Callable[[], str]] = "condition",
               ignore: tuple = ()) -> T:
    """Calls predicate every `interval` seconds until it returns something truthy, and returns that.

    After `timeout` seconds raises WaitTimeout naming `what` (a string, or a callable giving one
    at failure time, e.g. to describe the current state) and the last value returned. Exceptions
    whose types are in `ignore` count as "not yet" (e.g. connection refused while a server starts).
    """
    deadline = time.monotonic() + timeout
    last_value, last_error = None, None
    while True:
        try:
            last_value = predicate()
            if last_value:
                return last_value
        except ignore as error:
            last_error = error
        if time.monotonic() >= deadline:
            description = what() if callable(what) else what
            detail = f"; last value: {last_value!r}"
            if last_error is not None:
                detail += f"; last error: {last_error!r}"
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {description}{detail}")
        time.sleep(interval)
