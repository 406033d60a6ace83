"""PostgreSQL and Prometheus as integration tests use them: a connection to the test database
(WARREN_TEST_PG_DSN), and a private Prometheus a test starts to scrape its warren's /metrics.
"""

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import requests

from testkit_env import env, wait_until

# tests/integration/support/ -> the repository root
_SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "scripts"


def pg_connect(dsn: Optional[str] = None, autocommit: bool = True):
    """A psycopg2 connection to the test database (autocommit unless asked otherwise)."""
    import psycopg2  # imported here: only PostgreSQL tests need it

    connection = psycopg2.connect(dsn or env("WARREN_TEST_PG_DSN"))
    connection.autocommit = autocommit
    return connection


class Prometheus:
    """A private Prometheus scraping one target (scripts/services/prometheus.sh)."""

    def __init__(self, target: str, interval: str = "1s", rule_files: Optional[List[str]] = None):
        self.target = target
        self.interval = interval
        self.rule_files = rule_files or []
        self.state_dir = Path(tempfile.mkdtemp(prefix="warren-prometheus-"))
        self.url: Optional[str] = None

    def start(self) -> "Prometheus":
        rules = {"WARREN_PROMETHEUS_RULE_FILES": " ".join(self.rule_files)}
        self._service("start", str(self.state_dir), "0", self.target, self.interval,
                      extra_env=rules)
        for line in (self.state_dir / "env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            if name == "WARREN_TEST_PROMETHEUS_URL":
                self.url = shlex.split(value)[0]
        return self

    def stop(self) -> None:
        """Stops the server and removes its data."""
        self._service("stop", str(self.state_dir))
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> "Prometheus":
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    def query(self, expression: str) -> List[dict]:
        """The instant-query result vector of a PromQL expression."""
        response = requests.get(f"{self.url}/api/v1/query", params={"query": expression}, timeout=5)
        response.raise_for_status()
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"Prometheus query {expression!r} failed: {json.dumps(body)}")
        return body["data"]["result"]

    def wait_for_value(self, expression: str, timeout: float = 30) -> float:
        """Waits until EXPRESSION returns a sample (the first scrape comes about 5 s after start)
        and returns the first sample's value."""
        result = wait_until(lambda: self.query(expression), timeout, interval=0.25,
                            what=f"Prometheus series {expression!r} scraped from {self.target}",
                            ignore=(requests.RequestException,))
        return float(result[0]["value"][1])

    def alerts(self) -> List[dict]:
        response = requests.get(f"{self.url}/api/v1/alerts", timeout=5)
        response.raise_for_status()
        return response.json()["data"]["alerts"]

    def _service(self, *args: str, extra_env: Optional[Dict[str, str]] = None) -> None:
        result = subprocess.run([str(_SCRIPTS_DIR / "services" / "prometheus.sh"), *args],
                                capture_output=True, text=True, timeout=60, check=False,
                                env={**os.environ, **(extra_env or {})})
        if result.returncode != 0:
            raise RuntimeError(f"prometheus.sh {' '.join(args)} failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}")
