"""Runs chaos scenarios (scenarios.py) on the nodes of the environment and reports the account.

Called by tests/chaos/run, which starts the broker nodes (and PostgreSQL) and sets the
environment; see there. Prints each scenario's account as it ends, the table at the end, and with
--report FILE writes the table into FILE between the markers
`<!-- chaos-scenarios:begin -->` and `<!-- chaos-scenarios:end -->` (kept elsewhere untouched);
with --isolation process, between `<!-- chaos-scenarios-process:begin -->` and
`<!-- chaos-scenarios-process:end -->`, so each mode keeps a table of its own. --isolation is
repeatable: the scenarios run in each mode in turn, on the same nodes.
Exits 1 when any scenario lost a message, handled an unexpected one or failed a check of its own.
"""

import argparse
import os
import platform
import re
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kit_path  # noqa: E402,F401 - the integration kit, for the testkit_* imports
from account import Account  # noqa: E402
from fleet import ISOLATIONS  # noqa: E402
from nodes import nodes_from_env  # noqa: E402
from scenarios import SCENARIOS, Pace, run  # noqa: E402

COLUMNS = ["scenario", "confirmed", "handled", "lost", "duplicated", "unexpected",
           "dead-lettered", "recovery", "longest pause", "checks"]
# Each isolation mode's table between markers of its own; thread mode's kept their first name.
HEADINGS = {"thread": "## Scenarios", "process": "## Scenarios with process isolation"}


def markers(isolation: str):
    tag = "chaos-scenarios" if isolation == "thread" else f"chaos-scenarios-{isolation}"
    return f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"


def table(accounts) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for account in accounts:
        row = account.row()
        lines.append("| " + " | ".join(row[c].replace("|", "/") for c in COLUMNS) + " |")
    return "\n".join(lines)


def write_report(path: Path, accounts, pace: Pace, nodes: int, seconds: float,
                 isolation: str = "thread") -> None:
    text = path.read_text() if path.exists() else "# Reliability\n"
    system = platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    options = (" --short" if pace.short else "") + (
        f" --isolation {isolation}" if isolation != "thread" else "")
    measured = textwrap.fill(
        f"Measured {time.strftime('%Y-%m-%d')} by `tests/chaos/run{options}`"
        f" on {system}, {os.cpu_count()} cores, {nodes} RabbitMQ node(s) (3.10), 3 hosts, load "
        f"{pace.rate:g} messages/s; the whole run took {seconds / 60:.0f} min.", width=100)
    begin, end = markers(isolation)
    block = "\n".join([begin, measured, "", table(accounts), end])
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _m: block, text,
                      flags=re.S)
    else:
        text = text.rstrip("\n") + f"\n\n{HEADINGS[isolation]}\n\n" + block + "\n"
    path.write_text(text)


def run_mode(isolation: str, wanted, nodes, pace: Pace, workdir: Path, available: dict,
             last_mode: bool):
    """Runs the WANTED scenarios with the hosts' handlers in ISOLATION; returns the accounts and
    whether any failed. LAST_MODE: its last scenario is the run's last (may leave a node down)."""
    print(f"== isolation = \"{isolation}\" ({len(nodes)} node(s))", flush=True)
    accounts, failed = [], False
    by_number = {s.number: s for s in SCENARIOS}
    for position, number in enumerate(wanted):
        scenario = by_number[number]
        missing = [need for need in scenario.needs if not available[need]]
        if missing:
            print(f"== {scenario.number}. {scenario.title}: skipped (needs {', '.join(missing)})",
                  flush=True)
            continue
        print(f"== {scenario.number}. {scenario.title}", flush=True)
        t0 = time.monotonic()
        # Thread mode's work files keep their old place; another mode's go beside them.
        name = scenario.name if isolation == "thread" else f"{scenario.name}.{isolation}"
        try:
            account = run(scenario, nodes, pace, workdir / name, isolation=isolation,
                          last=last_mode and position == len(wanted) - 1)
        except Exception as error:  # noqa: BLE001 - one broken scenario must not hide the others
            traceback.print_exc()
            account = Account(scenario=f"{scenario.number}. {scenario.title}", confirmed=set(),
                              handled=[], failed_checks=[f"{type(error).__name__}: {error}"])
        print("  " + account.summary() + f"\n  ({time.monotonic() - t0:.0f} s)", flush=True)
        failed |= not account.ok()
        accounts.append(account)
    print(f"\n{isolation}:\n" + table(accounts) + "\n", flush=True)
    return accounts, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="CI: scenarios 1, 3, 8, small")
    parser.add_argument("--only", type=int, action="append", choices=[s.number for s in SCENARIOS],
                        help="scenario number (repeatable)")
    parser.add_argument("--rate", type=float, help="messages per second")
    parser.add_argument("--report", type=Path, help="write the table into this markdown file")
    parser.add_argument("--isolation", choices=ISOLATIONS, action="append",
                        help="where the hosts run their handlers ([[workers]] isolation); "
                        "repeatable: every scenario in each mode, on the same nodes "
                        "(default: thread)")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    nodes = nodes_from_env()
    pace = Pace(short=args.short, rate=args.rate or (60 if args.short else 150))
    # --short runs scenario 1 last: it may then leave the killed node down (saves CI ~15 s).
    wanted = args.only or ([3, 8, 1] if args.short else [s.number for s in SCENARIOS])
    isolations = list(dict.fromkeys(args.isolation or ["thread"]))
    available = {"cluster": len(nodes) > 1, "postgres": bool(os.environ.get("WARREN_TEST_PG_DSN"))}
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="warren-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    tempfile.tempdir = str(workdir)  # the hosts' own work dirs (WarrenProcess) go there too
    failed = False
    for index, isolation in enumerate(isolations):
        started = time.monotonic()
        # --short in process mode: the host's kill -9 only (its children go with it, their
        # windows come back), to keep CI's budget; the full run has every scenario in both.
        mode_wanted = [8] if args.short and not args.only and isolation == "process" else wanted
        accounts, mode_failed = run_mode(isolation, mode_wanted, nodes, pace, workdir, available,
                                         last_mode=index == len(isolations) - 1)
        failed |= mode_failed
        if args.report:
            write_report(args.report, accounts, pace, len(nodes), time.monotonic() - started,
                         isolation)
    print(f"work files in {workdir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
