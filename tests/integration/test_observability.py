"""What operators see of a running host (issue 4): a live /metrics that promtool accepts, exact
counts through a real Prometheus, /readyz and /healthz across a broker outage, JSON log lines
carrying the message's fields and trace id, W3C trace context propagated on publish, and basic
auth on /metrics.

Every test runs its own `warren run` (scripted test plugin) on a free port, with queues and
exchanges of unique names that are deleted afterwards. Metric names, labels and endpoint answers
asserted here are an interface: dashboards and alert rules in packaging/ depend on them.
"""

import json
import re
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import pytest
import requests

from testkit_metrics import Series, parse_exposition, total, value
from testkit_metrics import scrape as scrape_endpoint
from warren_testkit import (Prometheus, RecordFile, env, free_port, require_services, unique_name,
                            wait_until)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN_ID}-01"
TRACEPARENT_PATTERN = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")

# Every metric family of the issue that a host without an outbox exposes.
ISSUE_METRICS = (
    "warren_messages_received_total", "warren_messages_settled_total",
    "warren_handler_duration_seconds", "warren_handler_exceptions_total",
    "warren_messages_in_flight", "warren_broker_connected", "warren_broker_reconnects_total",
    "warren_broker_blocked", "warren_published_total", "warren_stale_acks_dropped_total",
    "warren_plugin_info", "warren_build_info",
)


# ---- helpers ------------------------------------------------------------------------------------
def broker_uri_and_password() -> Tuple[str, Dict[str, str]]:
    """The test broker's URI without its password, and the environment that supplies it (a
    password inside the URI would add a warning line to every log)."""
    uri = urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI"))
    netloc = f"{uri.username}@{uri.hostname}:{uri.port}"
    return urllib.parse.urlunsplit(uri._replace(netloc=netloc)), {
        "WARREN_BROKER_PASSWORD": uri.password or ""}


@dataclass
class Topology:
    """Unique names for one test: a work queue dead-lettering into a fanout exchange with its own
    queue, and a topic exchange with a queue for what handlers publish."""

    worker: str
    work_queue: str
    dead_exchange: str
    dead_queue: str
    out_exchange: str
    out_queue: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.endpoint}{path}"


@pytest.fixture
def topology(broker) -> Iterator[Topology]:
    names = Topology(worker=unique_name("obs-worker"), work_queue=unique_name("obs-work"),
                     dead_exchange=unique_name("obs-dead"), dead_queue=unique_name("obs-dead-q"),
                     out_exchange=unique_name("obs-out"), out_queue=unique_name("obs-out-q"),
                     port=free_port())
    yield names
    for queue in (names.work_queue, names.dead_queue, names.out_queue):
        broker.delete_queue(queue)
    for exchange in (names.dead_exchange, names.out_exchange):
        broker.delete_exchange(exchange)


def host_config(t: Topology, record_file: RecordFile, *, log_format: str = "text",
                metrics_extra: str = "", broker_extra: str = "") -> str:
    uri, _ = broker_uri_and_password()
    return f"""
[host]
name = "observability-test"
shutdown_timeout = "10s"

[log]
level = "info"
format = "{log_format}"

[metrics]
listen = "{t.endpoint}"
{metrics_extra}

[broker]
uri = "{uri}"
{broker_extra}

[[exchanges]]
name = "{t.dead_exchange}"
type = "fanout"

[[exchanges]]
name = "{t.out_exchange}"
type = "topic"

[[queues]]
name = "{t.work_queue}"
type = "classic"
dead_letter_exchange = "{t.dead_exchange}"

[[queues]]
name = "{t.dead_queue}"
type = "classic"
bindings = [{{ exchange = "{t.dead_exchange}" }}]

[[queues]]
name = "{t.out_queue}"
type = "classic"
bindings = [{{ exchange = "{t.out_exchange}", routing_key = "#" }}]

[[workers]]
name = "{t.worker}"
plugin = "scripted"
queue = "{t.work_queue}"
prefetch = 50
concurrency = 4
retry = {{ max_attempts = 5, backoff = "fixed", initial = "100ms", jitter = 0.0 }}
[workers.settings]
record_file = "{record_file}"
"""


