"""The `created` fixture: queues and exchanges a test made on the shared broker, deleted after it.

Tests share one broker, so each uses names of its own (unique_name) and deletes them afterwards.
Import the fixture into the test module (`from testkit_cleanup import created`, with
`# noqa: F401,F811`: linters take a fixture argument for a redefinition) and list it BEFORE
`warren` in the test's arguments: pytest tears fixtures down in reverse order, so
warren is stopped before its queues disappear under it.
"""

from dataclasses import dataclass, field
from typing import Iterator, List

import pika.exceptions
import pytest

from testkit_broker import Broker
from testkit_env import unique_name


@dataclass
class Created:
    """Names to delete after the test; `queue()`/`exchange()` make and register unique names."""

    queues: List[str] = field(default_factory=list)
    exchanges: List[str] = field(default_factory=list)

    def queue(self, prefix: str) -> str:
        name = unique_name(prefix)
        self.queues.append(name)
        return name

    def exchange(self, prefix: str) -> str:
        name = unique_name(prefix)
        self.exchanges.append(name)
        return name


@pytest.fixture
def created(broker: Broker) -> Iterator[Created]:
    names = Created()
    yield names
    for kind, delete, items in (("queue", broker.delete_queue, names.queues),
                                ("exchange", broker.delete_exchange, names.exchanges)):
        for name in items:
            try:
                delete(name)
            except (pika.exceptions.AMQPError, OSError) as error:
                # e.g. a broker the test left stopped: say so, do not mask the test.
                print(f"cleanup: could not delete {kind} {name}: {error!r}")
