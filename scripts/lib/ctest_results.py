"""Counts what one ctest run did, from its JUnit file (`ctest --output-junit FILE`), for the
summary of scripts/test: tests run, failed, and skipped, where a skip is a ctest test that did not
run (a GoogleTest GTEST_SKIP, a SKIP_REGULAR_EXPRESSION match) or a pytest case skipped inside an
integration test that ctest counts as passed (pytest's "N skipped" and `-rs` reasons). A skip must
be visible: CI runs as root with every service, so any skip there is worth a look.

Usage: ctest_results.py JUNIT_FILE
Prints one line of counts ("57 tests, 2 skipped" or "57 tests, 1 failed, 0 skipped"), then one
line per skip: "skipped: TEST[: pytest case]: reason", then per failed test "failed: TEST" and the
last lines of its output, each prefixed with "| " (CI shows only the end of the log, so the summary
must name what failed and why). Exit status 0, or 2 when the file is missing or unreadable (ctest
did not get as far as running tests)."""

import re
import sys
import xml.etree.ElementTree as ElementTree
from typing import List, Tuple

# pytest -q's last line: "5 passed, 1 skipped, 2 deselected in 12.34s" (with or without "=").
PYTEST_TOTALS = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s", re.M)
# pytest -rs: "SKIPPED [1] test_deb_packages.py:341: ptrace is not permitted here: ..."
PYTEST_SKIP = re.compile(r"^SKIPPED \[\d+\] ([^:\n]+:\d+): (.*)$", re.M)
# GoogleTest: "path/x_test.cc:42: Skipped\nthe reason\n"
GTEST_SKIP = re.compile(r": Skipped\n(.*)\n")
# How much of a failed test's output goes into the summary.
FAILURE_TAIL_LINES = 30


def pytest_skips(output: str) -> Tuple[int, List[str]]:
    """The number of pytest cases skipped in OUTPUT (its last totals line) and their reasons."""
    totals = PYTEST_TOTALS.findall(output)
    if not totals:
        return 0, []
    counts = dict((kind, int(n)) for n, kind in
                  (part.split(" ", 1) for part in totals[-1].split(", ")))
    reasons = [f"{where}: {reason.strip()}" for where, reason in PYTEST_SKIP.findall(output)]
    return counts.get("skipped", 0), reasons


def summarize(junit_file: str) -> Tuple[str, List[str]]:
    suite = ElementTree.parse(junit_file).getroot()
    tests = failed = skipped = 0
    details: List[str] = []
    failures: List[str] = []
    for case in suite.iter("testcase"):
        name = case.get("name", "?")
        output = case.findtext("system-out") or ""
        status = case.get("status")
        if status == "disabled":
            continue
        tests += 1
        if status == "fail":
            failed += 1
            failures.append(f"failed: {name}")
            tail = [line for line in output.splitlines() if line.strip()][-FAILURE_TAIL_LINES:]
            failures.extend(f"| {line[:300]}" for line in tail)
        elif status == "notrun":
            skipped += 1
            found = GTEST_SKIP.search(output)
            marker = case.find("skipped")
            reason = found.group(1).strip() if found and found.group(1).strip() else \
                (marker.get("message") if marker is not None else "not run")
            details.append(f"skipped: {name}: {reason}")
        if status in ("run", "fail"):
            count, reasons = pytest_skips(output)
            skipped += count
            details.extend(f"skipped: {name}: {reason}" for reason in reasons)
            if count > len(reasons):  # a reason line cut off with the output
                details.append(f"skipped: {name}: {count - len(reasons)} pytest case(s), "
                               "reason not in the output")
    counts = f"{tests} tests, " + (f"{failed} failed, " if failed else "") + f"{skipped} skipped"
    return counts, details + failures


def main() -> int:
    try:
        counts, details = summarize(sys.argv[1])
    except (OSError, ElementTree.ParseError, IndexError) as error:
        print(f"no test results ({error})")
        return 2
    print(counts)
    for line in details:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