@pytest.fixture
def start_host(topology, warren):
    """start_host(config_text) -> a ready `warren run` with the scripted plugin. Depends on
    `topology` first so that the host is killed before its queues are deleted."""
    def start(config_text: str):
        _, password_env = broker_uri_and_password()
        host = warren(config_text, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"),
                      env_overrides=password_env)
        host.wait_ready(timeout=60)
        return host

    return start


def action(spec: str, **headers: str) -> Dict[str, str]:
    return {"x-test-action": spec, **headers}


def scrape(t: Topology, auth: Optional[Tuple[str, str]] = None) -> Series:
    return scrape_endpoint(t.endpoint, auth=auth)


def scrape_until(t: Topology, condition, what: str,
                 timeout: float = 30) -> Series:
    """The first scrape of /metrics for which CONDITION(series) holds."""
    def attempt():
        series = scrape(t)
        return series if condition(series) else None

    return wait_until(attempt, timeout, interval=0.1, what=what,
                      ignore=(requests.RequestException,))


def status(url: str) -> int:
    return requests.get(url, timeout=2).status_code


def json_lines(host) -> List[dict]:
    """Every complete stderr line of HOST, each parsed as JSON (fails naming the first line that
    is not). A last line still being written is left for the next call."""
    text = host.stderr()
    parsed = []
    for number, line in enumerate(text[: text.rfind("\n") + 1].splitlines(), start=1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError as error:
            pytest.fail(f"stderr line {number} is not JSON ({error}): {line!r}")
        assert isinstance(event, dict), f"stderr line {number} is not a JSON object: {line!r}"
        parsed.append(event)
    return parsed


# ---- 1. promtool ------------------------------------------------------------------------------
def test_LiveMetrics_AfterEveryOutcome_PassPromtoolCheckMetrics(start_host, broker, topology,
                                                                 record_file):
    require_services("prometheus")
    host = start_host(host_config(topology, record_file))
    t = topology
    broker.publish_many("", t.work_queue, 5, prefix="ack", headers=action("ack"))
    broker.publish_many("", t.work_queue, 2, prefix="perm", headers=action("permanent"))
    broker.publish_many("", t.work_queue, 2, prefix="dead", headers=action("dead_letter:bad"))
    broker.publish_many("", t.work_queue, 2, prefix="retry", headers=action("fail_until:2"))
    broker.publish_many("", t.work_queue, 1, prefix="unknown", headers=action("throw_int"))
    broker.publish_many("", t.work_queue, 1, prefix="pub",
                        headers=action(f"publish:{t.out_exchange}:promtool"))
    # 13 messages, the 2 fail_until:2 twice; throw_int retries until max_attempts (5 calls).
    record_file.wait_for_count(13 + 2 + 4, timeout=60)

    def settled_all() -> Optional[requests.Response]:
        response = requests.get(t.url("/metrics"), timeout=5)
        series = parse_exposition(response.text)
        settled = total(series, "warren_messages_settled_total", worker=t.worker)
        return response if settled == 13 + 2 + 4 else None

    response = wait_until(settled_all, 30, interval=0.1, what="every message to be settled")

    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    series = parse_exposition(response.text)
    for outcome, expected in (("ack", 8), ("retry", 6), ("dead_letter", 5), ("requeue", 0)):
        assert value(series, "warren_messages_settled_total", worker=t.worker,
                     outcome=outcome) == expected, outcome
    for name in ISSUE_METRICS:
        assert f"# TYPE {name} " in response.text, f"{name} is missing from /metrics"
    checked = subprocess.run(["promtool", "check", "metrics"], input=response.text,
                             capture_output=True, text=True, timeout=30, check=False)
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, ""), (
        f"promtool check metrics found problems:\n{checked.stdout}{checked.stderr}")
    assert host.running()


