"""Reading a running warren's /metrics: the one Prometheus text-format parser of the integration
tests, and lookups that tell a missing series from a zero.

A series that is not on /metrics is an error, never 0: a test that compares a count with 0 (no
duplicates, nothing dead-lettered) must not pass because the metric was renamed or never created.

    series = scrape("127.0.0.1:9464")
    value(series, "warren_broker_connected")                 # the one sample, None when absent
    total(series, "warren_messages_settled_total", worker="w", outcome="ack")   # sum; absent: fails
"""

import re
from typing import Dict, List, Optional, Tuple

import requests

Sample = Tuple[Dict[str, str], float]
Series = Dict[str, List[Sample]]

_SAMPLE_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class MetricMissing(AssertionError):
    """No sample of the series asked for (with those labels) is on /metrics."""


def parse_exposition(text: str) -> Series:
    """Prometheus text format 0.0.4 -> {series name: [(labels, value)]}. Comments and blank lines
    are skipped; any other line that is not a sample fails the test, naming it."""
    series: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE_LINE.match(line)
        try:
            number = float(match.group(3)) if match else None
        except ValueError:
            number = None
        assert number is not None, f"not a Prometheus sample line: {line!r}"
        name, labels = match.group(1), match.group(2)
        series.setdefault(name, []).append((dict(_LABEL.findall(labels or "")), number))
    return series


def scrape(endpoint: str, auth: Optional[Tuple[str, str]] = None, timeout: float = 5) -> Series:
    """GET http://ENDPOINT/metrics (host:port), parsed; an HTTP error status raises."""
    response = requests.get(f"http://{endpoint}/metrics", auth=auth, timeout=timeout)
    response.raise_for_status()
    return parse_exposition(response.text)


def _matching(series: Series, name: str, labels: Dict[str, str]) -> List[float]:
    return [number for sample_labels, number in series.get(name, [])
            if labels.items() <= sample_labels.items()]


def value(series: Series, name: str, **labels: str) -> Optional[float]:
    """The value of the one sample of NAME whose labels include LABELS; None when there is none.
    More than one such sample fails the test (the labels do not pick one series)."""
    matching = _matching(series, name, labels)
    assert len(matching) <= 1, f"{name}{labels} matches {len(matching)} series"
    return matching[0] if matching else None


def total(series: Series, name: str, **labels: str) -> float:
    """The sum of NAME's samples whose labels include LABELS. No such sample raises MetricMissing:
    a missing series is not a zero."""
    matching = _matching(series, name, labels)
    if not matching:
        present = [sample_labels for sample_labels, _ in series.get(name, [])]
        raise MetricMissing(f"no sample of {name}{labels} on /metrics (its samples: {present})")
    return sum(matching)
