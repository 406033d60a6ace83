"""Reads what the test plugin `scripted` recorded, so a test can count handler calls per message.

The plugin appends one line per handle call: `worker<TAB>message_id<TAB>attempt<TAB>redelivered
<TAB>action<LF>`, plus a sixth field `time` (wall-clock seconds since the epoch) when the plugin's
setting record_time = true. Lines are written whole, but a reader may see the last one
half-written: it is ignored until its newline arrives.
"""

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Union

from testkit_env import wait_until


@dataclass(frozen=True)
class Record:
    """One handle call seen by the scripted plugin."""

    worker: str
    message_id: str
    attempt: int
    redelivered: bool
    action: str
    time: Optional[float] = None  # seconds since the epoch, with record_time = true


def _parse(line: str, path: Path, number: int) -> Record:
    fields = line.split("\t")
    if len(fields) not in (5, 6):
        raise ValueError(f"{path}:{number}: expected 5 or 6 tab-separated fields (worker, "
                         f"message_id, attempt, redelivered, action[, time]), got {line!r}")
    worker, message_id, attempt, redelivered, action = fields[:5]
    return Record(worker=worker, message_id=message_id, attempt=int(attempt),
                  redelivered=redelivered.lower() in ("1", "true", "yes"), action=action,
                  time=float(fields[5]) if len(fields) == 6 else None)


class RecordFile:
    """The record file of one scripted-plugin run (it need not exist yet)."""

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def records(self) -> List[Record]:
        """Every complete line, in the order written."""
        if not self.path.exists():
            return []
        text = self.path.read_text()
        complete = text[: text.rfind("\n") + 1]
        return [_parse(line, self.path, number)
                for number, line in enumerate(complete.splitlines(), start=1) if line]

    def ids(self) -> List[str]:
        """message_id of each handle call, in order, with repeats for retries/redeliveries."""
        return [record.message_id for record in self.records()]

    def count_by_id(self) -> Counter:
        """How many handle calls each message_id had."""
        return Counter(self.ids())

    def wait_for_count(self, n: int, timeout: float = 30) -> List[Record]:
        """Waits until at least N handle calls are recorded; returns all records."""
        def enough():
            records = self.records()
            return records if len(records) >= n else None

        return wait_until(enough, timeout,
                          what=lambda: f"{n} records in {self.path} (have {len(self.records())})")
