"""The command line of the SQLite table queue, on the real `warren` binary and a real database file,
as an operator uses it after a bug: `warren dlq list|peek|replay|purge` on the dead rows of a
worker's queue, `warren queue status` and `warren queue backup`. No broker: only the binary, the
`scripted` test plugin and SQLite.

The worker `w` (scripted, max_attempts 2, both in-process) sees three kinds of messages, by their
x-test-action header: `ack`; `dead_letter:malformed order` (dead at once, batch b); and
`ack_if_file:FIX` (fails while the file FIX is missing, so dead after two attempts, batch a).
Creating FIX "fixes the bug"; a replay of batch a then gets each of them handled once more.

Every wait polls the database (or the record file) for the state it expects; the host is stopped
with SIGTERM and must exit 0.
"""

import json
import os
import re
import sqlite3
import subprocess
import textwrap
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from warren_testkit import WarrenProcess, env, require_services, wait_until, warren_cli

MAX_ATTEMPTS = 2
DEAD_AT_ONCE = "malformed order"


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def status_rows(result: subprocess.CompletedProcess) -> Dict[str, List[str]]:
    """`queue status`'s table: the cells of each row by queue name (the header row under
    "queue")."""
    rows = {}
    for line in result.stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 6:
            rows[cells[0]] = cells[1:]
    return rows


