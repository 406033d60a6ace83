"""The PostgreSQL table queue with real `warren run` processes on a real PostgreSQL (issue 13):
three hosts on one database, kill -9 of one of them, fencing of a late settlement, connections
terminated and the server restarted mid-stream, an application's own transaction, fan-out by
warren_publish, and a poison row that kills every host that touches it.

Each test has a schema of its own ([broker.postgres] schema), so tests never see each other's
rows, and counts what matters: every message id done, how many times each handler call happened
(the test plugin `scripted` records every call with one write(2) per line, so a kill -9 or an
abort() leaves whole lines; each host has a record file of its own), and duplicates only where a
lost lease allows them (rows whose `crashes` column says their lease expired).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

from testkit_config import toml_value
from testkit_env import env, free_port, require_services, wait_until
from testkit_records import RecordFile
from testkit_warren import WarrenProcess, warren_cli

# tests/integration/ -> the repository root
_POSTGRES_SH = Path(__file__).resolve().parents[2] / "scripts" / "services" / "postgres.sh"

# The queue of most tests, bound as an application's producer would publish to it.
JOBS = {"jobs": [("work", "job.#")]}


def with_parameter(dsn: str, name: str, value: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}{name}={value}"


class QueueSchema:
    """A schema pgq_<hex> of the test's own on a PostgreSQL server (the shared test server unless
    BASE_DSN says otherwise), where the hosts' warren_queue lives; the test's queries run with
    search_path set to it. The connection is opened again when the server dropped it (a restart
    test). drop() removes the schema and everything in it."""

    def __init__(self, base_dsn: Optional[str] = None):
        self.base_dsn = base_dsn or env("WARREN_TEST_PG_DSN")
        self.name = "pgq_" + uuid.uuid4().hex[:10]
        self.dsn = with_parameter(self.base_dsn, "options", f"-csearch_path%3D{self.name}")
        self._connection = None

    def connection(self):
        import psycopg2  # only the PostgreSQL tests need it

        if self._connection is None or self._connection.closed:
            self._connection = psycopg2.connect(self.dsn)
            self._connection.autocommit = True
        return self._connection

    def query(self, sql: str, params: Sequence = ()) -> list:
        import psycopg2

        for attempt in (1, 2):
            try:
                with self.connection().cursor() as cursor:
                    cursor.execute(sql, params)
                    return cursor.fetchall() if cursor.description else []
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                # The server closed our connection (pg_terminate_backend, a restart): once more.
                self.close()
                if attempt == 2:
                    raise
        return []

    def scalar(self, sql: str, params: Sequence = ()):
        return self.query(sql, params)[0][0]

    def counts(self) -> Counter:
        return Counter(dict(self.query(
            "SELECT status, count(*) FROM warren_queue GROUP BY status")))

    def crashed(self) -> Dict[str, int]:
        """message_id -> crashes, of the rows whose lease expired at least once."""
        return dict(self.query("SELECT message_id, crashes FROM warren_queue WHERE crashes > 0"))

    def enqueue(self, count: int, prefix: str = "m", queue: str = "jobs") -> List[str]:
        """COUNT rows PREFIX-0.. into QUEUE with one INSERT, as an application would."""
        self.query("INSERT INTO warren_queue (queue, message_id, body) "
                   "SELECT %s, %s || '-' || i, convert_to(repeat('x', 256), 'UTF8') "
                   "FROM generate_series(0, %s - 1) AS i", (queue, prefix, count))
        return [f"{prefix}-{i}" for i in range(count)]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def drop(self) -> None:
        self.query("DROP SCHEMA IF EXISTS " + self.name + " CASCADE")
        self.close()


class PgHost(WarrenProcess):
    """One `warren run` on the PostgreSQL queue of SCHEMA, with the scripted plugin on each queue
    of QUEUES ({queue: [(exchange, binding key), ...]}; the worker has the queue's name and every
    exchange is a topic exchange). Its connections carry application_name `<name>-<schema>`, so
    a test can find them in pg_stat_activity. Made by the `pg_host` fixture, which stops and
    checks it after the test (SIGTERM and exit 0, no sanitizer report)."""

    def __init__(self, schema: QueueSchema, record: Path, *, name: str, queues=None,
                 concurrency=4, prefetch=32, sleep_ms=0, gate_file: Optional[Path] = None,
                 default_action="ack",
                 lease="3s", poll_interval="200ms", state_dir: Optional[Path] = None,
                 record_time=False):
        queues = queues or JOBS
        self.host_name = name
        self.application_name = f"{name}-{schema.name}"
        self.metrics_port = free_port()
        settings = {"record_file": str(record), "sleep_ms": sleep_ms, "record_time": record_time,
                    "default_action": default_action}
        if gate_file is not None:
            settings["gate_file"] = str(gate_file)
        exchanges = sorted({exchange for bindings in queues.values() for exchange, _ in bindings})
        text = f"""
