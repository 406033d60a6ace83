"""The `warren` binary under test, as a process a test starts, watches and stops.

WarrenProcess writes the test's TOML to a temp file, runs `$WARREN_BIN run -c FILE --plugin-dir
$WARREN_PLUGIN_DIR`, captures stdout and stderr to files, and offers what tests need: wait for a
log line, wait until ready, SIGTERM (graceful drain) or SIGKILL (crash). The child dies with the
test process (PR_SET_PDEATHSIG), so a killed or timed-out test leaves no warren behind. Like
systemd's StateDirectory=, it sets STATE_DIRECTORY to a directory of the process's own (the
default [host] state_dir, where the crash journal goes), so no host writes to the machine's
/var/lib/warren; a test that needs the journal to outlive the process sets state_dir itself.

After the test, cleanup() stops a host that still runs the way an operator does, with SIGTERM, and
fails the test unless it exits 0: a host is killed with SIGKILL only where a test says so
(kill9()). It also fails the test when the host's output holds a sanitizer report (ASan, LSan,
UBSan, TSan): under the asan and tsan presets, a leak or a use-after-free during shutdown, after
the test's own checks, must not go unseen. warren_cli() applies the same check to every command it
runs.
"""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

import requests

from testkit_env import env, wait_until

_PR_SET_PDEATHSIG = 1

# How long a host may take to stop after SIGTERM at cleanup: generous, because a busy machine and
# an ASan build slow a graceful drain down, and a host that hangs is caught either way.
STOP_TIMEOUT = 60

# The first line of every report the sanitizers print: "==123==ERROR: AddressSanitizer: ...",
# "==123==ERROR: LeakSanitizer: detected memory leaks", "WARNING: ThreadSanitizer: data race",
# UBSan's "file.cc:10:5: runtime error: ..." and the SUMMARY line each of them ends with.
_SANITIZER_REPORT = re.compile(
    r"^(?:==\d+==\s*)?(?:ERROR|WARNING): (?:Address|Leak|Thread|UndefinedBehavior)Sanitizer\b.*$"
    r"|^SUMMARY: (?:Address|Leak|Thread|UndefinedBehavior)Sanitizer\b.*$"
    r"|^.*: runtime error: .*$", re.MULTILINE)


def sanitizer_reports(text: str, context_lines: int = 40) -> List[str]:
    """Each sanitizer report in TEXT (a process's output), as its first line and the
    CONTEXT_LINES that follow; [] when there is none."""
    lines = text.splitlines()
    starts = {text.count("\n", 0, match.start()) for match in _SANITIZER_REPORT.finditer(text)}
    reports, covered_until = [], -1
    for start in sorted(starts):
        if start <= covered_until:
            continue  # the SUMMARY line of a report already taken
        covered_until = start + context_lines
        reports.append("\n".join(lines[start:covered_until + 1]))
    return reports


def assert_no_sanitizer_report(text: str, whose: str) -> None:
    """Fails naming WHOSE output held a sanitizer report, and showing it."""
    reports = sanitizer_reports(text)
    assert not reports, (f"{len(reports)} sanitizer report(s) in the output of {whose}:\n"
                         + "\n----\n".join(reports))


