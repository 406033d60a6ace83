"""The integration-test kit's own guards, which every other test relies on to fail when it should:
a host left running is stopped with SIGTERM and must exit 0, a host that crashed by itself is
reported, sanitizer reports in any output fail the test, a missing metric is not a zero, and the
collectors stop at the expected count plus a settle period.

No service is needed: `warren` is played by a small shell script (FAKE_WARREN below) whose
behaviour the test chooses through FAKE_MODE.
"""

import signal
import textwrap
from pathlib import Path

import pytest

from testkit_metrics import MetricMissing, parse_exposition, total, value
from testkit_warren import WarrenProcess, sanitizer_reports, warren_cli

LEAK_REPORT = textwrap.dedent("""\
    =================================================================
    ==4242==ERROR: LeakSanitizer: detected memory leaks

    Direct leak of 64 byte(s) in 1 object(s) allocated from:
        #0 0x7f in operator new(unsigned long)
        #1 0x55 in warren::runtime::Host::stop() host.cc:120

    SUMMARY: AddressSanitizer: 64 byte(s) leaked in 1 allocation(s).
    """)

# A stand-in for `warren run`: says "consuming", then waits; FAKE_MODE decides what SIGTERM does.
FAKE_WARREN = textwrap.dedent("""\
    #!/bin/bash
    case "$FAKE_MODE" in
      clean)          trap 'exit 0' TERM ;;
      exit3)          trap 'exit 3' TERM ;;
      ignore)         trap '' TERM ;;
      leak)           trap 'cat "$FAKE_REPORT" >&2; exit 0' TERM ;;
      crash)          kill -SEGV $$ ;;
      ubsan-cli)      echo 'config.cc:12:9: runtime error: signed integer overflow' >&2; exit 0 ;;
    esac
    echo "1 worker(s) consuming" >&2
    while :; do sleep 0.05; done
    """)


@pytest.fixture
def fake_warren(tmp_path, monkeypatch):
    """fake_warren(mode) -> a started WarrenProcess running FAKE_WARREN in MODE."""
    binary = tmp_path / "warren"
    binary.write_text(FAKE_WARREN)
    binary.chmod(0o755)
    report = tmp_path / "report.txt"
    report.write_text(LEAK_REPORT)
    monkeypatch.setenv("WARREN_BIN", str(binary))
    monkeypatch.setenv("WARREN_PLUGIN_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_REPORT", str(report))
    started = []

    def start(mode: str) -> WarrenProcess:
        process = WarrenProcess("", env_overrides={"FAKE_MODE": mode}, name="fake-warren")
        started.append(process.start())
        return process

    yield start
    for process in started:
        if process.running():
            process.kill9()


def cleanup_failure(process: WarrenProcess) -> str:
    with pytest.raises(AssertionError) as failure:
        process.cleanup()
    return str(failure.value)


def test_Cleanup_HostStillRunningThatStopsCleanly_PassesAndRemovesItsFiles(fake_warren):
    host = fake_warren("clean")
    host.wait_ready(timeout=10)

    host.cleanup()

    assert host.returncode == 0
    assert not Path(host.workdir).exists()


def test_Cleanup_HostExitsNonZeroOnSigterm_FailsAndKeepsItsLogs(fake_warren):
    host = fake_warren("exit3")
    host.wait_ready(timeout=10)

    message = cleanup_failure(host)

    assert "exited 3 after SIGTERM at cleanup (expected 0)" in message
    assert Path(host.workdir).exists(), "the logs of a failed host are kept"


def test_Cleanup_HostIgnoresSigterm_IsKilledAndReported(fake_warren):
    host = fake_warren("ignore")
    host.wait_ready(timeout=10)

    problems = host.stop_and_check(stop_timeout=0.5)

    assert problems == ["did not stop within 0.5s of SIGTERM at cleanup; killed"]
    assert not host.running()


def test_Cleanup_SanitizerReportPrintedWhileStopping_FailsShowingTheReport(fake_warren):
    host = fake_warren("leak")
    host.wait_ready(timeout=10)

    message = cleanup_failure(host)

    assert "ERROR: LeakSanitizer: detected memory leaks" in message
    assert "warren::runtime::Host::stop() host.cc:120" in message
    assert host.returncode == 0, "the report alone fails the test, whatever the exit code"


