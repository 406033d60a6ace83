"""The plugin author's and the operator's verbs on the build tree: `warren plugin new` writes the
template (compiled into the binary) with the name filled in; `warren plugins` says which plugin
file each worker would load, what its descriptor says and whether the loader accepts it;
`--broker-password-file` logs in with a password read from a file (a systemd credential), and
refuses one that others may read; and
`warren run` under a NOTIFY_SOCKET speaks systemd's notify protocol (READY=1 once consuming,
STOPPING=1 on SIGTERM). The .deb packages themselves are tested by test_deb_packages.py."""

import filecmp
import shutil
import signal
import socket
import urllib.parse
from pathlib import Path
from typing import List, Optional

import pytest

from warren_testkit import WarrenProcess, env, require_services, unique_name, warren_cli

TEMPLATE_NAMES = ("my_plugin", "MyPlugin", "MY_PLUGIN")


def template_dir() -> Path:
    return Path(env("WARREN_SOURCE_DIR")) / "packaging" / "templates" / "plugin"


def files_under(root: Path) -> List[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not str(p.relative_to(root)).startswith("build"))


def plugin_new(*args: str) -> "subprocess.CompletedProcess":  # noqa: F821
    require_services("warren")
    return warren_cli("plugin", "new", *args)


# -- warren plugin new ----------------------------------------------------------------------------
def test_PluginNew_WithTheTemplatesOwnName_ReproducesTheTemplateByteForByte(tmp_path):
    target = tmp_path / "copy"

    result = plugin_new("my_plugin", str(target))

    assert result.returncode == 0, result.stderr
    assert files_under(target) == files_under(template_dir())
    for name in files_under(target):
        assert filecmp.cmp(target / name, template_dir() / name, shallow=False), \
            f"{name} differs from packaging/templates/plugin/{name}: rebuild warren"


def test_PluginNew_FillsInTheNameInFileNamesAndContents(tmp_path):
    target = tmp_path / "demo"

    result = plugin_new("demo", str(target))

    assert result.returncode == 0, result.stderr
    assert files_under(target) == [".gitignore", "CMakeLists.txt", "README.md", "conf/demo.toml",
                                   "src/demo.cc", "src/demo.h", "src/plugin.cc",
                                   "test/demo_test.cc"]
    for name in files_under(target):
        text = (target / name).read_text()
        leftovers = [n for n in TEMPLATE_NAMES if n in text]
        assert not leftovers, f"{name} still says {leftovers}"
    assert 'WARREN_PLUGIN(demo::Demo, "demo", "1.0.0")' in (target / "src/plugin.cc").read_text()
    assert "warren_add_plugin(demo" in (target / "CMakeLists.txt").read_text()
    assert "option(DEMO_BUILD_TESTS" in (target / "CMakeLists.txt").read_text()
    assert 'plugin = "demo"' in (target / "conf/demo.toml").read_text()
    assert str(target) in result.stdout, "the next steps name the directory"


def test_PluginNew_MultiWordName_BecomesCamelCaseClassAndDefaultDirectory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    result = plugin_new("order_audit2")  # into ./order_audit2

    assert result.returncode == 0, result.stderr
    header = (tmp_path / "order_audit2" / "src" / "order_audit2.h").read_text()
    assert "class OrderAudit2 final : public warren::Handler" in header
    assert "namespace order_audit2 {" in header


def test_PluginNew_ItsConfig_IsAValidWarrenConfigForThePlugin(tmp_path):
    plugin_new("demo", str(tmp_path / "demo"))

    result = warren_cli("topology", "apply", "--dry-run", "-c", str(tmp_path / "demo/conf/demo.toml"))

    assert result.returncode == 0, result.stderr
    assert "queue demo.work" in result.stdout, result.stdout


