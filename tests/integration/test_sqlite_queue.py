"""The SQLite table queue with the real `warren` binary on real SQLite files (issue 12): volume,
kill -9 and restart, two hosts on one file, an application's own INSERT in its own transaction,
retries after their delay, dead rows, a corrupt or read-only file, and a full disk.

Each test counts what matters: every message id done, how many times each handler call happened,
and duplicates only where a crash allows them (rows that were running when a host died). The
test plugin `scripted` records every handler call (worker, message id, attempt, redelivered,
action) with one write(2) per line, so even a kill -9 leaves whole lines.
"""

import json
import os
import sqlite3
import subprocess
import tempfile
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from testkit_env import env, free_port, require_services, wait_until
from testkit_metrics import scrape, total, value
from testkit_records import RecordFile
from testkit_warren import WarrenProcess, warren_cli


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


class SqliteHost(WarrenProcess):
    """One `warren run` on a SQLite queue file, with the scripted plugin on queue `jobs`; made by
    the `sqlite_host` fixture, which stops and checks it after the test (SIGTERM and exit 0, no
    sanitizer report: WarrenProcess.cleanup)."""

    def __init__(self, db: Path, record: Path, *, name="sqlite-itest",
                 concurrency=4, prefetch=32, sleep_ms=0, default_action="ack",
                 retry="{ max_attempts = 5, backoff = \"fixed\", initial = \"200ms\", jitter = 0.0 }",
                 lease="5m", synchronous="full", record_time=False):
        self.metrics_port = free_port()
        settings = {"record_file": str(record), "default_action": default_action,
                    "sleep_ms": sleep_ms, "record_time": record_time}
        super().__init__(f"""
[host]
name = "{name}"
plugin_dir = "{env('WARREN_FIXTURE_PLUGIN_DIR')}"
shutdown_timeout = "10s"

[metrics]
listen = "127.0.0.1:{self.metrics_port}"

[broker]
transport = "sqlite"

[broker.sqlite]
path = "{db}"
synchronous = "{synchronous}"
poll_interval = "50ms"
lease = "{lease}"

[[exchanges]]
name = "work"
type = "topic"

[[queues]]
name = "jobs"
bindings = [{{ exchange = "work", routing_key = "job.#" }}]

[[workers]]
name = "jobs"
plugin = "scripted"
queue = "jobs"
prefetch = {prefetch}
concurrency = {concurrency}
retry = {retry}
[workers.settings]
""" + "".join(f"{key} = {toml_value(value)}\n" for key, value in settings.items()),
                         plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"), name=name)
        os.chmod(self.config_path, 0o644)


def connect(db: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    connection.execute("PRAGMA busy_timeout = 30000")
    return connection


def enqueue(db: Path, count: int, prefix="m", headers=None) -> list:
    """COUNT rows into queue `jobs` in one transaction, as an application would."""
    ids = [f"{prefix}-{i}" for i in range(count)]
    with connect(db) as connection:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(
            "INSERT INTO warren_queue (queue, message_id, body, headers) VALUES ('jobs', ?, ?, ?)",
            [(message_id, b"x" * 256, json.dumps(headers or {})) for message_id in ids])
        connection.execute("COMMIT")
    return ids


def counts(db: Path) -> Counter:
    with connect(db) as connection:
        return Counter(dict(connection.execute(
            "SELECT status, count(*) FROM warren_queue GROUP BY status").fetchall()))


def wait_all_done(db: Path, total: int, host_or_hosts, timeout=120):
    hosts = host_or_hosts if isinstance(host_or_hosts, list) else [host_or_hosts]
    wait_until(lambda: counts(db)["done"] == total, timeout,
               what=lambda: f"{total} rows done: {dict(counts(db))}; "
                            + "; ".join(h.describe() for h in hosts))


@pytest.fixture
def workdir():
    require_services("warren")
    with tempfile.TemporaryDirectory(prefix="warren-sqlite-itest-") as directory:
        yield Path(directory)


@pytest.fixture
def sqlite_host(warren_processes):
    """sqlite_host(db, record, **SqliteHost options) -> a SqliteHost, not started; after the test
    it is stopped and checked like every host of the kit (warren_processes)."""
    def make(db: Path, record: Path, **options) -> SqliteHost:
        host = SqliteHost(db, record, **options)
        warren_processes.append(host)
        return host
    return make


def prepare(host: SqliteHost):
    result = warren_cli("topology", "apply", "-c", str(host.config_path))
    assert result.returncode == 0, result.stderr


def test_TwentyThousandMessages_Concurrency8_EachHandledAndDoneOnce(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path, concurrency=8, prefetch=64)
    prepare(host)
    ids = enqueue(db, 20000)
    host.start()
    wait_all_done(db, 20000, host, timeout=300)
    assert host.terminate() == 0, host.describe()
    calls = record.count_by_id()
    assert len(calls) == 20000 and set(calls) == set(ids)
    assert max(calls.values()) == 1, f"handled twice: {[i for i, n in calls.items() if n > 1][:5]}"
    assert counts(db) == Counter({"done": 20000})


def test_KillNine_ThenRestart_EveryIdDoneAndDuplicatesOnlyAmongTheRunningRows(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path, concurrency=4, prefetch=16, sleep_ms=2)
    prepare(host)
    ids = enqueue(db, 3000)
    host.start()
    wait_until(lambda: counts(db)["done"] >= 500, 120, what=lambda: f"500 done: {host.describe()}")
    host.kill9()
    with connect(db) as connection:
        running = {row[0] for row in connection.execute(
            "SELECT message_id FROM warren_queue WHERE status = 'running'")}
    assert 0 < len(running) <= 16, f"rows running at the kill: {len(running)}"

    restarted = sqlite_host(db, record.path, concurrency=4, prefetch=16)
    restarted.start()
    # The dead process's rows come back at start (its pid is gone), not after the 5 min lease.
    wait_all_done(db, 3000, restarted, timeout=120)
    assert restarted.terminate() == 0, restarted.describe()
    calls = record.count_by_id()
    assert set(calls) == set(ids), "a message was lost"
    duplicated = {message_id for message_id, n in calls.items() if n > 1}
    assert duplicated <= running, f"handled twice but not running at the kill: {duplicated - running}"
    assert all(n <= 2 for n in calls.values())
    with connect(db) as connection:
        crashes = dict(connection.execute(
            "SELECT message_id, crashes FROM warren_queue WHERE crashes > 0").fetchall())
    assert set(crashes) == running and set(crashes.values()) == {1}
    print(f"kill -9 with {len(running)} rows running: {len(duplicated)} handled twice")


def test_TwoHostsOnOneFile_ShareTheWorkAndNoRowIsHandledTwice(workdir, sqlite_host):
    db = workdir / "q.db"
    records = [RecordFile(workdir / "calls-a.tsv"), RecordFile(workdir / "calls-b.tsv")]
    hosts = [sqlite_host(db, records[0].path, name="host-a", sleep_ms=1),
             sqlite_host(db, records[1].path, name="host-b", sleep_ms=1)]
    prepare(hosts[0])
    # Both hosts ready before the rows arrive: with the rows already there, a host that starts a
    # second later on a busy machine can find them all done by the other.
    for host in hosts:
        host.start()
    for host in hosts:
        host.wait_ready(timeout=60)
    ids = enqueue(db, 4000)
    wait_all_done(db, 4000, hosts, timeout=180)
    for host in hosts:
        assert host.terminate() == 0, host.describe()
    a, b = (set(record.ids()) for record in records)
    assert a | b == set(ids)
    assert not a & b, f"{len(a & b)} rows handled by both hosts"
    assert all(n == 1 for record in records for n in record.count_by_id().values())
    assert len(a) > 0 and len(b) > 0, (f"one host did all the work: {len(a)} vs {len(b)}; "
                                       + "; ".join(h.describe() for h in hosts))


def test_ApplicationInsert_CommittedOnlyWithItsTransactionAndDuplicateIdsIgnored(
        workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    host.start()
    with connect(db) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO orders VALUES (1, 10.5)")
        connection.execute("INSERT INTO warren_queue (queue, message_id, body) "
                           "VALUES ('jobs', 'order-1', '{\"id\": 1}')")
        connection.execute("COMMIT")
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO orders VALUES (2, 99.0)")
        connection.execute("INSERT INTO warren_queue (queue, message_id, body) "
                           "VALUES ('jobs', 'order-2', '{\"id\": 2}')")
        connection.execute("ROLLBACK")
        # A producer that retries its insert cannot enqueue twice.
        connection.execute("INSERT INTO warren_queue (queue, message_id, body) "
                           "VALUES ('jobs', 'order-1', 'again')")
        # No message id: one is generated.
        connection.execute("INSERT INTO warren_queue (queue, body) VALUES ('jobs', 'anonymous')")
    wait_all_done(db, 2, host)
    assert host.terminate() == 0, host.describe()
    calls = record.count_by_id()
    assert calls["order-1"] == 1 and "order-2" not in calls and len(calls) == 2
    anonymous = next(message_id for message_id in calls if message_id != "order-1")
    assert len(anonymous) == 32, anonymous  # lower(hex(randomblob(16)))
    with connect(db) as connection:
        assert connection.execute("SELECT count(*) FROM warren_queue").fetchone()[0] == 2


def test_PublishRoutesByTheBindings_AndAnUnroutableMandatoryPublishFails(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    publish = ("publish", "-c", str(host.config_path))
    published = warren_cli(*publish, "--exchange", "work", "--routing-key", "job.email.sent",
                           "--body", "hello", "--message-id", "p-1")
    assert published.returncode == 0, published.stderr
    unroutable = warren_cli(*publish, "--exchange", "work", "--routing-key", "invoice.sent",
                            "--body", "nobody")
    assert unroutable.returncode == 1 and "unroutable" in unroutable.stderr, unroutable.stderr
    missing = warren_cli(*publish, "--exchange", "nope", "--routing-key", "job.x", "--body",
                         "nobody")
    assert missing.returncode == 1 and "no exchange 'nope'" in missing.stderr, missing.stderr
    host.start()
    wait_all_done(db, 1, host)
    assert host.terminate() == 0, host.describe()
    assert record.ids() == ["p-1"]


def test_Retry_ComesBackAfterItsDelayWithTheNextAttempt_ThenTheLastAttemptIsDead(
        workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path, record_time=True,
                      retry='{ max_attempts = 3, backoff = "exponential", initial = "300ms", '
                            'max = "5s", jitter = 0.0 }')
    prepare(host)
    enqueue(db, 1, prefix="flaky", headers={"x-test-action": "fail_until:3"})
    enqueue(db, 1, prefix="doomed", headers={"x-test-action": "throw"})
    host.start()
    wait_until(lambda: counts(db)["done"] == 1 and counts(db)["dead"] == 1, 60,
               what=lambda: f"one done, one dead: {dict(counts(db))}; {host.describe()}")
    assert host.terminate() == 0, host.describe()
    for message_id in ("flaky-0", "doomed-0"):
        calls = [r for r in record.records() if r.message_id == message_id]
        assert [c.attempt for c in calls] == [1, 2, 3], calls
        gaps = [later.time - earlier.time for earlier, later in zip(calls, calls[1:])]
        assert gaps[0] >= 0.3 and gaps[1] >= 0.6, f"{message_id}: retries came back early: {gaps}"
    with connect(db) as connection:
        status, attempts, last_error, headers = connection.execute(
            "SELECT status, attempts, last_error, headers FROM warren_queue "
            "WHERE message_id = 'doomed-0'").fetchone()
    headers = json.loads(headers)
    assert (status, attempts) == ("dead", 3)
    assert last_error == "gave up after 3 attempts: std::runtime_error: scripted failure"
    assert headers["x-warren-error"] == last_error and headers["x-warren-attempt"] == "3"
    assert headers["x-warren-worker"] == "jobs" and headers["x-warren-queue"] == "jobs"


def test_MalformedHeaders_TheRowIsDeadWithTheReasonAndTheOthersFlow(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    enqueue(db, 3, prefix="good")
    with connect(db) as connection:
        connection.execute("INSERT INTO warren_queue (queue, message_id, body, headers) "
                           "VALUES ('jobs', 'bad-headers', 'x', '[1, 2]')")
    host.start()
    wait_until(lambda: counts(db) == Counter({"done": 3, "dead": 1}), 60,
               what=lambda: f"3 done and 1 dead: {dict(counts(db))}; {host.describe()}")
    assert host.terminate() == 0, host.describe()
    assert sorted(record.ids()) == ["good-0", "good-1", "good-2"]
    with connect(db) as connection:
        (last_error,) = connection.execute(
            "SELECT last_error FROM warren_queue WHERE message_id = 'bad-headers'").fetchone()
    assert last_error == "malformed row: headers must be a JSON object of strings, got a JSON array"


def test_CorruptDatabaseFile_IsAClearErrorAtStart(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    db.write_bytes(b"this is not a SQLite database, just some bytes\n" * 200)
    host = sqlite_host(db, record.path)
    result = warren_cli("run", "-c", str(host.config_path), timeout=60)
    assert result.returncode != 0
    assert f"cannot open the queue database '{db}'" in result.stderr or \
           "file is not a database" in result.stderr, result.stderr
    assert "Segmentation" not in result.stderr and "terminate called" not in result.stderr


def test_NewerSchemaVersion_IsRefusedWithWhatToDo(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    with connect(db) as connection:
        connection.execute("UPDATE warren_schema SET version = 99 WHERE name = 'queue'")
    result = warren_cli("run", "-c", str(host.config_path), timeout=60)
    assert result.returncode != 0
    assert "schema version 99, made by a newer Warren" in result.stderr, result.stderr


def mount_tmpfs(path: Path, size: str, *options: str):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs",
                    str(path)], check=True)


@pytest.fixture
def mounts():
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mounted = []
    yield mounted
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_ReadOnlyDatabase_IsAClearErrorAtStart(workdir, mounts, sqlite_host):
    volume = workdir / "ro"
    mount_tmpfs(volume, "8m")
    mounts.append(volume)
    db, record = volume / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    subprocess.run(["mount", "-o", "remount,ro", str(volume)], check=True)
    result = warren_cli("run", "-c", str(host.config_path), timeout=60)
    assert result.returncode != 0
    assert f"cannot open the queue database '{db}'" in result.stderr, result.stderr
    assert "mounted read-only" in result.stderr, result.stderr
    assert "Segmentation" not in result.stderr and "terminate called" not in result.stderr


def test_DiskFullDuringClaims_IsSurvivedAndNothingIsLostOnceThereIsRoom(
        workdir, mounts, sqlite_host):
    volume = workdir / "small"
    mount_tmpfs(volume, "16m")
    mounts.append(volume)
    db, record = volume / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path, concurrency=2, prefetch=8, sleep_ms=5)
    prepare(host)
    ids = enqueue(db, 2000)
    host.start()
    wait_until(lambda: counts(db)["done"] >= 100, 60, what=lambda: host.describe())
    # Fill what is left of the volume: claims and settlements now fail with SQLITE_FULL.
    # Unbuffered: a buffered file kept the tail of a write the full volume cut short and failed
    # to flush it again at close, ENOSPC out of the `with` (a third of the runs).
    filler = volume / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while out.write(b"\0" * 65536):
                pass
        except OSError:
            pass
    wait_until(lambda: "database or disk is full" in host.logs(), 60,
               what=lambda: f"the host to meet the full disk: {host.describe()}")
    stalled_at = counts(db)["done"]
    assert host.running(), f"warren died on a full disk: {host.describe()}"
    assert stalled_at < 2000, "the disk filled only after everything was done"
    filler.unlink()
    wait_all_done(db, 2000, host, timeout=180)
    assert host.terminate() == 0, host.describe()
    calls = record.count_by_id()
    assert set(calls) == set(ids), "a message was lost"


def test_Metrics_QueueDepthByStatusAndTheMessageFamilies_AndReadyz(workdir, sqlite_host):
    db, record = workdir / "q.db", RecordFile(workdir / "calls.tsv")
    host = sqlite_host(db, record.path)
    prepare(host)
    enqueue(db, 30, prefix="ok")
    enqueue(db, 2, prefix="bad", headers={"x-test-action": "dead_letter:refused"})
    host.start()
    wait_until(lambda: counts(db) == Counter({"done": 30, "dead": 2}), 60,
               what=lambda: f"30 done and 2 dead: {dict(counts(db))}; {host.describe()}")

    endpoint = f"127.0.0.1:{host.metrics_port}"

    def depth_settled():
        series = scrape(endpoint)
        return series if value(series, "warren_queue_depth", queue="jobs", status="done") == 30 \
            else None

    # The census runs every 10 s.
    series = wait_until(depth_settled, 40, what=lambda: "warren_queue_depth of done rows = 30",
                        ignore=(OSError,))
    assert value(series, "warren_queue_depth", queue="jobs", status="dead") == 2
    assert value(series, "warren_queue_depth", queue="jobs", status="pending") == 0
    assert value(series, "warren_queue_oldest_pending_seconds", queue="jobs") == 0
    assert total(series, "warren_messages_received_total", worker="jobs", queue="jobs") == 32
    with urllib.request.urlopen(f"http://127.0.0.1:{host.metrics_port}/readyz", timeout=5) as ready:
        assert ready.status == 200  # a 503 would raise
    assert host.terminate() == 0, host.describe()