[host]
name = "{name}"
plugin_dir = "{env('WARREN_FIXTURE_PLUGIN_DIR')}"
shutdown_timeout = "10s"

[metrics]
listen = "127.0.0.1:{self.metrics_port}"

[broker]
transport = "postgres"

[broker.postgres]
dsn = "{with_parameter(schema.base_dsn, 'application_name', self.application_name)}"
schema = "{schema.name}"
lease = "{lease}"
poll_interval = "{poll_interval}"
"""
        for exchange in exchanges:
            text += f'\n[[exchanges]]\nname = "{exchange}"\ntype = "topic"\n'
        for queue, bindings in queues.items():
            listed = ", ".join(f'{{ exchange = "{e}", routing_key = "{k}" }}' for e, k in bindings)
            text += f'\n[[queues]]\nname = "{queue}"\nbindings = [{listed}]\n'
        for queue in queues:
            text += (f'\n[[workers]]\nname = "{queue}"\nplugin = "scripted"\nqueue = "{queue}"\n'
                     f"prefetch = {prefetch}\nconcurrency = {concurrency}\n"
                     'retry = { max_attempts = 5, backoff = "fixed", initial = "200ms", '
                     "jitter = 0.0 }\n[workers.settings]\n"
                     + "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items()))
        # Like systemd's StateDirectory=, a restarted host of a supervisor keeps its crash journal.
        overrides = {"STATE_DIRECTORY": str(state_dir)} if state_dir else None
        super().__init__(text, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"), name=name,
                         env_overrides=overrides)
        os.chmod(self.config_path, 0o644)

    @property
    def lease_owner(self) -> str:
        """warren_queue.lease_owner of this process's claims."""
        return f"{self.host_name}/{self.pid}"


@pytest.fixture
def queue_schema():
    require_services("postgres", "warren")
    schema = QueueSchema()
    yield schema
    schema.drop()


@pytest.fixture
def pg_host(queue_schema, warren_processes):
    """pg_host(record, schema=queue_schema, **PgHost options) -> a PgHost, not started. Requested
    after queue_schema, so its hosts are stopped before the schema is dropped."""
    def make(record: Path, schema: Optional[QueueSchema] = None, **options) -> PgHost:
        host = PgHost(schema or queue_schema, record, **options)
        warren_processes.append(host)
        return host
    return make


def apply_topology(host: PgHost):
    """`warren topology apply`: the schema and the routing tables of warren_publish()."""
    result = warren_cli("topology", "apply", "-c", str(host.config_path))
    assert result.returncode == 0, result.stderr


def start_all(hosts: Sequence[PgHost]):
    """Every host started and ready before rows arrive, so that they all share the work."""
    for host in hosts:
        host.start()
    for host in hosts:
        host.wait_ready(timeout=60)


def wait_all_done(schema: QueueSchema, total: int, hosts: Sequence[PgHost], timeout=120):
    wait_until(lambda: schema.counts()["done"] == total, timeout,
               what=lambda: f"{total} rows done: {dict(schema.counts())}; "
                            + "; ".join(h.describe(tail_lines=20) for h in hosts))


