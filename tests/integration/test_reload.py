"""Reloading a running host (issue 15): SIGHUP re-reads warren.toml and applies what changed,
worker by worker, against the real test broker. A worker whose prefetch and concurrency change is
replaced while the two others keep their consumers (same consumer tags) and nothing is lost; a
plugin file replaced on disk is loaded from its new content (every later message handled by the
new version, none by both, none lost); workers are added and removed; a reload with a syntax
error, an unknown plugin or a plugin whose init fails changes nothing and counts an error; fifty
reloads under load leak no file descriptors, threads or memory (slow); a rotated password file is
used on the next reconnect (slow); added topology is declared, removed topology only reported.

Each test runs its own `warren run` with queues of unique names (deleted afterwards)."""

import re
import signal
import threading
from pathlib import Path
from typing import Dict, List

import pika.exceptions
import pytest

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import (classic_queue, fixture_plugin_dir, scripted_worker, warren_config,
                            warren_options)
from testkit_metrics import scrape, value
from testkit_plugin_files import Versions, install_plugin, versioned_worker
from testkit_traffic import Tally, publish_bulk
from testkit_transport import broker_user
from testkit_config import cli_environment
from warren_testkit import free_port, unique_name, wait_until, warren_cli

APPLIED = r"reload: applied"
REFUSED = r"reload refused"


# ---- helpers ------------------------------------------------------------------------------------
def config_of(host: str, **sections) -> str:
    """warren_config with a fixed [host] name: a reload may not change it."""
    return warren_config(host={"name": host}, **sections)


def consumer_tags(broker, queue: str) -> List[str]:
    """The consumer tags on QUEUE (rabbitmqctl: the management API is not enabled)."""
    out = broker.rabbitmqctl("list_consumers", "-q", "--no-table-headers", "queue_name",
                             "consumer_tag")
    return sorted(line.split("\t")[1] for line in out.splitlines()
                  if line.split("\t")[0] == queue)


def consumers_of_queue(broker, queue: str):
    """QUEUE's consumer count, or None while it does not exist."""
    try:
        return broker.consumer_count(queue)
    except pika.exceptions.ChannelClosedByBroker as error:
        if error.reply_code == 404:
            broker.reconnect()
            return None
        raise


def reload_and_wait(process, pattern: str = APPLIED, timeout: float = 60) -> None:
    """SIGHUP, then waits for one more log line matching PATTERN than there was before."""
    before = len(re.findall(pattern, process.logs()))
    process.send_signal(signal.SIGHUP)
    wait_until(lambda: len(re.findall(pattern, process.logs())) > before, timeout,
               what=lambda: f"a new '{pattern}' in warren's log:\n{process.describe()}")


def reloads(endpoint: str, result: str) -> float:
    return value(scrape(endpoint), "warren_config_reloads_total", result=result) or 0.0


class Load:
    """Publishes to QUEUES in rounds of BATCH on a thread until stopped; the ids it published."""

    def __init__(self, queues: List[str], batch: int = 50):
        self.queues, self.batch = queues, batch
        self.ids: Dict[str, List[str]] = {queue: [] for queue in queues}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for queue in self.queues:
                self.ids[queue] += publish_bulk("", queue, self.batch, prefix=queue)
            self._stop.wait(0.05)

    def __enter__(self) -> "Load":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


