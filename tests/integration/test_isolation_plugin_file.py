"""Process isolation (issue 14) and the plugin file on disk: the host checks and reads the file
once, and every worker process it starts later runs those bytes, so a file replaced on disk (a
package upgrade) under a running host changes nothing until a reload or restart; and a plugin that
declares another name than the one the config gives it is refused as in isolation = "thread".

Each test runs the `versioned` test plugin (tests/plugins/versioned) from its own plugin directory
as worker "w" with isolation = "process" and one process, on a classic queue of a unique name."""

import os
import signal
from pathlib import Path

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import classic_queue, warren_config, warren_options
from testkit_plugin_files import Versions, install_plugin, versioned_worker
from testkit_traffic import publish_bulk
from testkit_warren import children_of
from warren_testkit import wait_until


def process_worker(queue: str, records: Versions, plugin: str = "versioned"):
    worker = versioned_worker("w", queue, records.path)
    worker.update({"plugin": plugin, "isolation": "process", "processes": 1})
    return worker


def plugin_directory(tmp_path: Path) -> Path:
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir(mode=0o755)
    return plugin_dir


def test_IsolationPluginFile_ReplacedOnDiskThenTheChildDies_TheNextChildRunsTheCheckedVersion(
        created, warren, tmp_path):
    plugin_dir = plugin_directory(tmp_path)
    install_plugin("v1", plugin_dir)
    queue = created.queue("iso-file")
    records = Versions(tmp_path / "versions.tsv")
    host = warren(warren_config(queues=[classic_queue(queue)],
                                workers=[process_worker(queue, records)]),
                  **warren_options(plugin_dir=str(plugin_dir)))
    host.wait_ready(timeout=30)
    before = publish_bulk("", queue, 5, prefix="before")
    wait_until(lambda: set(before) <= set(records.ids()), 30, what="the first batch handled")
    [child] = children_of(host.pid)

    install_plugin("v2", plugin_dir)  # an upgrade on disk, no reload
    os.kill(child, signal.SIGKILL)
    after = publish_bulk("", queue, 5, prefix="after")
    wait_until(lambda: set(after) <= set(records.ids()), 30,
               what=lambda: f"the second batch handled: {records.rows()}\n{host.describe()}")

    versions = records.version_of()
    assert {versions[i] for i in before + after} == {"v1"}, records.rows()
    assert len(records.ids()) == 10, "each message handled once"
    host.wait_for_log(r"worker process started again \(pid \d+\): plugin versioned v1")
    assert host.terminate() == 0, host.describe()


def test_IsolationPluginFile_ThePluginDeclaresAnotherName_RefusedAsInThreadMode(
        created, warren, tmp_path):
    plugin_dir = plugin_directory(tmp_path)
    install_plugin("v1", plugin_dir, file_name="libother.so")  # declares the name "versioned"
    queue = created.queue("iso-name")
    records = Versions(tmp_path / "versions.tsv")
    host = warren(warren_config(queues=[classic_queue(queue)],
                                workers=[process_worker(queue, records, plugin="other")]),
                  **warren_options(plugin_dir=str(plugin_dir)))
    # The words of isolation = "thread" (plugin_library.cc), naming the file on disk.
    host.wait_for_log(r"worker process failed to start: init: .*libother\.so.*refused: it "
                      r"declares the name \"versioned\" but was loaded as \"other\"")
    host.wait_for_log(r"crash loop", timeout=60)
    publish_bulk("", queue, 3, prefix="m")
    assert records.ids() == [], "nothing runs in a refused plugin"
    assert host.running(), host.describe()
    assert host.terminate() == 0, host.describe()
