"""The example plugins (plugins/order_email, plugins/sales_ranking) on a real broker: a body that is
not JSON can never succeed, so it is dead-lettered on its first attempt (warren::PermanentError)
with the parse error in x-warren-error, while a valid order next to it is handled as usual.

The topology is the seed bookstore's (conf/warren.toml) under this test's own names: one topic
exchange, one queue and worker per plugin, one fanout dead-letter exchange and queue.
"""

import json
import textwrap
import uuid

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_traffic import wait_drained
from warren_testkit import env, free_port, wait_until


def text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def bookstore_config(events: str, emails: str, ranking: str, dead_letters: str,
                     dead_letter_queue: str) -> str:
    # Immediate and delayed retries are allowed: a dead letter at attempt 1 shows they were skipped.
    return textwrap.dedent(f"""\
        [host]
        name = "example-plugins-test"
        shutdown_timeout = "10s"

        [log]
        level = "warn"

        [metrics]
        listen = "127.0.0.1:{free_port()}"

        [broker]
        uri = "{env("WARREN_TEST_AMQP_URI")}"

        [[exchanges]]
        name = "{events}"
        type = "topic"

        [[exchanges]]
        name = "{dead_letters}"
        type = "fanout"

        [[queues]]
        name = "{emails}"
        type = "quorum"
        dead_letter_exchange = "{dead_letters}"
        bindings = [{{ exchange = "{events}", routing_key = "pedido.registrado" }}]

        [[queues]]
        name = "{ranking}"
        type = "quorum"
        dead_letter_exchange = "{dead_letters}"
        bindings = [{{ exchange = "{events}", routing_key = "pedido.*" }}]

        [[queues]]
        name = "{dead_letter_queue}"
        type = "quorum"
        allow_message_loss = true
        bindings = [{{ exchange = "{dead_letters}" }}]

        [[workers]]
        name = "emails"
        plugin = "order_email"
        queue = "{emails}"
        concurrency = 2
        retry = {{ max_attempts = 5, initial = "1s", immediate = 1 }}
        [workers.settings]
        out_dir = "${{WARREN_STATE_DIR:-/var/lib/warren}}/emails"

        [[workers]]
        name = "ranking"
        plugin = "sales_ranking"
        queue = "{ranking}"
        retry = {{ max_attempts = 5, initial = "1s", immediate = 1 }}
        [workers.settings]
        state_file = "${{WARREN_STATE_DIR:-/var/lib/warren}}/ranking.json"
        """)


def valid_order(event_id: str) -> str:
    return json.dumps({"event_id": event_id, "order_id": 42, "customer_id": "c-17", "total": 79.8,
                       "items": [{"product_id": 7, "quantity": 2, "unit_price": 39.9}],
                       "occurred_at": "2025-03-01T12:00:00Z"})


def test_ExamplePlugins_MalformedJson_IsDeadLetteredOnItsFirstAttemptWithTheParseError(
        broker, created, warren, tmp_path):
    events, dead_letters = created.exchange("livraria-eventos"), created.exchange("livraria-mortas")
    emails, ranking = created.queue("livraria-emails"), created.queue("livraria-ranking")
    dead_letter_queue = created.queue("livraria-mortas-q")
    (tmp_path / "emails").mkdir()
    host = warren(bookstore_config(events, emails, ranking, dead_letters, dead_letter_queue),
                  env_overrides={"WARREN_STATE_DIR": str(tmp_path)})
    host.wait_ready(timeout=60)

    malformed = broker.publish(events, "pedido.registrado", '{"event_id": "3f0c8a4e-',
                               content_type="application/json")
    good_event = str(uuid.uuid4())
    broker.publish(events, "pedido.registrado", valid_order(good_event), message_id=good_event,
                   content_type="application/json")

    # One dead letter per worker (both queues receive pedido.registrado); the valid order is mailed.
    wait_until(lambda: broker.message_count(dead_letter_queue) >= 2, timeout=30,
               what="the malformed message dead-lettered by both workers")
    wait_until(lambda: (tmp_path / "emails" / f"{good_event}.eml").exists(), timeout=30,
               what="the confirmation e-mail of the valid order")
    assert host.terminate() == 0, host.describe()

    dead = broker.drain(dead_letter_queue, expect=2)
    assert sorted(text(m.headers["x-warren-worker"]) for m in dead) == ["emails", "ranking"]
    for message in dead:
        headers = message.headers
        assert message.message_id == malformed
        assert message.body == b'{"event_id": "3f0c8a4e-'
        assert text(headers["x-warren-attempt"]) == "1", headers
        error = text(headers["x-warren-error"])
        assert error.startswith("warren::PermanentError: "), error
        assert "body is not valid JSON" in error and "parse_error" in error, error
        # Never sent to the delay levels: it first (and last) failed when it was dead-lettered.
        assert headers["x-warren-first-failed-at"] == headers["x-warren-dead-lettered-at"], headers
        assert text(headers["x-warren-original-exchange"]) == events
        assert text(headers["x-warren-original-routing-key"]) == "pedido.registrado"
    # Nothing left behind: nothing ready, nothing unacked.
    for queue in (emails, ranking):
        wait_drained(broker, queue)