# ---- tests --------------------------------------------------------------------------------------
def test_Reload_PrefetchAndConcurrencyOfOneOfThreeUnderLoad_OthersKeepTheirConsumersNothingLost(
        broker, created, warren, record_file):
    host = unique_name("reload-host")
    queues = [created.queue(f"reload-{n}") for n in "abc"]
    workers = [scripted_worker(f"w{n}", queue, record_file, prefetch=10, sleep_ms=2)
               for n, queue in zip("abc", queues)]
    process = warren(config_of(host, queues=[classic_queue(q) for q in queues], workers=workers),
                     **warren_options())
    process.wait_ready(timeout=30)
    tags = {queue: consumer_tags(broker, queue) for queue in queues}
    assert all(len(t) == 1 for t in tags.values()), tags

    with Load(queues) as load:
        wait_until(lambda: len(record_file.ids()) >= 100, 30, what="handling under load")
        workers[1]["prefetch"], workers[1]["concurrency"] = 40, 3
        process.config_path.write_text(
            config_of(host, queues=[classic_queue(q) for q in queues], workers=workers))
        reload_and_wait(process)
        handled = len(record_file.ids())  # and the load goes on a little after the reload
        wait_until(lambda: len(record_file.ids()) >= handled + 100, 30, what="handling after")
    published = [i for queue in queues for i in load.ids[queue]]

    assert consumer_tags(broker, queues[0]) == tags[queues[0]], "worker wa was re-subscribed"
    assert consumer_tags(broker, queues[2]) == tags[queues[2]], "worker wc was re-subscribed"
    replaced = consumer_tags(broker, queues[1])
    assert len(replaced) == 1 and replaced != tags[queues[1]], replaced
    wait_until(lambda: Tally.of(published, record_file.ids()).complete, 60,
               what=lambda: Tally.of(published, record_file.ids()).summary())
    Tally.of(published, record_file.ids()).assert_exactly_once()
    assert "changed: prefetch 10 -> 40, concurrency 1 -> 3" in process.logs()


def test_Reload_PluginFileReplacedUnderLoad_LaterMessagesRunTheNewVersionNoneTwiceNoneLost(
        broker, created, warren, tmp_path):
    host = unique_name("reload-host")
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir(mode=0o755)
    install_plugin("v1", plugin_dir)
    queue = created.queue("reload-so")
    records = Versions(tmp_path / "versions.tsv")
    config = config_of(host, queues=[classic_queue(queue)],
                           workers=[versioned_worker("wv", queue, records.path)])
    process = warren(config, **warren_options(plugin_dir=str(plugin_dir)))
    process.wait_ready(timeout=30)
    before = publish_bulk("", queue, 200, prefix="before")
    wait_until(lambda: len(records.ids()) >= 200, 30, what="the first batch")

    with Load([queue]) as load:
        install_plugin("v2", plugin_dir)
        reload_and_wait(process)
    after = publish_bulk("", queue, 200, prefix="after")
    published = before + load.ids[queue] + after
    wait_until(lambda: Tally.of(published, records.ids()).complete, 60,
               what=lambda: Tally.of(published, records.ids()).summary())

    Tally.of(published, records.ids()).assert_exactly_once()
    versions = records.version_of()
    assert {versions[i] for i in before} == {"v1"}
    assert {versions[i] for i in after} == {"v2"}, "a message after the reload ran the old .so"
    assert "changed: plugin file content" in process.logs()


def test_Reload_WorkerAddedAndWorkerRemoved_TheNewConsumesTheOldStops(
        broker, created, warren, record_file):
    host = unique_name("reload-host")
    first, second = created.queue("reload-keep"), created.queue("reload-new")
    queues = [classic_queue(first), classic_queue(second)]
    kept = scripted_worker("kept", first, record_file)
    process = warren(config_of(host, queues=queues, workers=[kept]), **warren_options())
    process.wait_ready(timeout=30)
    tag = consumer_tags(broker, first)

    process.config_path.write_text(config_of(
        host, queues=queues, workers=[kept, scripted_worker("added", second, record_file)]))
    reload_and_wait(process)
    assert consumer_tags(broker, first) == tag
    assert len(consumer_tags(broker, second)) == 1
    ids = publish_bulk("", second, 20, prefix="added")
    wait_until(lambda: Tally.of(ids, record_file.ids()).complete, 30)

    process.config_path.write_text(config_of(host, queues=queues, workers=[kept]))
    reload_and_wait(process)
    assert consumer_tags(broker, second) == [], "the removed worker still consumes"
    assert consumer_tags(broker, first) == tag
    Tally.of(ids, record_file.ids()).assert_exactly_once()