def test_ARabbitMqHost_MapsNoLibraryItDoesNotUse(start_host, broker, topology, record_file):
    """Issue 17: a mapped library costs every host its resident pages whether or not it is
    called. SQLite and libpq are opened on first use, spdlog is compiled in and Boost.DLL runs
    over std::filesystem, so a RabbitMQ host that handled a message maps none of them."""
    host = start_host(host_config(topology, record_file))
    broker.publish_many("", topology.work_queue, 1, prefix="ack", headers=action("ack"))
    record_file.wait_for_count(1, timeout=60)
    with open(f"/proc/{host.pid}/maps") as maps:
        mapped = {line.split()[-1] for line in maps if "/" in line}
    for library in ("libsqlite3.so", "libpq.so", "libspdlog.so", "libboost_filesystem.so"):
        assert not [path for path in mapped if library in path], f"{library} is mapped"
    assert [path for path in mapped if "librabbitmq.so" in path], "the maps were not read"


# ---- 2. a real Prometheus ---------------------------------------------------------------------
# slow: under ASan, /metrics is served and checked by test_LiveMetrics (promtool).
@pytest.mark.slow
def test_Prometheus_ScrapingAHostThatProcessedKnownMessages_QueriesReturnExactCounts(
        start_host, broker, topology, record_file):
    require_services("prometheus")
    t = topology
    start_host(host_config(t, record_file))
    with Prometheus(t.endpoint, interval="1s") as prometheus:
        broker.publish_many("", t.work_queue, 300, prefix="ok", headers=action("ack"))
        broker.publish_many("", t.work_queue, 20, prefix="perm", headers=action("permanent"))
        broker.publish_many("", t.work_queue, 30, prefix="flaky", headers=action("fail_until:2"))
        # 350 messages; the 30 flaky ones are received twice (retried through the delay queues).
        record_file.wait_for_count(380, timeout=120)

        w = f'worker="{t.worker}"'
        expected = {
            f"sum(warren_messages_received_total{{{w}}})": 380,
            f'warren_messages_received_total{{{w},queue="{t.work_queue}"}}': 380,
            f'warren_messages_settled_total{{{w},outcome="ack"}}': 330,
            f'warren_messages_settled_total{{{w},outcome="retry"}}': 30,
            f'warren_messages_settled_total{{{w},outcome="dead_letter"}}': 20,
            f'warren_messages_settled_total{{{w},outcome="requeue"}}': 0,
            f'warren_handler_exceptions_total{{{w},type="permanent"}}': 20,
            f'warren_handler_exceptions_total{{{w},type="std_exception"}}': 30,
            f'warren_handler_exceptions_total{{{w},type="unknown"}}': 0,
            f"warren_handler_duration_seconds_count{{{w}}}": 380,
            f"warren_messages_in_flight{{{w}}}": 0,
            f'warren_published_total{{exchange="{t.dead_exchange}",result="confirmed"}}': 20,
            "warren_broker_connected": 1,
        }

        def current() -> Dict[str, List[float]]:
            return {query: [float(s["value"][1]) for s in prometheus.query(query)]
                    for query in expected}

        last: Dict[str, List[float]] = {}

        def all_match() -> bool:
            nonlocal last
            last = current()
            return all(last[query] == [want] for query, want in expected.items())

        try:
            wait_until(all_match, 60, interval=0.5, ignore=(requests.RequestException,),
                       what="Prometheus to scrape the final counts")
        except AssertionError:
            mismatches = {q: (last.get(q), want) for q, want in expected.items()
                          if last.get(q) != [want]}
            pytest.fail(f"Prometheus query results (got, want) differ: {mismatches}")

        [info] = prometheus.query(f"warren_plugin_info{{{w}}}")
        assert info["metric"]["plugin"] == "scripted"
        assert info["metric"]["version"] == "1.0.0"
        assert float(info["value"][1]) == 1
        [build] = prometheus.query("warren_build_info")
        assert build["metric"]["version"], "warren_build_info carries the version"
        # The README's example query for the dead-letter rate answers for this worker (its value
        # depends on timing; rate() needs two scrapes of the final count).
        wait_until(lambda: prometheus.query(
            'sum by (worker) (rate(warren_messages_settled_total{outcome="dead_letter"}[5m]))'
            f' and on (worker) warren_plugin_info{{{w}}}'), 30, interval=0.5,
            what="the dead-letter rate query to answer")


