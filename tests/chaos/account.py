"""The account of one chaos scenario: what became of every message (Jepsen style).

Inputs: the ids the publisher confirmed (load.py), every handler call the `scripted` test plugin
recorded on each host (tests/integration/support/testkit_records.py, with record_time = true),
the ids drained from the dead-letter queue, and when the fault began.

  lost          confirmed, and neither handled nor dead-lettered
  duplicated    ids handled more than once (extra_handles: how many calls beyond the first)
  unexpected    handled (or dead-lettered) but never confirmed
  recovery      from the fault to the first message handled after it by a host the fault hit
                (of the messages published after the fault: one already in a handler when the
                fault came says nothing about recovery)
  longest pause the longest time no host handled anything, from the fault to the end of the load
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple


@dataclass(frozen=True)
class Handled:
    host: str
    message_id: str
    time: float  # wall clock, seconds since the epoch


@dataclass
class Account:
    scenario: str
    confirmed: Set[str]
    handled: List[Handled]
    dead_lettered: Set[str] = field(default_factory=set)
    fault_at: Optional[float] = None
    fault_hosts: Tuple[str, ...] = ()  # the hosts the fault hit (empty: all)
    load_ended_at: Optional[float] = None
    sent_at: Dict[str, float] = field(default_factory=dict)  # id -> its first publish
    notes: List[str] = field(default_factory=list)
    failed_checks: List[str] = field(default_factory=list)  # the scenario's own expectations

    @property
    def handled_ids(self) -> Counter:
        return Counter(h.message_id for h in self.handled)

    @property
    def lost(self) -> Set[str]:
        return self.confirmed - set(self.handled_ids) - self.dead_lettered

    @property
    def duplicated(self) -> Dict[str, int]:
        return {i: n for i, n in self.handled_ids.items() if n > 1}

    @property
    def extra_handles(self) -> int:
        return sum(n - 1 for n in self.duplicated.values())

    @property
    def unexpected(self) -> Set[str]:
        return (set(self.handled_ids) | self.dead_lettered) - self.confirmed

    def recovery(self) -> Optional[float]:
        """Seconds from the fault to the first handle, by a host the fault hit, of a message
        published after the fault."""
        if self.fault_at is None:
            return None
        after = [h.time for h in self.handled
                 if self.sent_at.get(h.message_id, 0) >= self.fault_at
                 and (not self.fault_hosts or h.host in self.fault_hosts)]
        return min(after) - self.fault_at if after else None

    def longest_pause(self, hosts: Iterable[str] = ()) -> Optional[float]:
        """The longest gap between handles (by any of HOSTS; none: any host) from the fault to
        the end of the load."""
        if self.fault_at is None:
            return None
        hosts = set(hosts)
        end = self.load_ended_at or max((h.time for h in self.handled), default=self.fault_at)
        times = sorted(h.time for h in self.handled if self.fault_at <= h.time <= end
                       and (not hosts or h.host in hosts))
        points = [self.fault_at] + times + [end]
        return max(b - a for a, b in zip(points, points[1:]))

    def ok(self) -> bool:
        return not self.lost and not self.unexpected and not self.failed_checks

    def row(self) -> Dict[str, str]:
        def seconds(value: Optional[float]) -> str:
            return "-" if value is None else f"{value:.1f} s"

        return {"scenario": self.scenario, "confirmed": str(len(self.confirmed)),
                "handled": str(len(self.handled_ids)), "lost": str(len(self.lost)),
                "duplicated": str(len(self.duplicated)),
                "unexpected": str(len(self.unexpected)),
                "dead-lettered": str(len(self.dead_lettered)),
                "recovery": seconds(self.recovery()),
                "longest pause": seconds(self.longest_pause()),
                "checks": "ok" if not self.failed_checks else "FAILED: " + "; ".join(
                    self.failed_checks)}

    def summary(self) -> str:
        def sample(ids: Iterable[str]) -> str:
            ids = sorted(ids)
            return ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")

        row = self.row()
        text = (f"{self.scenario}: confirmed {row['confirmed']}, handled {row['handled']} "
                f"({len(self.handled)} calls), lost {row['lost']} [{sample(self.lost)}], "
                f"duplicated {row['duplicated']} ({self.extra_handles} extra calls), unexpected "
                f"{row['unexpected']} [{sample(self.unexpected)}], dead-lettered "
                f"{row['dead-lettered']}, recovery {row['recovery']}, longest pause "
                f"{row['longest pause']}")
        return "\n  ".join([text] + self.notes)