def test_Reload_SyntaxErrorUnknownPluginOrInitFailing_NothingChangesAndEachCountsAnError(
        broker, created, warren, record_file):
    host = unique_name("reload-host")
    queue = created.queue("reload-bad")
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    metrics = {"enabled": True, "listen": endpoint}
    config = config_of(host, queues=[classic_queue(queue)], metrics=metrics,
                       workers=[scripted_worker("w", queue, record_file)])
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    tag = consumer_tags(broker, queue)
    broken = {
        "syntax": config + "\n[[workers]\nname = \n",
        "unknown plugin": config.replace('plugin = "scripted"', 'plugin = "no_such_plugin"'),
        # the scripted plugin's constructor refuses an unknown default_action
        "init fails": config_of(host, queues=[classic_queue(queue)], metrics=metrics, workers=[
            scripted_worker("w", queue, record_file, default_action="no-such-action")]),
    }
    for errors, (what, text) in enumerate(broken.items(), start=1):
        assert text != config, what
        process.config_path.write_text(text)
        reload_and_wait(process, REFUSED)
        assert reloads(endpoint, "error") == errors, what
    assert reloads(endpoint, "success") == 0
    assert f"reload: {process.config_path}:" in process.logs(), "no file:line:col in the error"
    assert "no_such_plugin" in process.logs() and "no-such-action" in process.logs()

    assert consumer_tags(broker, queue) == tag, "a refused reload re-subscribed the worker"
    ids = publish_bulk("", queue, 10, prefix="after-bad")
    wait_until(lambda: Tally.of(ids, record_file.ids()).complete, 30)
    Tally.of(ids, record_file.ids()).assert_exactly_once()


def test_Reload_TopologyAddedIsDeclaredRemovedIsOnlyReported(broker, created, warren, record_file):
    host = unique_name("reload-host")
    consumed, extra = created.queue("reload-topo"), created.queue("reload-topo-extra")
    worker = scripted_worker("w", consumed, record_file)
    process = warren(config_of(host, queues=[classic_queue(consumed)], workers=[worker]),
                     **warren_options())
    process.wait_ready(timeout=30)
    assert consumers_of_queue(broker, extra) is None

    process.config_path.write_text(config_of(
        host, queues=[classic_queue(consumed), classic_queue(extra)], workers=[worker]))
    reload_and_wait(process)
    assert consumers_of_queue(broker, extra) == 0, "the added queue was not declared"
    assert f"reload: declared queue '{extra}'" in process.logs()

    process.config_path.write_text(config_of(host, queues=[classic_queue(consumed)],
                                             workers=[worker]))
    reload_and_wait(process)
    assert consumers_of_queue(broker, extra) == 0, "a reload deleted a queue"
    assert f"queue '{extra}' is no longer in the configuration" in process.logs()


def test_WarrenReload_PidFile_ChecksThenSignalsAndABadFileIsNeverSent(
        broker, created, warren, record_file, tmp_path):
    host = unique_name("reload-host")
    queue = created.queue("reload-cli")
    pid_file = tmp_path / "warren.pid"
    sections = {"queues": [classic_queue(queue)], "host": {"name": host,
                                                           "pid_file": str(pid_file)}}
    worker = scripted_worker("w", queue, record_file)
    process = warren(warren_config(workers=[worker], **sections), **warren_options())
    process.wait_ready(timeout=30)
    assert pid_file.read_text().strip() == str(process.pid)
    reload = ["reload", "-c", str(process.config_path), "--plugin-dir", fixture_plugin_dir()]

    process.config_path.write_text(warren_config(workers=[worker], **sections) + "\n[[workers]\n")
    bad = warren_cli(*reload, env_overrides=cli_environment())
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "received SIGHUP" not in process.logs()

    worker["prefetch"] = 7
    process.config_path.write_text(warren_config(workers=[worker], **sections))
    good = warren_cli(*reload, env_overrides=cli_environment())
    assert good.returncode == 0, good.stdout + good.stderr
    process.wait_for_log(r"reload: worker 'w' changed: prefetch 20 -> 7", timeout=60)
    process.wait_for_log(APPLIED, timeout=60)
    assert process.terminate() == 0
    assert not pid_file.exists(), "the pid file outlived the host"


