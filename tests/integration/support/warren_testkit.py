"""Warren's integration-test kit: one import for tests, and a pytest plugin with fixtures.

ctest runs every integration test as `python3 -m pytest -p warren_testkit FILE` (see
tests/integration/CMakeLists.txt), so the fixtures below need no import; helpers do:

    from warren_testkit import require_services, wait_until, WarrenProcess, RecordFile

What is where:
  testkit_env       require_services(), skip_or_fail(), env(), unique_name(), free_port(),
                    wait_until(), WaitTimeout
  testkit_broker    Broker (topology, publish_many, drain, queue_counts, rabbitmqctl, restarts), Message
  testkit_warren    WarrenProcess (run, wait_for_log, wait_ready, terminate, kill9, logs, cleanup),
                    warren_cli(), sanitizer_reports()
  testkit_metrics   scrape(), parse_exposition(), value(), total(): a host's /metrics
  testkit_records   RecordFile, Record: what the `scripted` test plugin recorded
  testkit_services  pg_connect(), Prometheus
  testkit_config    warren_config(), scripted_worker(), warren_options(): test warren.toml;
                    apply_topology() (declare a config's queues before any host runs)
  testkit_traffic   publish_bulk() (thousands of messages fast), wait_for_ready(), Tally (lost,
                    duplicated, unexpected ids)
  testkit_broker_state  queue_definitions(), UnackedSampler, CloseConnectionsTrigger (in-node)
  testkit_cleanup   the `created` fixture (queues/exchanges deleted after the test; import it)

Fixtures: `broker` (a Broker; skips/fails without RabbitMQ), `warren` (a factory: warren(toml_text,
**kwargs) starts a WarrenProcess on the test broker), `warren_processes` (a list: a test that
builds its own WarrenProcesses, on any transport, appends them), `record_file` (a RecordFile in
the test's tmp_path), `pg` (a psycopg2 connection). After the test every process of `warren` and
`warren_processes` still running gets SIGTERM and must exit 0, no output may hold a sanitizer
report, and their logs are printed if the test failed.

Running one file by hand, with services from scripts/services/*.sh:
    source STATE/rabbitmq/env; source STATE/postgres/env
    WARREN_BIN=build/host/src/cli/warren WARREN_PLUGIN_DIR=$PWD/build/plugins \\
    PYTHONPATH=tests/integration/support /usr/bin/python3 -m pytest -p warren_testkit \\
        -p no:cacheprovider tests/integration/test_x.py
"""

import os
from typing import Callable, Iterator, List

import pytest

from testkit_broker import Broker, Message
from testkit_env import (SERVICE_VARIABLES, WaitTimeout, env, free_port, require_services,
                         services_required, unique_name, wait_until)
from testkit_records import Record, RecordFile
from testkit_services import Prometheus, pg_connect
from testkit_warren import WarrenProcess, warren_cli

__all__ = [
    "Broker", "Message", "Prometheus", "Record", "RecordFile", "SERVICE_VARIABLES", "WaitTimeout",
    "WarrenProcess", "env", "failed_so_far", "free_port", "pg_connect", "require_services",
    "services_required", "unique_name", "wait_until", "warren_cli",
]


def pytest_configure(config) -> None:
    # scripts/services/rabbitmq.sh's env file also exports WARREN_BROKER_URI, for people running
    # warren by hand; it would replace the broker of every test's config (some point at an
    # unreachable one on purpose). A test that wants it passes it in env_overrides.
    os.environ.pop("WARREN_BROKER_URI", None)
    config.addinivalue_line(
        "markers",
        "slow: the test's value is timing or behaviour, and faster tests run the same code; the "
        "asan preset deselects it (scripts/test sets PYTEST_ADDOPTS=\"-m 'not slow'\"). A file "
        "of such tests gets the ctest label `slow` instead (tests/integration/CMakeLists.txt).")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Remembers each phase's report on the test item, so fixtures can tell a failed test."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"warren_report_{report.when}", report)


def failed_so_far(request) -> bool:
    """Whether the test of this fixture request failed in its setup or call (for teardowns that
    keep logs)."""
    return any(getattr(getattr(request.node, f"warren_report_{phase}", None), "failed", False)
               for phase in ("setup", "call"))


@pytest.fixture
def broker() -> Iterator[Broker]:
    require_services("rabbitmq")
    with Broker() as connection:
        yield connection


@pytest.fixture
def warren_processes(request) -> Iterator[List[WarrenProcess]]:
    """A list for the test's own WarrenProcesses (of any kind, started or not; no broker needed).
    After the test each one still running gets SIGTERM and must exit 0, none may have died of a
    signal the test did not send, no output may hold a sanitizer report, and if the test failed
    their logs are printed and their files kept."""
    require_services("warren")
    processes: List[WarrenProcess] = []
    yield processes
    failed = failed_so_far(request)
    if failed:
        for process in processes:
            print(f"\n----- warren {process.workdir} -----\n{process.describe(tail_lines=200)}")
    WarrenProcess.cleanup_all(processes, keep_files=failed)


@pytest.fixture
def warren(warren_processes) -> Callable[..., WarrenProcess]:
    """warren(config_text, **WarrenProcess kwargs) -> a started WarrenProcess, stopped and checked
    after the test (warren_processes)."""
    require_services("rabbitmq")

    def start(config_text: str, **kwargs) -> WarrenProcess:
        process = WarrenProcess(config_text, **kwargs)
        warren_processes.append(process)
        return process.start()

    return start


@pytest.fixture
def record_file(tmp_path) -> RecordFile:
    return RecordFile(tmp_path / "records.tsv")


@pytest.fixture
def pg():
    require_services("postgres")
    connection = pg_connect()
    yield connection
    connection.close()
