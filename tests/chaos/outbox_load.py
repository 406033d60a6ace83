"""The load of the outbox scenario: numbered rows inserted into warren_outbox at a steady rate,
for the hosts' outbox relays to publish (instead of load.py's publisher).

`sent` holds when each row was committed; `confirmed` the ids of the rows the relays marked `sent`
(they do only after the broker's confirm), filled by settle() once no row is pending any more.
"""

import time
from typing import Dict

import psycopg2

from load import PacedLoad


class OutboxInserter(PacedLoad):
    """Commits one row per transaction into the warren_outbox table that DSN's search_path finds;
    routing key ROUTING_KEY, the relay's default exchange."""

    def __init__(self, dsn: str, routing_key: str, count: int, rate: float, prefix: str):
        super().__init__(count, rate, prefix)
        self.dsn, self.routing_key = dsn, routing_key
        self._connection = None

    def send(self, message_id: str) -> bool:
        if self._connection is None:
            self._connection = psycopg2.connect(self.dsn)
        with self._connection, self._connection.cursor() as cursor:
            cursor.execute("INSERT INTO warren_outbox (routing_key, message_id, payload) "
                           "VALUES (%s, %s, %s)",
                           (self.routing_key, message_id, message_id.encode()))
        self.sent[message_id] = time.time()
        return True

    def finish(self) -> None:
        if self._connection is not None:
            self._connection.close()

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