def die_with_parent() -> None:
    """preexec_fn for a child that must not outlive the test (PR_SET_PDEATHSIG)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _metrics_listen_address(config_text: str) -> Optional[str]:
    """The host:port of the HTTP endpoint (metrics, /readyz) a config enables, if any: a string key
    `listen`/`listen_address`/`address` in a table whose name mentions metrics, http or admin."""
    try:
        config = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError:
        return None  # a test of invalid configs: no endpoint to poll

    def search(table: dict, path: str) -> Optional[str]:
        for key, value in table.items():
            here = f"{path}.{key}" if path else key
            if isinstance(value, dict):
                found = search(value, here)
                if found:
                    return found
            elif (key in ("listen", "listen_address", "address") and isinstance(value, str)
                  and re.search(r"metrics|http|admin|observability", path)):
                return value
        return None

    address = search(config, "")
    if address is None:
        return None
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "*", "[::]"):
        host = "127.0.0.1"
    return f"{host}:{port}"


def warren_cli(*args: str, timeout: float = 60, env_overrides: Optional[Dict[str, str]] = None,
               input_text: Optional[str] = None) -> subprocess.CompletedProcess:
    """Runs `$WARREN_BIN ARGS...` to completion (check, publish, dlq, topology, version...), with
    INPUT_TEXT on its standard input (none: /dev/null, never the test's own)."""
    environment = {**os.environ, **(env_overrides or {})}
    stdin = {"input": input_text} if input_text is not None else {"stdin": subprocess.DEVNULL}
    result = subprocess.run([env("WARREN_BIN"), *args], capture_output=True, text=True,
                            timeout=timeout, env=environment, check=False,
                            preexec_fn=die_with_parent, **stdin)
    assert_no_sanitizer_report(result.stdout + result.stderr, f"`warren {' '.join(args)}`")
    return result


def children_of(pid: int) -> List[int]:
    """The warren-worker children of PID (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and comm.startswith("warren-worker"):
            found.append(int(entry.name))
    return found


class WarrenProcess:
    """One `warren run` process with its own config file and log files."""

    def __init__(self, config_text: str, *, extra_args: Sequence[str] = (),
                 env_overrides: Optional[Dict[str, str]] = None, plugin_dir: Optional[str] = None,
                 ready_url: Optional[str] = None, ready_log: str = r"consuming",
                 name: str = "warren"):
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.config_path = self.workdir / "warren.toml"
        self.config_path.write_text(config_text)
        self.stdout_path = self.workdir / "stdout.log"
        self.stderr_path = self.workdir / "stderr.log"
        self.plugin_dir = plugin_dir or env("WARREN_PLUGIN_DIR")
        self.extra_args = list(extra_args)
        self.env_overrides = dict(env_overrides or {})
        listen = _metrics_listen_address(config_text)
        self.ready_url = ready_url or (f"http://{listen}/readyz" if listen else None)
        self.ready_log = ready_log
        self._process: Optional[subprocess.Popen] = None
        self._signals_sent: Set[int] = set()  # by the test: a death by one of them is no crash

    @property
    def command(self) -> list:
        return [env("WARREN_BIN"), "run", "-c", str(self.config_path),
                "--plugin-dir", self.plugin_dir, *self.extra_args]

    def start(self) -> "WarrenProcess":
        if self._process is not None:
            raise RuntimeError("WarrenProcess.start: already started")
        state_dir = self.workdir / "state"
        state_dir.mkdir(exist_ok=True)
        environment = {**os.environ, "STATE_DIRECTORY": str(state_dir), **self.env_overrides}
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self._process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=err, env=environment,
                                             preexec_fn=die_with_parent)
        return self

    # -- state -----------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self._started().pid

    @property
    def returncode(self) -> Optional[int]:
        return self._started().poll()

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def logs(self) -> str:
        """stdout then stderr, as text."""
        return self.stdout() + self.stderr()

    def describe(self, tail_lines: int = 60) -> str:
        """Command, exit status and the last log lines: for failure messages."""
        status = "running" if self.running() else f"exited with {self.returncode}"
        tail = "\n".join(self.logs().splitlines()[-tail_lines:])
        return f"`{' '.join(self.command)}` ({status}); last log lines:\n{tail}"

    # -- waiting ---------------------------------------------------------------------------------
    def wait_for_log(self, pattern: str, timeout: float = 30) -> re.Match:
        """The first match of regex PATTERN in the logs; fails early if the process exits."""
        regex = re.compile(pattern, re.MULTILINE)

        def matched():
            found = regex.search(self.logs())
            if not found and not self.running():
                raise AssertionError(f"warren exited before logging /{pattern}/: {self.describe()}")
            return found

        return wait_until(matched, timeout, interval=0.05,
                          what=lambda: f"log line /{pattern}/ from {self.describe()}")

    def wait_ready(self, timeout: float = 30) -> None:
        """Ready = /readyz answers 200 when the config enables the HTTP endpoint (or ready_url was
        given), else a log line matching ready_log."""
        if self.ready_url is None:
            self.wait_for_log(self.ready_log, timeout)
            return

        def ready():
            if not self.running():
                raise AssertionError(f"warren exited before it was ready: {self.describe()}")
            return requests.get(self.ready_url, timeout=1).status_code == 200

        wait_until(ready, timeout, interval=0.1, ignore=(requests.RequestException,),
                   what=lambda: f"{self.ready_url} to answer 200 from {self.describe()}")

    def wait(self, timeout: float = 30) -> int:
        """Waits for the process to exit by itself; returns its exit code."""
        try:
            return self._started().wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"warren did not exit within {timeout:g}s: {self.describe()}") from None

    # -- stopping --------------------------------------------------------------------------------
    def allow_death_by(self, sig: int) -> None:
        """The test makes the process die of SIG itself (a handler that aborts, say): cleanup
        does not count that death as a crash."""
        self._signals_sent.add(sig)

    def send_signal(self, sig: int) -> None:
        self._signals_sent.add(sig)
        self._started().send_signal(sig)

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM (graceful shutdown), wait up to `timeout`, return the exit code. A process that
        does not stop in time is killed and the test fails."""
        process = self._started()
        if process.poll() is None:
            self.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signals_sent.add(signal.SIGKILL)  # the failure below says why
            process.kill()
            process.wait()
            raise AssertionError(f"warren did not stop within {timeout:g}s of SIGTERM: "
                                 f"{self.describe()}") from None

    def kill9(self) -> int:
        """SIGKILL, as a crash would; returns the exit code (-9)."""
        process = self._started()
        self._signals_sent.add(signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        return process.wait()

    def stop_and_check(self, stop_timeout: float = STOP_TIMEOUT) -> List[str]:
        """Ends the process as an operator would and says what went wrong, if anything: a process
        still running gets SIGTERM and must exit 0 within STOP_TIMEOUT (else it is killed); one
        that died of a signal the test did not send (kill9, send_signal) crashed; and no output may hold a
        sanitizer report. A process that exited by itself with a code was judged by its test."""
        if self._process is None:
            return []
        found = []
        if self.running():
            self._process.send_signal(signal.SIGTERM)
            try:
                code = self._process.wait(stop_timeout)
                if code != 0:
                    found.append(f"exited {code} after SIGTERM at cleanup (expected 0)")
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
                found.append(f"did not stop within {stop_timeout:g}s of SIGTERM at cleanup; "
                             f"killed")
        elif self._process.returncode < 0 and -self._process.returncode not in self._signals_sent:
            found.append(f"died of signal {-self._process.returncode}, which the test did not send")
        found += [f"sanitizer report:\n{report}" for report in sanitizer_reports(self.logs())]
        return found

    def cleanup(self, keep_files: bool = False) -> None:
        """After the test: stops the process if it still runs (see stop_and_check()) and removes
        its files unless keep_files. Raises AssertionError naming every problem found (the files are
        then kept, for the logs)."""
        found = self.stop_and_check()
        if not keep_files and not found:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if found:
            raise AssertionError(f"warren {self.workdir}: " + "; ".join(found) + "\n"
                                 + self.describe(tail_lines=40))

    @staticmethod
    def cleanup_all(processes: Sequence["WarrenProcess"], keep_files: bool = False) -> None:
        """cleanup() of every process, all of them stopped before any problem fails the test."""
        problems = []
        for process in processes:
            try:
                process.cleanup(keep_files=keep_files)
            except AssertionError as problem:
                problems.append(str(problem))
        assert not problems, "\n\n".join(problems)

    def __enter__(self) -> "WarrenProcess":
        return self if self._process is not None else self.start()

    def __exit__(self, *_exc) -> None:
        self.cleanup()

    def _started(self) -> subprocess.Popen:
        if self._process is None:
            raise RuntimeError("WarrenProcess: not started (call start())")
        return self._process