def assert_every_id_done_and_duplicates_only_after_a_lease_expiry(
        schema: QueueSchema, records: Sequence[RecordFile], ids: List[str]) -> tuple:
    """Every id handled and done; an id handled twice only if its lease expired (a connection
    lost long enough). Returns (the ids handled twice, the ids whose lease expired)."""
    calls = calls_by_id(records)
    assert set(calls) == set(ids), f"{len(set(ids) - set(calls))} messages lost"
    assert schema.counts() == Counter({"done": len(ids)})
    crashed = set(schema.crashed())
    twice = handled_twice(calls)
    assert twice <= crashed, f"handled twice without a lease expiry: {sorted(twice - crashed)}"
    return twice, crashed


def observe(sample, seconds: float, interval: float = 0.1) -> set:
    """Every distinct value SAMPLE() returns over SECONDS: for what must NOT happen meanwhile."""
    seen, deadline = set(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.add(sample())
        time.sleep(interval)
    return seen


def calls_by_id(records: Sequence[RecordFile]) -> Counter:
    """Handler calls per message id, over every host's record file."""
    calls = Counter()
    for record in records:
        calls.update(record.count_by_id())
    return calls


def handled_twice(calls: Counter) -> set:
    return {message_id for message_id, n in calls.items() if n > 1}


def test_ThreeHostsOnOneDatabase_ThirtyThousandRows_EachHandledAndDoneOnce(
        queue_schema, pg_host, tmp_path):
    records = [RecordFile(tmp_path / f"calls-{n}.tsv") for n in "abc"]
    # A lease long enough that no engine stall of a busy machine lets one expire: here none may.
    hosts = [pg_host(record.path, name=f"pg-{n}", concurrency=4, prefetch=64, lease="15s")
             for n, record in zip("abc", records)]
    apply_topology(hosts[0])
    start_all(hosts)
    ids = queue_schema.enqueue(30000)
    wait_all_done(queue_schema, 30000, hosts, timeout=240)
    for host in hosts:
        assert host.terminate() == 0, host.describe()

    calls = calls_by_id(records)
    assert set(calls) == set(ids), f"{len(set(ids) - set(calls))} rows never handled"
    assert not handled_twice(calls), f"handled twice: {sorted(handled_twice(calls))[:5]}"
    per_host = [len(record.ids()) for record in records]
    assert all(n > 0 for n in per_host), f"a host did no work: {per_host}"
    assert queue_schema.counts() == Counter({"done": 30000})
    assert queue_schema.crashed() == {}, "a lease expired while every host was alive"
    assert queue_schema.scalar("SELECT max(lease_token) FROM warren_queue") == 1
    print(f"rows per host: {per_host}")


def test_KillNineOfOneOfThreeHosts_ItsRowsComeBackAfterTheLease_EveryIdDone(
        queue_schema, pg_host, tmp_path):
    prefetch, lease = 16, 3.0
    records = [RecordFile(tmp_path / f"calls-{n}.tsv") for n in "abc"]
    hosts = [pg_host(record.path, name=f"pg-{n}", concurrency=4, prefetch=prefetch, sleep_ms=2,
                     lease=f"{lease:g}s", record_time=True) for n, record in zip("abc", records)]
    apply_topology(hosts[0])
    start_all(hosts)
    ids = queue_schema.enqueue(6000)
    victim, victim_record = hosts[1], records[1]
    wait_until(lambda: len(victim_record.ids()) >= 300 and queue_schema.counts()["done"] >= 1000,
               120, what=lambda: f"300 rows handled by the victim: {victim.describe()}")
    owner = victim.lease_owner
    victim.kill9()
    killed_at = time.time()
    # A transaction the victim sent whole before it died still commits (its settlements and its
    # next claim): what it holds is known once its server sessions have ended.
    wait_until(lambda: queue_schema.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
        (victim.application_name,)) == 0, 30, what="the victim's sessions to end")
    held = {row[0] for row in queue_schema.query(
        "SELECT message_id FROM warren_queue WHERE status = 'running' AND lease_owner = %s",
        (owner,))}
    assert 0 < len(held) <= prefetch, f"rows the victim held at the kill: {len(held)}"

    survivors = [hosts[0], hosts[2]]
    wait_all_done(queue_schema, 6000, survivors, timeout=120)
    for host in survivors:
        assert host.terminate() == 0, host.describe()
    calls = calls_by_id(records)
    assert set(calls) == set(ids), "a message was lost"
    duplicated = handled_twice(calls)
    assert duplicated <= held, f"handled twice but not held by the victim: {duplicated - held}"
    assert all(n <= 2 for n in calls.values())
    # Only the victim's leases expired, once each; the survivors handled those rows again.
    assert queue_schema.crashed() == {message_id: 1 for message_id in held}
    taken_over = {r.message_id: r.time for record in (records[0], records[2])
                  for r in record.records() if r.message_id in held}
    assert set(taken_over) == held, f"rows the victim held not handled by a survivor: {held}"
    # Only once the lease ran out: its last extension was due lease / 3 before the kill at most,
    # so not sooner than 2/3 of a lease after it; a third of a lease allows for a late heartbeat.
    early = {m: round(t - killed_at, 2) for m, t in taken_over.items()
             if t < killed_at + lease / 3}
    assert not early, f"the victim's rows were taken over before its lease ended: {early}"
    print(f"kill -9 with {len(held)} rows held: {len(duplicated)} handled twice")


