"""The `versioned` test plugin (tests/plugins/versioned), built twice as versioned_v1/ and
versioned_v2/libversioned.so, for tests that replace a plugin file under a running host: putting
a version in a plugin directory as a deploy does, and reading which version handled what."""

import shutil
from pathlib import Path
from typing import Dict, List

from testkit_config import fixture_plugin_dir


class Versions:
    """The versioned plugin's record file: worker \\t message_id \\t version per call."""

    def __init__(self, path: Path):
        self.path = path

    def rows(self) -> List[List[str]]:
        if not self.path.exists():
            return []
        return [line.split("\t") for line in self.path.read_text().splitlines() if line]

    def ids(self) -> List[str]:
        return [row[1] for row in self.rows()]

    def version_of(self) -> Dict[str, str]:
        return {row[1]: row[2] for row in self.rows()}


def install_plugin(version: str, plugin_dir: Path, file_name: str = "libversioned.so") -> None:
    """Puts versioned_<VERSION>/libversioned.so in PLUGIN_DIR (as FILE_NAME) as a deploy does: a
    new file renamed over the old one (never written in place under a running host)."""
    source = Path(fixture_plugin_dir()) / f"versioned_{version}" / "libversioned.so"
    staged = plugin_dir / f".{file_name}.new"
    shutil.copyfile(source, staged)
    staged.chmod(0o755)
    staged.replace(plugin_dir / file_name)


def versioned_worker(name: str, queue: str, record: Path, **settings: str) -> Dict[str, object]:
    return {"name": name, "plugin": "versioned", "queue": queue, "prefetch": 10,
            "allow_message_loss": True,
            "settings": {"record_file": str(record), **settings}}