def test_Cleanup_HostThatCrashedByItself_FailsNamingTheSignal(fake_warren):
    host = fake_warren("crash")
    host.wait(timeout=10)

    assert f"died of signal {int(signal.SIGSEGV)}, which the test did not send" \
        in cleanup_failure(host)


def test_Cleanup_HostTheTestKilledOnPurpose_Passes(fake_warren):
    host = fake_warren("clean")
    host.wait_ready(timeout=10)
    assert host.kill9() == -signal.SIGKILL

    host.cleanup()


def test_CleanupAll_OneHostFails_EveryHostIsStoppedBeforeTheTestFails(fake_warren):
    failing, clean = fake_warren("exit3"), fake_warren("clean")
    failing.wait_ready(timeout=10)
    clean.wait_ready(timeout=10)

    with pytest.raises(AssertionError, match="exited 3 after SIGTERM"):
        WarrenProcess.cleanup_all([failing, clean])

    assert clean.returncode == 0, "the second host was stopped too"


def test_WarrenCli_SanitizerReportInItsOutput_Fails(fake_warren):
    with pytest.raises(AssertionError, match="runtime error: signed integer overflow"):
        warren_cli("check", "-c", "/nonexistent", env_overrides={"FAKE_MODE": "ubsan-cli"})


@pytest.mark.parametrize("report, first_line", [
    (LEAK_REPORT, "==4242==ERROR: LeakSanitizer: detected memory leaks"),
    ("==77==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010",
     "==77==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010"),
    ("==================\nWARNING: ThreadSanitizer: data race (pid=9)\n  Write of size 8",
     "WARNING: ThreadSanitizer: data race (pid=9)"),
    ("dispatcher.cc:88:17: runtime error: load of value 7, which is not a valid value for type "
     "'bool'", "dispatcher.cc:88:17: runtime error: load of value 7, which is not a valid value "
     "for type 'bool'"),
    ("SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior dispatcher.cc:88:17 in",
     "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior dispatcher.cc:88:17 in"),
])
def test_SanitizerReports_EachKind_IsFoundOnceFromItsFirstLine(report, first_line):
    output = f"2026-01-01 info starting\n{report}\n2026-01-01 info stopped\n"
    [found] = sanitizer_reports(output)
    assert found.splitlines()[0] == first_line


def test_SanitizerReports_OrdinaryLogLinesNamingSanitizers_AreNone():
    output = ("info built without AddressSanitizer\n"
              "warn handler error: the runtime error count is 3\n"
              "info ThreadSanitizer suppressions: none\n")
    assert sanitizer_reports(output) == []


# ---- metrics: a missing series is not a zero ------------------------------------------------------
EXPOSITION = textwrap.dedent("""\
    # HELP warren_messages_settled_total Settled messages.
    # TYPE warren_messages_settled_total counter
    warren_messages_settled_total{outcome="ack",worker="a"} 3
    warren_messages_settled_total{outcome="ack",worker="b"} 4
    warren_messages_settled_total{outcome="retry",worker="a"} 0
    warren_broker_connected 1
    """)


def test_Metrics_TotalOfLabelledSamples_IsTheirSum():
    series = parse_exposition(EXPOSITION)
    assert total(series, "warren_messages_settled_total", outcome="ack") == 7
    assert total(series, "warren_messages_settled_total", worker="a", outcome="retry") == 0
    assert value(series, "warren_broker_connected") == 1


def test_Metrics_MissingSeriesOrLabels_IsAnErrorNotAZero():
    series = parse_exposition(EXPOSITION)
    with pytest.raises(MetricMissing, match="warren_messages_duplicates_total"):
        total(series, "warren_messages_duplicates_total", worker="a")
    with pytest.raises(MetricMissing):
        total(series, "warren_messages_settled_total", worker="c")
    assert value(series, "warren_messages_duplicates_total") is None


def test_Metrics_LineThatIsNoSample_FailsNamingIt():
    with pytest.raises(AssertionError, match="not a Prometheus sample line: 'garbage here'"):
        parse_exposition("garbage here\n")