class Scene:
    """A queue database in tmp_path with the config above; the host runs only inside `hosted()`
    calls, so that between them the numbers hold still."""

    def __init__(self, tmp_path: Path, hosts: List[WarrenProcess]):
        require_services("warren")
        self.tmp_path = tmp_path
        self.hosts = hosts  # warren_processes: stopped and checked after the test
        self.database = tmp_path / "queue.db"
        self.record_file = tmp_path / "record"
        self.fix_file = tmp_path / "bug-fixed"
        self.config = tmp_path / "warren.toml"
        self.config.write_text(textwrap.dedent(f"""\
            [host]
            name = "sqlite-cli-test"
            plugin_dir = "{os.environ["WARREN_FIXTURE_PLUGIN_DIR"]}"
            shutdown_timeout = "10s"

            [log]
            level = "error"

            [metrics]
            enabled = false

            [broker]
            transport = "sqlite"

            [broker.sqlite]
            path = "{self.database}"
            poll_interval = "50ms"

            [[exchanges]]
            name = "orders"
            type = "topic"

            [[queues]]
            name = "work"
            bindings = [{{ exchange = "orders", routing_key = "order.#" }}]

            [[workers]]
            name = "w"
            plugin = "scripted"
            queue = "work"
            concurrency = 1
            retry = {{ max_attempts = {MAX_ATTEMPTS}, immediate = 1 }}
            [workers.settings]
            record_file = "{self.record_file}"
            """))
        applied = warren_cli("topology", "apply", "-c", str(self.config))
        assert applied.returncode == 0, output(applied)

    def cli(self, verb: str, subverb: str, *args: str) -> subprocess.CompletedProcess:
        """`warren VERB SUBVERB -c CONFIG ARGS...`"""
        return warren_cli(verb, subverb, "-c", str(self.config), *args)

    def dlq(self, verb: str, *args: str) -> subprocess.CompletedProcess:
        return self.cli("dlq", verb, "--worker", "w", *args)

    def publish(self, message_id: str, action: str, batch: str) -> None:
        result = warren_cli("publish", "-c", str(self.config), "--exchange", "orders",
                            "--routing-key", "order.created", "--message-id", message_id,
                            "--body", f'{{"order": "{message_id}"}}',
                            "--content-type", "application/json",
                            "--header", f"x-test-action={action}", "--header",
                            f"x-batch={batch}")
        assert result.returncode == 0, output(result)

    # -- the database, read as another program would --------------------------------------------
    def query(self, sql: str, *parameters) -> list:
        with sqlite3.connect(self.database, timeout=10) as connection:
            return connection.execute(sql, parameters).fetchall()

    def counts(self) -> Dict[str, int]:
        return dict(self.query("SELECT status, count(*) FROM warren_queue GROUP BY status"))

    def records(self) -> List[List[str]]:
        """What the handler saw: [worker, message id, attempt, redelivered, action] per call."""
        if not self.record_file.exists():
            return []
        return [line.split("\t") for line in self.record_file.read_text().splitlines()]

    # -- the host -------------------------------------------------------------------------------
    def hosted(self, until: Dict[str, int]) -> None:
        """Runs `warren run` until the rows by status are exactly `until`, then stops it with
        SIGTERM (exit 0 expected; its output is checked for sanitizer reports after the test)."""
        host = WarrenProcess(self.config.read_text(), name="sqlite-cli-host",
                             plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"))
        self.hosts.append(host)
        host.start()
        wait_until(lambda: self.counts() == until, timeout=60,
                   what=lambda: f"rows by status {until} (have {self.counts()}; "
                                f"{host.describe()})")
        assert host.terminate() == 0, host.describe()


@pytest.fixture
def scene(tmp_path, warren_processes) -> Scene:
    return Scene(tmp_path, warren_processes)


def test_SqliteDlq_ListPeekReplayPurge_OnTheDeadRows_QueueStatusExactThroughout(scene):
    batch_a = [f"a{i}" for i in range(3)]
    batch_b = [f"b{i}" for i in range(2)]
    for message_id in batch_a:
        scene.publish(message_id, f"ack_if_file:{scene.fix_file}", "a")
    for message_id in batch_b:
        scene.publish(message_id, f"dead_letter:{DEAD_AT_ONCE}", "b")
    for i in range(4):
        scene.publish(f"ok{i}", "ack", "ok")
    status = scene.cli("queue", "status")
    assert status.returncode == 0, output(status)
    assert re.fullmatch(r"\d+\.\ds", status_rows(status)["work"][4]), output(status)
    assert status_rows(status)["work"][:4] == ["9", "0", "0", "0"], output(status)

    scene.hosted(until={"done": 4, "dead": 5})
    calls = Counter(record[1] for record in scene.records())
    assert calls == Counter({**{i: MAX_ATTEMPTS for i in batch_a}, **{i: 1 for i in batch_b},
                             **{f"ok{i}": 1 for i in range(4)}}), calls

    status = scene.cli("queue", "status")
    assert status.returncode == 0, output(status)
    assert status.stdout.startswith(f"queue database {scene.database} (schema version 1)\n")
    assert status_rows(status) == {
        "queue": ["pending", "running", "done", "dead", "oldest ready"],
        "work": ["0", "0", "4", "5", "-"]}, output(status)

    # list: the reasons, from the rows' last_error, and where the messages were published.
    listing = scene.dlq("list")
    assert listing.returncode == 0, output(listing)
    error_a = (f"gave up after {MAX_ATTEMPTS} attempts: std::runtime_error: scripted: "
               f"'{scene.fix_file}' does not exist yet")
    assert listing.stdout == (
        "work: 5 dead letter(s) of worker 'w' (5 dead row(s) in the queue)\n"
        "\nby error:\n"
        f"  3  {error_a}\n"
        f"  2  {DEAD_AT_ONCE}\n"
        "\nby original exchange / routing key:\n"
        "  5  orders / order.created\n"), output(listing)
    only_b = scene.dlq("list", "--where", "x-batch=b")
    assert only_b.stdout.startswith("work: 2 dead letter(s) of worker 'w'"), output(only_b)

    # peek: the oldest dead row, its headers and body, and nothing changes.
    peek = scene.dlq("peek", "--limit", "1")
    assert peek.returncode == 0, output(peek)
    lines = peek.stdout.splitlines()
    assert [line for line in lines if line.startswith("message ")] == ["message a0"], output(peek)
    for expected in ("  original: orders / order.created", f"  error: {error_a}",
                     "  x-batch: a", f"  x-warren-attempt: {MAX_ATTEMPTS}", "  x-warren-worker: w",
                     "  content-type: application/json", '  body: {"order": "a0"}'):
        assert expected in lines, output(peek)
    assert lines[-1] == "1 shown (messages stay in work)", output(peek)
    assert scene.counts() == {"done": 4, "dead": 5}

    # replay --dry-run moves nothing.
    dry_run = scene.dlq("replay", "--where", "x-batch=a", "--dry-run")
    assert dry_run.returncode == 0, output(dry_run)
    assert dry_run.stdout.splitlines()[-1] == \
        "3 message(s) would be replayed (dry run: nothing moved)", output(dry_run)
    assert scene.counts() == {"done": 4, "dead": 5}

    # After the fix, replay batch a: pending again in the worker's queue, attempts 0, the
    # failure headers gone and the replay counted.
    scene.fix_file.write_text("fixed\n")
    replay = scene.dlq("replay", "--where", "x-batch=a")
    assert replay.returncode == 0, output(replay)
    assert replay.stdout == "".join(
        f"moved {i} -> orders / order.created (worker queue only)\n" for i in batch_a) + \
        "3 message(s) replayed from work\n", output(replay)
    status = scene.cli("queue", "status")
    assert status_rows(status)["work"][:4] == ["3", "0", "4", "2"], output(status)
    rows = scene.query("SELECT message_id, status, attempts, last_error, headers FROM warren_queue "
                       "WHERE message_id LIKE 'a%' ORDER BY id")
    assert [row[:4] for row in rows] == [(i, "pending", 0, None) for i in batch_a]
    for row in rows:
        headers = json.loads(row[4])
        assert headers["x-warren-replay-count"] == "1" and headers["x-batch"] == "a", headers
        assert not [name for name in headers if name.startswith("x-warren-") and
                    name != "x-warren-replay-count"], headers

    # The worker handles each replayed row once, as a first attempt.
    handled_before = len(scene.records())
    scene.hosted(until={"done": 7, "dead": 2})
    replayed = scene.records()[handled_before:]
    assert sorted((r[1], r[2]) for r in replayed) == [(i, "1") for i in batch_a], replayed

    # purge: refused without --yes, then deletes exactly the dead rows.
    refused = scene.dlq("purge")
    assert refused.returncode == 2 and "--yes" in refused.stderr, output(refused)
    assert scene.counts() == {"done": 7, "dead": 2}
    purged = scene.dlq("purge", "--yes")
    assert purged.returncode == 0, output(purged)
    assert purged.stdout == "2 message(s) deleted from work\n", output(purged)
    assert scene.counts() == {"done": 7}

    # A row another program put in a queue the config does not name shows, marked.
    scene.query("INSERT INTO warren_queue (queue, message_id, body) VALUES ('wrok', 'typo', 'x')")
    status = scene.cli("queue", "status")
    assert status.returncode == 0, output(status)
    assert status_rows(status)["work"] == ["0", "0", "7", "0", "-"], output(status)
    assert status_rows(status)["wrok *"][:4] == ["1", "0", "0", "0"], output(status)
    assert f"* not a [[queues]] entry of {scene.config}" in status.stdout, output(status)


def test_SqliteQueueBackup_CopyReadBySqlite3_ExistingPathRefusedAndLeftAlone(scene):
    for i in range(3):
        scene.publish(f"m{i}", "ack", "x")
    target = scene.tmp_path / "backups" / "queue-copy.db"
    target.parent.mkdir()

    backup = scene.cli("queue", "backup", "--to", str(target))
    assert backup.returncode == 0, output(backup)
    size = target.stat().st_size
    assert backup.stdout.startswith(
        f"backup of {scene.database} written to {target}: {size} bytes ("), output(backup)
    assert backup.stdout.endswith(", 3 row(s) in warren_queue\n"), output(backup)
    count = subprocess.run(["sqlite3", str(target), "select count(*) from warren_queue"],
                           capture_output=True, text=True, check=True)
    assert count.stdout == "3\n"

    scene.publish("m3", "ack", "x")
    again = scene.cli("queue", "backup", "--to", str(target))
    assert again.returncode == 2, output(again)
    assert "already exists" in again.stderr, output(again)
    assert target.stat().st_size == size
    count = subprocess.run(["sqlite3", str(target), "select count(*) from warren_queue"],
                           capture_output=True, text=True, check=True)
    assert count.stdout == "3\n", "the existing backup was overwritten"


def test_QueueAndDlqVerbs_MissingDatabase_Exit1SayingHowToCreateIt(scene):
    scene.database.unlink()
    for args in (("queue", "status"), ("dlq", "list", "--worker", "w")):
        result = scene.cli(*args)
        assert result.returncode == 1, output(result)
        assert f"the queue database '{scene.database}' does not exist" in result.stderr, \
            output(result)
        assert "warren topology apply" in result.stderr, output(result)
    assert not scene.database.exists(), "a look at the queue created the database"


@pytest.mark.parametrize("verb", ["status", "backup"])
def test_QueueVerbs_OnRabbitMqConfig_Exit2NamingTheTableQueueTransports(tmp_path, verb):
    require_services("warren")
    config = tmp_path / "warren.toml"
    config.write_text('[broker]\nuri = "amqp://127.0.0.1:1/"\n')
    target = tmp_path / "never-written.db"
    result = warren_cli("queue", verb, "-c", str(config),
                        *(["--to", str(target)] if verb == "backup" else []))
    assert result.returncode == 2, output(result)
    assert "for the table-queue transports" in result.stderr, output(result)
    assert not target.exists()


@pytest.mark.parametrize("verb", ["status", "backup"])
def test_QueueVerb_Help_ExitsZeroDescribingItsOptions(verb):
    require_services("warren")
    result = warren_cli("queue", verb, "--help")
    assert result.returncode == 0, output(result)
    for option in ["--config"] + (["--to"] if verb == "backup" else []):
        assert option in result.stdout, output(result)