# ---- 3. readiness across a broker outage ------------------------------------------------------
class HealthzWatcher:
    """Polls /healthz in the background and keeps every status seen (or the error)."""

    def __init__(self, url: str):
        self.url = url
        self.seen: List[object] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.seen.append(status(self.url))
            except requests.RequestException as error:
                self.seen.append(repr(error))
            self._stop.wait(0.1)

    def __enter__(self) -> "HealthzWatcher":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


# slow: under ASan, reconnecting is test_resilience's and /readyz 503 then 200
# test_transport_edges'.
@pytest.mark.slow
def test_BrokerStoppedThenStarted_ReadyzGoes503Then200_HealthzStays200_ConnectedGauge0Then1(
        start_host, broker, topology, record_file):
    t = topology
    host = start_host(host_config(
        t, record_file, broker_extra='reconnect_initial = "200ms"\nreconnect_max = "1s"'))
    before = scrape(t)
    assert value(before, "warren_broker_connected") == 1
    reconnects_before = value(before, "warren_broker_reconnects_total")

    broker_stopped = False
    try:
        with HealthzWatcher(t.url("/healthz")) as healthz:
            broker.stop_broker()
            broker_stopped = True
            wait_until(lambda: status(t.url("/readyz")) == 503, 30, interval=0.1,
                       what="/readyz to answer 503 while the broker is down")
            down = scrape_until(t, lambda s: value(s, "warren_broker_connected") == 0,
                                "warren_broker_connected to drop to 0")
            assert value(down, "warren_broker_reconnects_total") > reconnects_before

            broker.start_broker()
            broker_stopped = False
            host.wait_ready(timeout=60)
            up = scrape_until(t, lambda s: value(s, "warren_broker_connected") == 1,
                              "warren_broker_connected to return to 1")
        assert healthz.seen, "the watcher polled /healthz"
        assert set(healthz.seen) == {200}, f"/healthz answered {sorted(set(map(str, healthz.seen)))}"
        assert value(up, "warren_broker_reconnects_total") > reconnects_before
    finally:
        if broker_stopped:
            broker.start_broker()  # leave the broker up for the tests that follow

    # And it consumes again.
    [message_id] = broker.publish_many("", t.work_queue, 1, prefix="after", headers=action("ack"))
    records = record_file.wait_for_count(1, timeout=30)
    assert [r.message_id for r in records] == [message_id]


