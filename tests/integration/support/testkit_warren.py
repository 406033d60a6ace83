"""The `warren` binary under test, as a process a test starts, watches and stops.

WarrenProcess writes the test's TOML to a temp file, runs `$WARREN_BIN run -c FILE --plugin-dir
$WARREN_PLUGIN_DIR`, captures stdout and stderr to files, and offers what tests need: wait for a
log line, wait until ready, SIGTERM (graceful drain) or SIGKILL (crash). The child dies with the
test process (PR_SET_PDEATHSIG), so a killed or timed-out test leaves no warren behind.
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
from typing import Dict, Optional, Sequence

import requests

from testkit_env import env, wait_until

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
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
    """Runs `$WARREN_BIN ARGS...` to completion (check, publish, dlq, topology, version...)."""
    environment = {**os.environ, **(env_overrides or {})}
    return subprocess.run([env("WARREN_BIN"), *args], capture_output=True, text=True,
                          timeout=timeout, env=environment, input=input_text, check=False,
                          preexec_fn=_die_with_parent)


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

    @property
    def command(self) -> list:
        return [env("WARREN_BIN"), "run", "-c", str(self.config_path),
                "--plugin-dir", self.plugin_dir, *self.extra_args]

    def start(self) -> "WarrenProcess":
        if self._process is not None:
            raise RuntimeError("WarrenProcess.start: already started")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self._process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=err, env={**os.environ, **self.env_overrides},
                                             preexec_fn=_die_with_parent)
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
    def send_signal(self, sig: int) -> None:
        self._started().send_signal(sig)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM (graceful shutdown), wait up to `timeout`, return the exit code. A process that
        does not stop in time is killed and the test fails."""
        process = self._started()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError(f"warren did not stop within {timeout:g}s of SIGTERM: "
                                 f"{self.describe()}") from None

    def kill9(self) -> int:
        """SIGKILL, as a crash would; returns the exit code (-9)."""
        process = self._started()
        if process.poll() is None:
            process.kill()
        return process.wait()

    def cleanup(self, keep_files: bool = False) -> None:
        """Kills the process if it still runs; removes its files unless keep_files."""
        if self.running():
            self.kill9()
        if not keep_files:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "WarrenProcess":
        return self if self._process is not None else self.start()

    def __exit__(self, *_exc) -> None:
        self.cleanup()

    def _started(self) -> subprocess.Popen:
        if self._process is None:
            raise RuntimeError("WarrenProcess: not started (call start())")
        return self._process
