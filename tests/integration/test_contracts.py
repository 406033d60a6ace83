"""The `pedido.registrado` contract across a deploy (docs/contracts.md), on the real `warren`
binary, the example plugin order_email and a SQLite queue (no broker): events published while no
consumer runs (the deploy window) meet the new consumer when it starts.

- an event of the first release (no `sales_channel`, no `version`) is handled, with the default
  channel "unknown";
- an event of the current release is handled with its channel;
- an event of a newer major version (`"version": 2`) is dead-lettered on its first attempt with a
  reason that says so, and `warren dlq list` shows it; nothing is retried, nothing else is lost.
"""

import json
import subprocess
import textwrap
from pathlib import Path

from warren_testkit import WarrenProcess, env, require_services, wait_until, warren_cli

FIRST_RELEASE = "00000000-0000-4000-8000-000000000001"
CURRENT = "00000000-0000-4000-8000-000000000002"
NEXT_MAJOR = "00000000-0000-4000-8000-000000000003"


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def order(event_id: str, **added) -> str:
    """A `pedido.registrado` body as the first release published it, plus `added` fields."""
    return json.dumps({"event_id": event_id, "order_id": 42, "customer_id": "c-17", "total": 79.8,
                       "items": [{"product_id": 7, "quantity": 2, "unit_price": 39.9}],
                       "occurred_at": "2025-03-01T12:00:00Z", **added})


def bookstore(tmp_path: Path) -> Path:
    config = tmp_path / "warren.toml"
    config.write_text(textwrap.dedent(f"""\
        [host]
        name = "contracts-test"
        shutdown_timeout = "10s"

        [log]
        level = "warn"

        [metrics]
        enabled = false

        [broker]
        transport = "sqlite"

        [broker.sqlite]
        path = "{tmp_path / "queue.db"}"
        poll_interval = "50ms"

        [[exchanges]]
        name = "livraria.eventos"
        type = "topic"

        [[queues]]
        name = "livraria.emails"
        bindings = [{{ exchange = "livraria.eventos", routing_key = "pedido.registrado" }}]

        [[workers]]
        name = "emails"
        plugin = "order_email"
        queue = "livraria.emails"
        retry = {{ max_attempts = 3, immediate = 2 }}
        [workers.settings]
        out_dir = "{tmp_path / "emails"}"
        """))
    return config


def test_EventsQueuedBeforeTheDeploy_OldFormatHandledWithDefaults_NewerMajorDeadLetteredWithReason(
        tmp_path, warren_processes):
    require_services("warren")
    config = bookstore(tmp_path)
    (tmp_path / "emails").mkdir()
    applied = warren_cli("topology", "apply", "-c", str(config))
    assert applied.returncode == 0, output(applied)

    # The deploy window: no consumer runs while the producers go on publishing.
    for event_id, body in ((FIRST_RELEASE, order(FIRST_RELEASE)),
                           (CURRENT, order(CURRENT, sales_channel="app", version=1)),
                           (NEXT_MAJOR, order(NEXT_MAJOR, sales_channel="app", version=2))):
        published = warren_cli("publish", "-c", str(config), "--exchange", "livraria.eventos",
                               "--routing-key", "pedido.registrado", "--message-id", event_id,
                               "--content-type", "application/json", "--body", body)
        assert published.returncode == 0, output(published)

    host = WarrenProcess(config.read_text(), name="contracts-host",
                         plugin_dir=env("WARREN_PLUGIN_DIR"))
    warren_processes.append(host)
    host.start()

    def counts():
        status = warren_cli("queue", "status", "-c", str(config))
        assert status.returncode == 0, output(status)
        row = next(line.split() for line in status.stdout.splitlines()
                   if line.startswith("livraria.emails"))
        return dict(zip(("pending", "running", "done", "dead"), map(int, row[1:5])))

    wait_until(lambda: counts() == {"pending": 0, "running": 0, "done": 2, "dead": 1}, timeout=60,
               what=lambda: f"2 done and 1 dead (have {counts()}; {host.describe()})")
    assert host.terminate() == 0, host.describe()

    emails = sorted(path.name for path in (tmp_path / "emails").iterdir())
    assert emails == [f"{FIRST_RELEASE}.eml", f"{CURRENT}.eml"], emails
    assert "X-Livraria-Sales-Channel: unknown\n" in \
        (tmp_path / "emails" / f"{FIRST_RELEASE}.eml").read_text()
    assert "X-Livraria-Sales-Channel: app\n" in (tmp_path / "emails" / f"{CURRENT}.eml").read_text()

    reason = ("warren::PermanentError: pedido.registrado: version 2 of the contract is newer than "
              "this consumer reads (version 1); deploy a consumer that reads it, then replay this "
              "dead letter")
    listing = warren_cli("dlq", "list", "-c", str(config), "--worker", "emails")
    assert listing.returncode == 0, output(listing)
    assert f"  1  {reason}\n" in listing.stdout, output(listing)
    peek = warren_cli("dlq", "peek", "-c", str(config), "--worker", "emails")
    assert f"message {NEXT_MAJOR}" in peek.stdout, output(peek)
    # Dead on its first attempt: a newer contract is not retried.
    assert "  x-warren-attempt: 1" in peek.stdout.splitlines(), output(peek)
