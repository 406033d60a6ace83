"""Names the tests that failed and then passed on their second try in one ctest run, from what
ctest printed (`--repeat until-pass:2 --output-on-failure`, as scripts/test runs it). A retry
keeps a rare timing failure from failing the run, and this keeps it from going unseen: each is
listed in scripts/test's summary with the end of what its failed try printed.

Usage: ctest_retried.py CTEST_OUTPUT_FILE
Prints per test that passed on a retry "retried: TEST" and the last lines of its failed try's
output, each prefixed with "| ". Nothing when no test was retried. Exit status 0, or 2 when the
file is unreadable."""

import re
import sys
from typing import Dict, List

# "12/33 Test #822: integration_topology ....***Failed   13.76 sec" (the first try), and
# "      Test #822: integration_topology ....   Passed   13.76 sec" (a retry has no count).
RESULT = re.compile(r"^\s*(?:\d+/\d+ )?Test +#\d+: (.+?) \.+\s*(\*{3}\S+|Passed)")
# Where a test's printed output ends: the next test's start or result, or ctest's totals.
BOUNDARY = re.compile(r"^\s*(Start +\d+: |(\d+/\d+ )?Test +#\d+: |\d+% tests passed)")
TAIL_LINES = 30


def retried(lines: List[str]) -> Dict[str, List[str]]:
    """{test: the end of its first failed try's output} for tests whose last result passed."""
    first_failure: Dict[str, List[str]] = {}
    last_result: Dict[str, str] = {}
    collecting = None
    for line in lines:
        found = RESULT.match(line)
        if found or BOUNDARY.match(line):
            collecting = None
        if found:
            name, result = found.groups()
            last_result[name] = result
            if result not in ("Passed", "***Skipped") and name not in first_failure:
                first_failure[name] = []
                collecting = first_failure[name]
            continue
        if collecting is not None and line.strip():
            collecting.append(line.rstrip("\n"))
    return {name: output[-TAIL_LINES:] for name, output in first_failure.items()
            if last_result.get(name) in ("Passed", "***Skipped")}


def main() -> int:
    try:
        with open(sys.argv[1], encoding="utf-8", errors="replace") as output:
            found = retried(output.readlines())
    except (OSError, IndexError) as error:
        print(f"no ctest output ({error})")
        return 2
    for name, tail in found.items():
        print(f"retried: {name}")
        for line in tail:
            print(f"| {line[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
