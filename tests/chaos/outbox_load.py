"""The load of the outbox scenario: numbered rows inserted into warren_outbox at a steady rate,
for the hosts' outbox relays to publish (instead of load.py's publisher).

It offers what the scenario driver asks of load.py's ConfirmedPublisher: `sent` (id -> when the
row was committed) and `confirmed` (the ids of the rows the relays marked `sent`, which they do
only after the broker's confirm), filled by settle() once no row is pending any more.
"""

import threading
import time
from typing import Dict, List, Set

import psycopg2


class OutboxInserter(threading.Thread):
    """Commits COUNT rows, one transaction each, at RATE a second, into the warren_outbox table
    that DSN's search_path finds; routing key ROUTING_KEY, the relay's default exchange."""

    def __init__(self, dsn: str, routing_key: str, count: int, rate: float, prefix: str):
        super().__init__(name="chaos-outbox-inserter", daemon=True)
        self.dsn, self.routing_key = dsn, routing_key
        self.count, self.rate, self.prefix = count, rate, prefix
        self.sent: Dict[str, float] = {}
        self.confirmed: Dict[str, float] = {}
        self.republished = 0  # rows are never inserted twice
        self.republished_ids: Set[str] = set()
        self.errors: List[str] = []
        self.error_count = 0
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def wait_done(self, timeout: float) -> bool:
        self.join(timeout)
        return not self.is_alive()

    def run(self) -> None:
        connection = psycopg2.connect(self.dsn)
        try:
            started = time.monotonic()
            for index in range(self.count):
                delay = started + index / self.rate - time.monotonic()
                if delay > 0 and self._stopping.wait(delay):
                    break
                message_id = f"{self.prefix}-{index:07d}"
                with connection, connection.cursor() as cursor:
                    cursor.execute("INSERT INTO warren_outbox (routing_key, message_id, payload) "
                                   "VALUES (%s, %s, %s)",
                                   (self.routing_key, message_id, message_id.encode()))
                self.sent[message_id] = time.time()
        finally:
            connection.close()

    def rows_by_status(self) -> Dict[str, int]:
        with psycopg2.connect(self.dsn) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT status, count(*) FROM warren_outbox GROUP BY status")
            return dict(cursor.fetchall())

    def unsent(self) -> Dict[str, int]:
        """Rows not marked sent, by status (after settle(): what the relays left behind)."""
        return {status: n for status, n in self.rows_by_status().items() if status != "sent"}

    def settle(self, timeout: float) -> None:
        """Waits until no row is pending, then takes the rows marked sent as confirmed."""
        deadline = time.monotonic() + timeout
        while self.rows_by_status().get("pending", 0) and time.monotonic() < deadline:
            time.sleep(0.5)
        with psycopg2.connect(self.dsn) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT message_id, extract(epoch FROM published_at) FROM warren_outbox "
                           "WHERE status = 'sent'")
            self.confirmed = {message_id: float(at or 0) for message_id, at in cursor.fetchall()}