@pytest.mark.slow  # six rabbitmqctl calls (a user made, changed, its connections closed): 15-40 s
def test_Reload_RotatedPasswordFile_UsedOnTheNextReconnect(broker, created, warren, record_file,
                                                           tmp_path):
    host = unique_name("reload-host")
    queue = created.queue("reload-password")
    password_file = tmp_path / "broker-password"
    with broker_user(broker, "reload-user") as user:
        password_file.write_text(user.password + "\n")
        password_file.chmod(0o600)
        config = config_of(host, queues=[classic_queue(queue)], broker={"user": user.name},
                           workers=[scripted_worker("w", queue, record_file)])
        process = warren(config, **warren_options(
            extra_args=["--broker-password-file", str(password_file)]))
        process.wait_ready(timeout=30)

        rotated = user.password.replace("pw-", "pw2-")
        broker.rabbitmqctl("change_password", user.name, rotated)
        password_file.write_text(rotated + "\n")
        reload_and_wait(process)
        assert "new broker credentials" in process.logs()
        connected = process.logs().count("1 worker(s) consuming")
        broker.close_connections_of(host, "closed by integration test: password rotated")
        wait_until(lambda: process.logs().count("1 worker(s) consuming") > connected, 30,
                   what=lambda: f"a reconnect with the rotated password: {process.describe()}")
        ids = publish_bulk("", queue, 10, prefix="rotated")
        wait_until(lambda: Tally.of(ids, record_file.ids()).complete, 30)
        assert rotated not in process.logs() and user.password not in process.logs()
        assert process.terminate() == 0


@pytest.mark.slow
def test_Reload_FiftyReloadsUnderLoad_NoFdThreadOrMemoryLeak(broker, created, warren,
                                                            record_file):
    host = unique_name("reload-host")
    queues = [created.queue(f"reload-leak-{n}") for n in "ab"]
    workers = [scripted_worker(f"w{n}", queue, record_file, prefetch=10)
               for n, queue in zip("ab", queues)]
    process = warren(config_of(host, queues=[classic_queue(q) for q in queues], workers=workers),
                     **warren_options())
    process.wait_ready(timeout=30)
    proc = Path(f"/proc/{process.pid}")

    def sample():
        rss = next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
        return len(list((proc / "fd").iterdir())), len(list((proc / "task").iterdir())), rss

    with Load(queues, batch=20) as load:
        for n in range(5):  # warm-up: allocator arenas, first connections
            workers[1]["prefetch"] = 10 + n % 2
            process.config_path.write_text(
                config_of(host, queues=[classic_queue(q) for q in queues], workers=workers))
            reload_and_wait(process)
        fds, threads, rss = sample()
        for n in range(50):
            workers[1]["prefetch"] = 10 + n % 2
            process.config_path.write_text(
                config_of(host, queues=[classic_queue(q) for q in queues], workers=workers))
            reload_and_wait(process)
    published = [i for queue in queues for i in load.ids[queue]]
    wait_until(lambda: Tally.of(published, record_file.ids()).complete, 60,
               what=lambda: Tally.of(published, record_file.ids()).summary())
    fds_after, threads_after, rss_after = sample()

    assert fds_after <= fds + 2, f"file descriptors {fds} -> {fds_after} over 50 reloads"
    assert threads_after <= threads + 2, f"threads {threads} -> {threads_after} over 50 reloads"
    assert rss_after <= rss + 20 * 1024, f"VmRSS {rss} -> {rss_after} kB over 50 reloads"
    Tally.of(published, record_file.ids()).assert_exactly_once()