def test_PluginNew_NonEmptyDirectory_IsRefusedWithExit2AndLeftUntouched(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")

    result = plugin_new("demo", str(tmp_path))

    assert result.returncode == 2
    assert "exists and is not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_PluginNew_EmptyExistingDirectory_IsFilled(tmp_path):
    result = plugin_new("demo", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "src" / "demo.cc").is_file()


@pytest.mark.parametrize("name", ["Demo", "1demo", "de-mo", "class", "std", "a__b", "demo_",
                                  "x" * 65])
def test_PluginNew_InvalidName_IsRefusedWithExit2AndWritesNothing(tmp_path, name):
    target = tmp_path / "out"

    result = plugin_new(name, str(target))

    assert result.returncode == 2, result.stdout
    assert f'the name "{name}"' in result.stderr
    assert not target.exists()


# -- warren plugins -------------------------------------------------------------------------------
def example_config(tmp_path: Path, plugin_dir: str) -> Path:
    """conf/warren.toml with its plugin_dir replaced (the example plugins' workers)."""
    text = (Path(env("WARREN_SOURCE_DIR")) / "conf" / "warren.toml").read_text()
    text = text.replace('plugin_dir = "/usr/lib/warren/plugins"', f'plugin_dir = "{plugin_dir}"')
    path = tmp_path / "warren.toml"
    path.write_text(text)
    return path


def plugins(config: Path) -> "subprocess.CompletedProcess":  # noqa: F821
    require_services("warren")
    return warren_cli("plugins", "-c", str(config))


def host_fingerprint(output: str) -> str:
    first = output.splitlines()[0]
    assert ", built by " in first, first
    return first.split(", built by ", 1)[1]


def test_Plugins_ExamplePlugins_EachWorkerListsFileNameVersionAbiFingerprintAndLoads(tmp_path):
    plugin_dir = env("WARREN_PLUGIN_DIR")

    result = plugins(example_config(tmp_path, plugin_dir))

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"plugin_dir: {plugin_dir}" in out
    for worker, plugin in (("emails", "order_email"), ("ranking", "sales_ranking")):
        block = out.split(f"worker {worker}: plugin {plugin}\n", 1)[1].split("\n\n", 1)[0]
        assert f"  file         {plugin_dir}/lib{plugin}.so\n" in block
        assert f"  name         {plugin}\n" in block
        assert "  version      1.0.0\n" in block
        assert "  abi          1.2\n" in block  # built against this tree's SDK (ABI 1.2)
        assert f"  fingerprint  {host_fingerprint(out)}\n" in block, "built by the same compiler"
        assert block.rstrip("\n").endswith("  loads        yes"), block


def test_Plugins_WorldWritableAndMissingPlugin_AreListedWithTheReasonAndExit2(tmp_path):
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    copy = plugin_dir / "liborder_email.so"
    shutil.copy(Path(env("WARREN_PLUGIN_DIR")) / "liborder_email.so", copy)
    copy.chmod(0o666)  # the loader refuses files others may write

    result = plugins(example_config(tmp_path, str(plugin_dir)))

    assert result.returncode == 2, result.stdout
    emails = result.stdout.split("worker emails: plugin order_email\n", 1)[1].split("\n\n", 1)[0]
    assert "  loads        no: refused: writable by group and others (mode 0666)" in emails, emails
    ranking = result.stdout.split("worker ranking: plugin sales_ranking\n", 1)[1]
    assert f"  file         {plugin_dir}/libsales_ranking.so\n" in ranking
    assert "  loads        no: " in ranking, ranking


def test_Plugins_InvalidConfig_Exit2NamingFileLineAndColumn(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('[host]\nshutdown_timeout = "soon"\n')

    result = plugins(config)

    assert result.returncode == 2
    assert f"{config}:2:" in result.stderr


# -- the broker password from a file, and the notify protocol, against the test broker -----------
def uri_without_password() -> str:
    parts = urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI"))
    return f"{parts.scheme}://{parts.username or 'guest'}@{parts.hostname}:{parts.port}/"


def test_BrokerPasswordFile_LogsInWithTheFilesPasswordAndOverridesTheEnvironment(broker, tmp_path):
    require_services("warren")
    queue = broker.declare_queue(unique_name("pkg-password"), durable=False)
    config = tmp_path / "publish.toml"
    # publish_timeout 3 s: how long the refused publish keeps trying before it gives up.
    config.write_text(f'[broker]\nuri = "{uri_without_password()}"\npublish_timeout = "3s"\n')
    password_file = tmp_path / "broker-password"
    password_file.write_text(urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI")).password + "\n")
    password_file.chmod(0o600)  # a secret file others may read is refused
    publish = ("publish", "-c", str(config), "--exchange", "", "--routing-key", queue)
    try:
        good = warren_cli(*publish, "--body", "one", "--broker-password-file", str(password_file),
                          env_overrides={"WARREN_BROKER_PASSWORD": "wrong"})
        password_file.write_text("wrong\n")
        bad = warren_cli(*publish, "--body", "two", "--broker-password-file", str(password_file))
        missing = warren_cli(*publish, "--body", "three", "--broker-password-file",
                             str(tmp_path / "absent"))
        password_file.chmod(0o644)
        exposed = warren_cli(*publish, "--body", "four", "--broker-password-file",
                             str(password_file))

        assert good.returncode == 0, good.stderr
        assert broker.get(queue).body == b"one"
        assert bad.returncode == 1, bad.stderr
        assert missing.returncode == 2
        assert f"--broker-password-file {tmp_path / 'absent'}: cannot read it" in missing.stderr
        assert exposed.returncode == 2
        # "... readable by others" under root (which may share with its group), "by group and
        # others" under any other user.
        assert exposed.stderr.startswith(f'--broker-password-file "{password_file}" is readable '
                                         f"by "), exposed.stderr
        assert (f"(mode 0644); a secret must be readable by its owner only: chmod 600 "
                f"{password_file}" in exposed.stderr), exposed.stderr
    finally:
        broker.delete_queue(queue)


class FakeSystemd:
    """A datagram socket in NOTIFY_SOCKET's place."""

    def __init__(self, directory: Path):
        self.path = str(directory / "notify")
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(self.path)

    def receive(self, timeout: float) -> Optional[str]:
        self.socket.settimeout(timeout)
        try:
            return self.socket.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_for(self, state: str, timeout: float) -> List[str]:
        """Every notification up to and including the first holding line STATE."""
        seen: List[str] = []
        while True:
            message = self.receive(timeout)
            assert message is not None, f"no {state} within {timeout:g}s; got {seen}"
            seen.append(message)
            if state in message.splitlines():
                return seen

    def rest(self) -> List[str]:
        """Every notification still queued (call once the sender has exited)."""
        seen: List[str] = []
        self.socket.setblocking(False)
        try:
            while True:
                seen.append(self.socket.recv(4096).decode())
        except BlockingIOError:
            return seen

    def close(self) -> None:
        self.socket.close()


def test_Run_UnderSystemd_NotifiesReadyOnlyOnceConsumingAndStoppingOnSigterm(broker, tmp_path):
    require_services("warren")
    queue = unique_name("pkg-notify")
    parts = urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI"))
    # Reconnecting takes 3 s, longer than the 1 s between two looks at readiness once READY=1 is
    # said: the host certainly reports "not consuming", then "consuming" again.
    config = f"""
[host]
name = "{queue}"
shutdown_timeout = "10s"
[metrics]
enabled = false
[broker]
uri = "{uri_without_password()}"
reconnect_initial = "3s"
reconnect_max = "3s"
[[queues]]
name = "{queue}"
type = "classic"
durable = false
auto_delete = true
allow_message_loss = true
[[workers]]
name = "noop"
plugin = "noop"
queue = "{queue}"
"""
    systemd = FakeSystemd(tmp_path)
    process = WarrenProcess(config, plugin_dir=env("WARREN_FIXTURE_PLUGIN_DIR"),
                            env_overrides={"NOTIFY_SOCKET": systemd.path,
                                           "WARREN_BROKER_PASSWORD": parts.password})
    try:
        process.start()
        before_ready = systemd.wait_for("READY=1", timeout=30)
        assert broker.consumer_count(queue) == 1, "READY=1 before the worker consumes"
        # A lost connection: the host tells systemd it is not consuming, then that it is again,
        # but it is ready once, not once per connection.
        assert len(broker.close_connections_of(queue, "systemd notify test")) == 2
        reconnected = systemd.wait_for("STATUS=consuming", timeout=60)

        process.send_signal(signal.SIGTERM)
        stopping = systemd.wait_for("STOPPING=1", timeout=15)

        assert process.wait(timeout=30) == 0, process.describe()
        after_ready = reconnected + stopping + systemd.rest()
        assert before_ready[0] == "STATUS=starting: connecting to the broker", before_ready
        assert "STATUS=consuming" in before_ready[-1].splitlines()
        assert reconnected == ["STATUS=not consuming: reconnecting to the broker",
                               "STATUS=consuming"], reconnected
        assert [m for m in after_ready if "READY=1" in m.splitlines()] == [], after_ready
        assert stopping[-1].startswith("STOPPING=1\nSTATUS=stopping")
    finally:
        process.cleanup(keep_files=False)
        systemd.close()