FENCED_ROW = ("SELECT status, lease_owner, lease_token, crashes FROM warren_queue "
              "WHERE message_id = 'fence-0'")
SETTLED_ROW = ("SELECT status, lease_token, crashes, finished_at, attempts, last_error "
               "FROM warren_queue WHERE message_id = 'fence-0'")


class Fencing:
    """Two hosts and one row `fence-0`: the slow host's handler takes it first and waits at a
    gate (and then settles it with LATE_ACTION); the other host starts once it does, and acks."""

    def __init__(self, queue_schema, pg_host, tmp_path: Path, lease: float, late_action: str):
        self.schema, self.gate = queue_schema, tmp_path / "gate"
        self.slow_record = RecordFile(tmp_path / "calls-slow.tsv")
        self.other_record = RecordFile(tmp_path / "calls-other.tsv")
        self.slow = pg_host(self.slow_record.path, name="pg-slow", gate_file=self.gate,
                            default_action=late_action, lease=f"{lease:g}s")
        self.other = pg_host(self.other_record.path, name="pg-other", lease=f"{lease:g}s")
        apply_topology(self.slow)
        start_all([self.slow])
        queue_schema.enqueue(1, prefix="fence")
        self.slow_record.wait_for_count(1, timeout=30)  # its handler runs, held at the gate
        start_all([self.other])

    def stall_until_taken_over(self) -> tuple:
        """The whole slow host stalls (SIGSTOP: a frozen VM, a long pause): no heartbeat, so its
        lease expires, a rescue hands the row to the other host, which acks it. Returns the row
        as it is then."""
        self.slow.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: self.schema.counts() == Counter({"done": 1}), 60,
                       what=lambda: f"the other host to take over: "
                                    f"{self.schema.query(FENCED_ROW)}; {self.other.describe()}")
            settled = self.schema.query(SETTLED_ROW)[0]
            assert settled[:3] == ("done", 2, 1), settled
            assert self.other_record.ids() == ["fence-0"]
            return settled
        finally:
            self.slow.send_signal(signal.SIGCONT)

    def settle_late(self, settled: tuple):
        """The slow handler goes on and settles: dropped (logged), and the row is as it was."""
        self.gate.touch()
        self.slow.wait_for_log(r"the settlement of message 'fence-0' was dropped", timeout=30)
        after = self.schema.query(SETTLED_ROW)[0]
        assert after == settled, (after, settled)
        for host in (self.slow, self.other):
            assert host.terminate() == 0, host.describe()
        assert self.slow_record.ids() == ["fence-0"] and self.other_record.ids() == ["fence-0"]
        assert self.schema.query(SETTLED_ROW)[0] == settled