# ---- 4. JSON logs -----------------------------------------------------------------------------
def test_JsonLogFormat_EveryStderrLineIsAnObject_MessageLinesCarryWorkerIdAttemptAndTraceId(
        start_host, broker, topology, record_file):
    t = topology
    host = start_host(host_config(t, record_file, log_format="json"))
    traced = broker.publish("", t.work_queue, b"traced", message_id=unique_name("traced"),
                            headers=action("fail_until:3", traceparent=TRACEPARENT))
    doomed = broker.publish("", t.work_queue, b"doomed", message_id=unique_name("doomed"),
                            headers=action("permanent", traceparent=TRACEPARENT))
    untraced = broker.publish("", t.work_queue, b"untraced", message_id=unique_name("untraced"),
                              headers=action("permanent"))
    record_file.wait_for_count(3 + 2, timeout=60)  # traced runs 3 times
    wait_until(lambda: len([e for e in json_lines(host) if e.get("message_id")]) >= 4, 30,
               what="the log lines about the failed attempts")
    assert host.terminate() == 0

    events = json_lines(host)
    for event in events:
        assert {"time", "level", "message"} <= event.keys(), event
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["time"]), event
        assert event["level"] in {"trace", "debug", "info", "warn", "error", "critical"}, event
    about_messages = [e for e in events if "message_id" in e]
    for event in about_messages:
        assert event["worker"] == t.worker, event
        assert isinstance(event["attempt"], int) and event["attempt"] >= 1, event
        assert re.fullmatch(r"[0-9a-f]{32}", event.get("trace_id", "")), event

    def lines_of(message_id: str) -> List[dict]:
        return [e for e in about_messages if e["message_id"] == message_id]

    # Both failed attempts of `traced` (the second after a broker-delayed retry) keep its trace.
    assert [(e["attempt"], e["level"], e["trace_id"]) for e in lines_of(traced)] == [
        (1, "warn", TRACE_ID), (2, "warn", TRACE_ID)]
    assert [(e["attempt"], e["level"], e["trace_id"]) for e in lines_of(doomed)] == [
        (1, "error", TRACE_ID)]
    [untraced_line] = lines_of(untraced)
    assert untraced_line["trace_id"] != TRACE_ID, "a message without traceparent gets a new trace"


# ---- 5. trace propagation ---------------------------------------------------------------------
def test_HandlerPublish_PropagatesTheIncomingTraceIdWithANewSpanIdAndTracestate(
        start_host, broker, topology, record_file):
    t = topology
    start_host(host_config(t, record_file, log_format="json"))
    publish = f"publish:{t.out_exchange}:traced.out"

    traced = broker.publish("", t.work_queue, b"with trace", message_id=unique_name("traced"),
                            headers=action(publish, traceparent=TRACEPARENT,
                                           tracestate="vendor=abc"))
    [out] = broker.drain(t.out_queue, expect=1, timeout=30)

    match = TRACEPARENT_PATTERN.fullmatch(out.headers.get("traceparent", ""))
    assert match, f"published traceparent is not W3C version 00: {out.headers}"
    trace_id, span_id, flags = match.groups()
    assert trace_id == TRACE_ID
    assert span_id not in (PARENT_SPAN_ID, "0" * 16), "a new span for the publish"
    assert flags == "01"
    assert out.headers.get("tracestate") == "vendor=abc"
    assert out.body == b"with trace"
    assert traced in record_file.ids()

    # Without a traceparent, the message starts a trace and the publish carries it.
    broker.publish("", t.work_queue, b"no trace", message_id=unique_name("fresh"),
                   headers=action(publish))
    [fresh] = broker.drain(t.out_queue, expect=1, timeout=30)
    fresh_match = TRACEPARENT_PATTERN.fullmatch(fresh.headers.get("traceparent", ""))
    assert fresh_match, f"a new trace is propagated too: {fresh.headers}"
    assert fresh_match.group(1) not in (TRACE_ID, "0" * 32)


# ---- 6. basic auth ----------------------------------------------------------------------------
def test_MetricsUserAndPasswordFile_MetricsNeedsBasicAuth_HealthAndReadinessStayOpen(
        start_host, broker, topology, record_file, tmp_path):
    t = topology
    password_file = tmp_path / "metrics-password"
    password_file.write_text("s3cret-scrape\n")
    password_file.chmod(0o600)
    start_host(host_config(
        t, record_file,
        metrics_extra=f'user = "prometheus"\npassword_file = "{password_file}"'))

    anonymous = requests.get(t.url("/metrics"), timeout=5)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Basic")
    assert "warren_" not in anonymous.text
    wrong = requests.get(t.url("/metrics"), auth=("prometheus", "guess"), timeout=5)
    assert wrong.status_code == 401

    authorised = requests.get(t.url("/metrics"), auth=("prometheus", "s3cret-scrape"), timeout=5)
    assert authorised.status_code == 200
    assert "warren_build_info" in authorised.text

    assert status(t.url("/healthz")) == 200
    assert status(t.url("/readyz")) == 200
