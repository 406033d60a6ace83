"""The command line of the PostgreSQL table queue, on the real `warren` binary and the test
PostgreSQL (scripts/services/postgres.sh): `warren topology apply` creates the schema and stores
the config's routing, an application's transaction enqueues with warren_publish() and a plain
INSERT, `warren queue status` shows the rows and the transaction holding back vacuum, `warren dlq
list|replay` work on dead rows (made dead by SQL, as the transport leaves them), `warren queue
backup` points to pg_dump, and no error ever prints the dsn's password. No host runs: every number
holds still between the verbs. Each test has a schema of its own, dropped afterwards.
"""

import os
import re
import subprocess
import textwrap
import uuid
from pathlib import Path
from typing import Dict, List

import pytest

from warren_testkit import env, pg_connect, require_services, warren_cli


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def status_rows(result: subprocess.CompletedProcess) -> Dict[str, List[str]]:
    """`queue status`'s table: the cells of each row by queue name."""
    rows = {}
    for line in result.stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 6:
            rows[cells[0]] = cells[1:]
    return rows


def write_config(path: Path, dsn: str, schema: str) -> Path:
    path.write_text(textwrap.dedent(f"""\
        [host]
        name = "pg-cli-test"
        plugin_dir = "{os.environ["WARREN_FIXTURE_PLUGIN_DIR"]}"

        [log]
        level = "error"

        [metrics]
        enabled = false

        [broker]
        transport = "postgres"

        [broker.postgres]
        dsn = "{dsn}"
        schema = "{schema}"

        [[exchanges]]
        name = "orders"
        type = "topic"

        [[queues]]
        name = "work"
        bindings = [{{ exchange = "orders", routing_key = "order.#" }}]

        [[queues]]
        name = "audit"
        bindings = [{{ exchange = "orders", routing_key = "#" }}]

        [[workers]]
        name = "w"
        plugin = "scripted"
        queue = "work"
        """))
    return path