def test_HandlerHangingPastTheLease_KeepsItsRowWhileItsHostLives_AndItsLateSettlementIsDropped(
        queue_schema, pg_host, tmp_path):
    lease = 2.0
    fencing = Fencing(queue_schema, pg_host, tmp_path, lease, late_action="ack")
    # The handler hangs for three leases on a live host: the heartbeat extends the lease (every
    # lease / 3), so the other host never gets the row.
    seen = observe(lambda: queue_schema.query(FENCED_ROW)[0], seconds=3 * lease)
    assert seen == {("running", fencing.slow.lease_owner, 1, 0)}, seen
    assert fencing.other_record.ids() == []
    # The late ack changes nothing: the row stays done once, by the other host's claim.
    fencing.settle_late(fencing.stall_until_taken_over())


@pytest.mark.parametrize("late_action", ["retry", "dead_letter:too late"])
def test_StalledHostsLateRetryOrDeadLetter_IsDropped_TheRowStaysDone(
        queue_schema, pg_host, tmp_path, late_action):
    fencing = Fencing(queue_schema, pg_host, tmp_path, 2.0, late_action=late_action)
    fencing.settle_late(fencing.stall_until_taken_over())


def test_TerminatedConnections_TheHostReconnectsAndNothingIsLost(queue_schema, pg_host, tmp_path):
    records = [RecordFile(tmp_path / f"calls-{n}.tsv") for n in "ab"]
    hosts = [pg_host(record.path, name=f"pg-{n}", concurrency=4, prefetch=16, sleep_ms=2)
             for n, record in zip("ab", records)]
    apply_topology(hosts[0])
    start_all(hosts)
    ids = queue_schema.enqueue(6000)
    target, target_record = hosts[0], records[0]
    wait_until(lambda: len(target_record.ids()) >= 500, 60, what=lambda: target.describe())
    terminated = queue_schema.scalar(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = %s", (target.application_name,))
    assert terminated >= 1, "no connection of the host to terminate"
    handled_at_terminate = len(target_record.ids())

    # It reconnects and goes on handling rows.
    wait_until(lambda: len(target_record.ids()) >= handled_at_terminate + 200, 60,
               what=lambda: f"the host to handle rows again: {target.describe()}")
    wait_all_done(queue_schema, 6000, hosts)
    # Both of its connections came back: the engine's (at its next transaction) and the
    # listener's (after its reconnect delay).
    wait_until(lambda: queue_schema.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
        (target.application_name,)) == terminated, 30,
        what=lambda: f"{terminated} sessions of the host again: {target.describe()}")
    logs = target.logs()
    assert "postgres queue: the listener for new rows lost its connection" in logs, logs
    assert "nothing is lost, retrying" in logs and "the database takes writes again" in logs, logs
    for host in hosts:
        assert host.terminate() == 0, host.describe()
    twice, _ = assert_every_id_done_and_duplicates_only_after_a_lease_expiry(
        queue_schema, records, ids)
    print(f"{terminated} connections terminated; {len(twice)} handled twice")


@pytest.fixture
def private_postgres():
    """A PostgreSQL server of this test's own (scripts/services/postgres.sh), to restart at will
    without disturbing the tests that share the test server. Yields its state directory."""
    require_services("postgres", "warren")
    directory = Path(tempfile.mkdtemp(prefix="warren-pg-restart-"))
    directory.chmod(0o711)  # the server runs as `postgres` under root
    try:
        postgres_service("start", directory)
        yield directory
    finally:
        postgres_service("stop", directory)
        shutil.rmtree(directory, ignore_errors=True)


def postgres_service(action: str, directory: Path):
    result = subprocess.run([str(_POSTGRES_SH), action, str(directory)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, f"postgres.sh {action} failed: {result.stdout}{result.stderr}"


def private_dsn(directory: Path) -> str:
    for line in (directory / "env").read_text().splitlines():
        if line.startswith("export WARREN_TEST_PG_DSN="):
            return line.split("=", 1)[1]
    raise AssertionError(f"no WARREN_TEST_PG_DSN in {directory}/env")


def test_PostgresRestartMidStream_TheHostsReconnectAndNothingIsLost(
        private_postgres, warren_processes, tmp_path):
    schema = QueueSchema(private_dsn(private_postgres))
    records = [RecordFile(tmp_path / f"calls-{n}.tsv") for n in "ab"]
    hosts = [PgHost(schema, record.path, name=f"pg-{n}", concurrency=4, prefetch=16, sleep_ms=2)
             for n, record in zip("ab", records)]
    warren_processes.extend(hosts)
    try:
        apply_topology(hosts[0])
        start_all(hosts)
        ids = schema.enqueue(6000)
        wait_until(lambda: schema.counts()["done"] >= 1000, 60,
                   what=lambda: "; ".join(h.describe() for h in hosts))
        postgres_service("stop", private_postgres)
        for host in hosts:  # each has met the outage before the server comes back
            host.wait_for_log(r"postgres queue: .*nothing is lost, retrying", timeout=30)
        postgres_service("start", private_postgres)
        wait_all_done(schema, 6000, hosts)
        for host in hosts:
            host.wait_for_log(r"postgres queue: the database takes writes again", timeout=30)
            assert host.terminate() == 0, host.describe()
        twice, crashed = assert_every_id_done_and_duplicates_only_after_a_lease_expiry(
            schema, records, ids)
        print(f"restart: {len(twice)} handled twice, {len(crashed)} leases expired")
    finally:
        for host in hosts:  # stopped before their server is
            if host.running():
                host.terminate()
        schema.close()


def test_ApplicationTransaction_RolledBackEnqueuesNothing_CommittedIsHandled(
        queue_schema, pg_host, tmp_path):
    record = RecordFile(tmp_path / "calls.tsv")
    host = pg_host(record.path, name="pg-app")
    apply_topology(host)
    import psycopg2

    application = psycopg2.connect(queue_schema.dsn)  # a transaction per `with` block
    try:
        with application, application.cursor() as cursor:
            cursor.execute("CREATE TABLE orders (id int PRIMARY KEY, total numeric)")
        with application, application.cursor() as cursor:
            cursor.execute("INSERT INTO orders VALUES (1, 10.5)")
            cursor.execute("INSERT INTO warren_queue (queue, message_id, body) "
                           "VALUES ('jobs', 'order-1', convert_to('{\"id\": 1}', 'UTF8'))")
            cursor.execute("SELECT warren_publish('work', 'job.order', convert_to('{\"id\": 1}', "
                           "'UTF8'), '{}', 'order-1-published')")
        cursor = application.cursor()
        cursor.execute("INSERT INTO orders VALUES (2, 99.0)")
        cursor.execute("INSERT INTO warren_queue (queue, message_id, body) "
                       "VALUES ('jobs', 'order-2', convert_to('{\"id\": 2}', 'UTF8'))")
        cursor.execute("SELECT warren_publish('work', 'job.order', convert_to('{\"id\": 2}', "
                       "'UTF8'), '{}', 'order-2-published')")
        application.rollback()
    finally:
        application.close()

    host.start()
    wait_all_done(queue_schema, 2, [host])
    assert host.terminate() == 0, host.describe()
    assert record.count_by_id() == Counter({"order-1": 1, "order-1-published": 1})
    assert sorted(r[0] for r in queue_schema.query("SELECT message_id FROM warren_queue")) == \
        ["order-1", "order-1-published"]
    assert queue_schema.scalar("SELECT count(*) FROM orders") == 1


def test_WarrenPublish_FansOutByTheTopicBindings_EachBoundQueuesWorkerOnce(
        queue_schema, pg_host, tmp_path):
    record = RecordFile(tmp_path / "calls.tsv")
    queues = {"emails": [("events", "order.*")],
              "audit": [("events", "#")],
              "invoices": [("events", "order.paid"), ("events", "*.paid")],  # one copy, not two
              "signups": [("events", "user.*")]}
    host = pg_host(record.path, name="pg-fanout", queues=queues)
    apply_topology(host)
    published = {"e-created": "order.created", "e-paid": "order.paid", "e-user": "user.signup",
                 "e-other": "stock.moved"}
    reached = {}
    for message_id, key in published.items():
        reached[message_id] = queue_schema.scalar(
            "SELECT warren_publish('events', %s, convert_to('{}', 'UTF8'), '{}', %s)",
            (key, message_id))
    assert reached == {"e-created": 2, "e-paid": 3, "e-user": 2, "e-other": 1}
    import psycopg2

    with pytest.raises(psycopg2.errors.UndefinedObject, match="no exchange 'nope'"):
        queue_schema.query("SELECT warren_publish('nope', 'order.paid', 'x')")

    host.start()
    wait_all_done(queue_schema, 8, [host])
    assert host.terminate() == 0, host.describe()
    by_worker = Counter((r.worker, r.message_id) for r in record.records())
    assert by_worker == Counter({
        ("emails", "e-created"): 1, ("emails", "e-paid"): 1,
        ("audit", "e-created"): 1, ("audit", "e-paid"): 1, ("audit", "e-user"): 1,
        ("audit", "e-other"): 1,
        ("invoices", "e-paid"): 1,
        ("signups", "e-user"): 1,
    })


class Supervisor:
    """Starts a host, and starts it again whenever it died, as systemd's Restart=always would
    (no RestartSec: the test has no time to lose); the runs share one state directory, as they
    would share StateDirectory=."""

    def __init__(self, make, name: str, state_dir: Path):
        self.make, self.name, self.state_dir = make, name, state_dir
        state_dir.mkdir()
        self.runs: List[PgHost] = []
        self.start()

    def start(self):
        host = self.make(name=self.name, state_dir=self.state_dir)
        host.allow_death_by(signal.SIGABRT)  # the poison row's doing, not a crash of the kit's
        self.runs.append(host.start())

    def restart_if_dead(self):
        if not self.runs[-1].running():
            self.start()

    @property
    def deaths(self) -> List[int]:
        return [run.returncode for run in self.runs if not run.running()]


def supervise(pg_host, tmp_path: Path, names: str, **options) -> List[Supervisor]:
    """A supervised host per letter of NAMES (pg-a, pg-b...), each with the record file
    calls-<letter>.tsv and record_time, the given PgHost options, and ready."""
    supervisors = [Supervisor(lambda n=n, **more: pg_host(
        tmp_path / f"calls-{n}.tsv", record_time=True, **options, **more),
        f"pg-{n}", tmp_path / f"state-{n}") for n in names]
    apply_topology(supervisors[0].runs[0])
    for supervisor in supervisors:
        supervisor.runs[-1].wait_ready(timeout=60)
    return supervisors


def enqueue_around_poison(schema: QueueSchema, before: int, after: int) -> List[str]:
    """BEFORE good rows, the row `poison` (its handler aborts the host), AFTER good rows; returns
    the good ids."""
    good = schema.enqueue(before, prefix="good-early")
    schema.query("INSERT INTO warren_queue (queue, message_id, body, headers) "
                 "VALUES ('jobs', 'poison', 'x', '{\"x-test-action\": \"abort\"}')")
    return good + schema.enqueue(after, prefix="good-late")


POISON = "SELECT status, crashes, last_error FROM warren_queue WHERE message_id = 'poison'"


def supervise_until(supervisors: List[Supervisor], schema: QueueSchema, done, what: str):
    """Restarts dead hosts until DONE(counts by status) is true."""
    def finished():
        for supervisor in supervisors:
            supervisor.restart_if_dead()
        return done(schema.counts())

    wait_until(finished, 120, interval=0.1,
               what=lambda: f"{what}: {dict(schema.counts())}; poison: {schema.query(POISON)}")
    for supervisor in supervisors:
        assert supervisor.runs[-1].terminate() == 0, supervisor.runs[-1].describe()


def test_PoisonRowThatAbortsEveryHost_EndsDeadAfterThreeLeaseExpiries_OthersDoneOnce(
        queue_schema, pg_host, tmp_path):
    # One row at a time per host: the only row a dying host holds is the poison row, so every
    # other row runs exactly once (with more, see the test below).
    supervisors = supervise(pg_host, tmp_path, "ab", concurrency=1, prefetch=1, sleep_ms=5,
                            lease="2s")
    good = enqueue_around_poison(queue_schema, 200, 1500)
    supervise_until(supervisors, queue_schema, lambda c: c == Counter({"done": 1700, "dead": 1}),
                    "1700 done and the poison dead")

    records = [RecordFile(tmp_path / f"calls-{n}.tsv") for n in "ab"]
    calls = calls_by_id(records)
    assert calls["poison"] == 3, f"the poison row ran {calls['poison']} times"
    deaths = [code for supervisor in supervisors for code in supervisor.deaths
              if code != 0]
    assert deaths == [-signal.SIGABRT] * 3, deaths
    del calls["poison"]
    # The good rows flowed while the poison row killed hosts: some were handled between its first
    # and its last run.
    poison_times = sorted(r.time for record in records for r in record.records()
                          if r.message_id == "poison")
    meanwhile = [r for record in records for r in record.records()
                 if r.message_id != "poison" and poison_times[0] < r.time < poison_times[-1]]
    assert meanwhile, "no good row was handled while the poison row was killing hosts"
    print(f"{len(meanwhile)} good rows handled between the poison row's first and last run")
    assert set(calls) == set(good), "a good row was lost"
    assert not handled_twice(calls), f"good rows handled twice: {sorted(handled_twice(calls))}"
    status, crashes, last_error = queue_schema.query(POISON)[0]
    assert (status, crashes) == ("dead", 3)
    assert last_error == "lease expired 3 times: the host handling it died or hung each time", \
        last_error
    assert queue_schema.crashed() == {"poison": 3}


def test_PoisonRow_WithTheDefaultPrefetch_TheRowsClaimedWithItDoNotDieWithIt(
        queue_schema, pg_host, tmp_path):
    # The worker defaults: prefetch 20, concurrency 1. The rows claimed with the poison row die
    # with its host once; were they claimed with it again (they are next in line), each death
    # would count against them too and they would end dead with it, never run (the defect this
    # test found: a row some host died holding is now claimed alone).
    supervisors = supervise(pg_host, tmp_path, "ab", concurrency=1, prefetch=20, sleep_ms=5,
                            lease="2s")
    good = enqueue_around_poison(queue_schema, 100, 300)
    supervise_until(supervisors, queue_schema, lambda c: c["done"] + c["dead"] == 401,
                    "every row done or dead")

    calls = calls_by_id([RecordFile(tmp_path / f"calls-{n}.tsv") for n in "ab"])
    dead = {row[0]: row[1] for row in queue_schema.query(
        "SELECT message_id, crashes FROM warren_queue WHERE status = 'dead'")}
    buried = {message_id: calls[message_id] for message_id in dead if message_id != "poison"}
    assert not buried, (f"{len(buried)} good rows dead with the poison row; handler calls of "
                        f"each: {sorted(buried.items())[:20]}; their crashes: "
                        f"{sorted(set(dead[m] for m in buried))}")
    assert set(calls) >= set(good), "a good row was never handled"
    assert queue_schema.counts() == Counter({"done": 400, "dead": 1})
    assert queue_schema.query(POISON)[0][:2] == ("dead", 3)
    twice = handled_twice(calls) - {"poison"}
    crashes = queue_schema.crashed()
    assert all(n == 1 for m, n in crashes.items() if m != "poison"), \
        f"a good row's lease expired more than once: {crashes}"
    crashed = set(crashes)
    assert twice <= crashed, f"handled twice without a lease expiry: {sorted(twice - crashed)}"
    print(f"prefetch 20: {len(crashed) - 1} good rows were held by a dying host, "
          f"{len(twice)} handled twice")