@pytest.fixture
def schema():
    require_services("postgres", "warren")
    name = "cli_" + uuid.uuid4().hex[:12]
    yield name
    with pg_connect() as admin:
        admin.cursor().execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def test_apply_enqueue_status_and_dead_rows(tmp_path: Path, schema: str):
    config = write_config(tmp_path / "warren.toml", env("WARREN_TEST_PG_DSN"), schema)
    db = pg_connect()
    cursor = db.cursor()

    def cli(*args: str) -> subprocess.CompletedProcess:
        return warren_cli(*args, "-c", str(config))

    # --dry-run says what it would do and touches nothing.
    dry = cli("topology", "apply", "--dry-run")
    assert dry.returncode == 0, output(dry)
    assert f"would create, where missing, the PostgreSQL queue in schema '{schema}'" in dry.stdout
    assert "2 queue(s), 1 exchange(s), 2 binding(s)" in dry.stdout
    cursor.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,))
    assert cursor.fetchone()[0] == 0

    applied = cli("topology", "apply")
    assert applied.returncode == 0, output(applied)
    assert f"schema '{schema}'" in applied.stdout and " created (schema version 1)" in applied.stdout
    again = cli("topology", "apply")
    assert again.returncode == 0, output(again)
    assert "already there (schema version 1)" in again.stdout
    cursor.execute(f"SELECT exchange, queue, binding_key FROM {schema}.warren_bindings ORDER BY id")
    assert cursor.fetchall() == [("orders", "work", "order.#"), ("orders", "audit", "#")]

    # An application's transaction: fan-out by the stored bindings, a plain INSERT into a queue
    # the config does not have, and dead rows as the transport leaves them.
    application = pg_connect(autocommit=False)
    with application.cursor() as tx:
        tx.execute(f"SELECT {schema}.warren_publish('orders', 'order.created', "
                   "convert_to('{\"order\": 1}', 'UTF8'), message_id => 'order-1')")
        assert tx.fetchone()[0] == 2
        tx.execute(f"INSERT INTO {schema}.warren_queue (queue, message_id) VALUES ('stray', 's') "
                   "ON CONFLICT (queue, message_id) DO NOTHING")
        for message_id, error in (("d1", "bad order"), ("d2", "bad order"), ("d3", "timeout")):
            tx.execute(f"INSERT INTO {schema}.warren_queue (queue, message_id, exchange, "
                       "routing_key, headers, status, attempts, last_error, finished_at) VALUES "
                       "('work', %s, 'orders', 'order.created', "
                       "'{\"x-warren-error\": \"x\", \"x-batch\": \"a\"}', 'dead', 3, %s, now())",
                       (message_id, error))
    application.commit()

    # A transaction left open: what the status's last line is for.
    forgotten = pg_connect(autocommit=False)
    with forgotten.cursor() as tx:
        tx.execute("SET application_name = 'forgotten'; SELECT pg_backend_pid(), txid_current()")
        forgotten_pid = tx.fetchone()[0]
    status = cli("queue", "status")
    forgotten.rollback()
    assert status.returncode == 0, output(status)
    rows = status_rows(status)
    assert rows["work"][:4] == ["1", "0", "0", "3"], output(status)
    assert rows["audit"][:4] == ["1", "0", "0", "0"], output(status)
    assert rows["stray *"][:4] == ["1", "0", "0", "0"], output(status)
    # Ours, unless a test running beside this one holds an older transaction in the database.
    holder = re.search(r"oldest transaction holding back vacuum \(xmin\): [0-9.]+s, pid (\d+)(.*)",
                       status.stdout)
    assert holder, output(status)
    if int(holder.group(1)) == forgotten_pid:
        assert holder.group(2) == " (forgotten), idle in transaction", output(status)

    listed = cli("dlq", "list", "--worker", "w")
    assert listed.returncode == 0, output(listed)
    assert "work: 3 dead letter(s) of worker 'w' (3 dead row(s) in the queue)" in listed.stdout
    assert re.search(r"^\s+2\s+bad order$", listed.stdout, re.M), output(listed)
    assert re.search(r"^\s+1\s+timeout$", listed.stdout, re.M), output(listed)

    replayed = cli("dlq", "replay", "--worker", "w")
    assert replayed.returncode == 0, output(replayed)
    assert "3 message(s) replayed from work" in replayed.stdout
    cursor.execute(f"SELECT status, count(*) FROM {schema}.warren_queue WHERE queue = 'work' "
                   "GROUP BY status")
    assert dict(cursor.fetchall()) == {"pending": 4}
    cursor.execute(f"SELECT headers->>'x-warren-replay-count', headers ? 'x-warren-error' "
                   f"FROM {schema}.warren_queue WHERE message_id = 'd1'")
    assert cursor.fetchone() == ("1", False)

    backup = cli("queue", "backup", "--to", str(tmp_path / "copy.db"))
    assert backup.returncode == 2, output(backup)
    assert "pg_dump" in backup.stderr
    application.close()
    forgotten.close()
    db.close()


def test_errors_name_the_server_never_the_password(tmp_path: Path, schema: str):
    # The tools never create a queue: a schema without one is refused, saying what to do.
    config = write_config(tmp_path / "warren.toml", env("WARREN_TEST_PG_DSN"), schema)
    for verb in (("queue", "status"), ("dlq", "list", "--worker", "w")):
        result = warren_cli(*verb, "-c", str(config))
        assert result.returncode == 1, output(result)
        assert "does not exist yet: create it with `warren topology apply`" in result.stderr

    # A server that does not answer, with a password in the dsn.
    closed = f"postgresql://warren:s3cret-pw@127.0.0.1:1/warren_test"
    config = write_config(tmp_path / "closed.toml", closed, schema)
    for verb in (("topology", "apply"), ("queue", "status"), ("dlq", "list", "--worker", "w")):
        result = warren_cli(*verb, "-c", str(config))
        assert result.returncode == 1, output(result)
        assert "cannot connect to PostgreSQL (host=127.0.0.1 port=1" in result.stderr, output(result)
        assert "s3cret-pw" not in result.stdout + result.stderr
