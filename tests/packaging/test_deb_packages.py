"""The .deb packages, for real, on this machine (issue 6): `cpack -G DEB` in the build tree makes
warren_<version>_<arch>.deb and warren-dev_<version>_<arch>.deb; `dpkg -i` installs the host, its
conffile, the plugin directory, the `warren` user and the systemd units (which `systemd-analyze`
verifies and rates); the plugin template builds out of tree against the installed warren-dev (its
harness tests pass) and the installed /usr/bin/warren runs it against the test broker; `warren
plugin new` makes a project that builds; `dpkg -r` leaves no process and nothing but the conffile;
`dpkg -P` leaves nothing at all.

It installs into /usr and /etc, so it runs only as root and only when asked: scripts/test's
Packaging step sets WARREN_PACKAGE_TESTS=1. It refuses to run when warren or warren-dev is already
installed (it would remove them), and purges what it installed even when a step fails. The tests
below run in order and share the installation."""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import urllib.parse
from pathlib import Path
from typing import Dict, List, Set

import pytest
import requests

from warren_testkit import WarrenProcess, env, free_port, unique_name, wait_until

PACKAGES = ("warren", "warren-dev")
WARREN = "/usr/bin/warren"
# Besides the files in the packages, what the maintainer scripts (packaging/debian/) create: the
# state directory (postinst) and `systemctl enable` links (removed by postrm purge). Only these
# paths are compared before and after, never whole trees: CI machines are shared, and any other
# process may write to /etc or /var/lib while this test runs.
MAINTAINER_SCRIPT_TREES = ("/etc/warren", "/var/lib/warren")
ENABLEMENT_LINKS = ("/etc/systemd/system/*.wants/warren.service",
                    "/etc/systemd/system/*.wants/warren@*.service")
MAX_EXPOSURE = 2.5


def run(*command: str, cwd=None, env_overrides: Dict[str, str] = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env_overrides or {})}
    return subprocess.run(list(command), cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=timeout, check=False)


def ok(*command: str, **kwargs) -> subprocess.CompletedProcess:
    result = run(*command, **kwargs)
    assert result.returncode == 0, (f"`{' '.join(command)}` exited {result.returncode}:\n"
                                    f"{result.stdout}\n{result.stderr}")
    return result


def installed(package: str) -> bool:
    status = run("dpkg-query", "-W", "-f=${db:Status-Status}", package)
    return status.returncode == 0 and status.stdout.strip() not in ("", "not-installed")


def package_contents(deb: Path) -> Set[str]:
    """Every path the .deb holds (files, directories, links), as absolute paths."""
    paths = set()
    for line in ok("dpkg-deb", "--contents", str(deb)).stdout.splitlines():
        name = line.split(None, 5)[5].split(" -> ")[0]  # mode owner size date time NAME[ -> TARGET]
        path = os.path.normpath("/" + name)
        if path != "/":
            paths.add(path)
    return paths


def is_ours(directory: str) -> bool:
    """A directory no other package uses: named after warren itself, or made by our scripts."""
    return os.path.basename(directory).lower() in PACKAGES or directory in MAINTAINER_SCRIPT_TREES


def snapshot(contents: Set[str]) -> Set[str]:
    """Which of our paths exist now: the packages' CONTENTS and their parent directories up to /,
    what the maintainer scripts create, and anything at all inside directories of ours
    (/usr/lib/warren, /usr/include/warren, /var/lib/warren, ...), where a stray file would hide."""
    candidates = set(contents) | set(MAINTAINER_SCRIPT_TREES)
    for path in contents:
        candidates.update(str(parent) for parent in Path(path).parents if str(parent) != "/")
    for pattern in ENABLEMENT_LINKS:
        candidates.update(glob.glob(pattern))
    present = {path for path in candidates if os.path.lexists(path)}
    for directory in [p for p in present if is_ours(p) and not os.path.islink(p)]:
        for root, subdirs, files in os.walk(directory):
            present.update(os.path.join(root, name) for name in subdirs + files)
    return present


def warren_processes() -> List[str]:
    """Processes running the installed binary (also after it was deleted)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe").startswith(WARREN):
                found.append(pid)
        except OSError:
            continue  # gone, or a kernel thread
    return found


def uri_without_password() -> str:
    parts = urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI"))
    return f"{parts.scheme}://{parts.username or 'guest'}@{parts.hostname}:{parts.port}/"


def broker_password() -> str:
    return urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI")).password or "guest"


def cmake_build(source: Path, build: Path) -> None:
    """Configures, builds and tests SOURCE as a plugin author would, finding Warren where the
    package put it: no CMAKE_PREFIX_PATH or Warren_DIR from this environment."""
    clean = {k: "" for k in ("CMAKE_PREFIX_PATH", "Warren_DIR", "CMAKE_MODULE_PATH")}
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    ok("cmake", "-S", str(source), "-B", str(build), *generator, env_overrides=clean)
    ok("cmake", "--build", str(build), "-j", str(os.cpu_count() or 2), env_overrides=clean)
    ok("ctest", "--test-dir", str(build), "--output-on-failure")


# -- the shared installation ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> Dict[str, Path]:
    """Builds both packages, notes which of their paths exist already, installs them; purges
    them at the end."""
    if os.environ.get("WARREN_PACKAGE_TESTS") != "1":
        pytest.skip("installs .deb packages into this machine, so it runs only from scripts/test's "
                    "Packaging step: WARREN_PACKAGE_TESTS=1 is not set")
    if os.geteuid() != 0:
        pytest.fail("the Packaging step needs root (dpkg -i); scripts/test skips it otherwise",
                    pytrace=False)
    already = [p for p in PACKAGES if installed(p)]
    if already:
        pytest.fail(f"{', '.join(already)} already installed on this machine: this test would "
                    f"remove it; `dpkg -P {' '.join(already)}` first, or skip the Packaging step",
                    pytrace=False)

    out = tmp_path_factory.mktemp("debs")
    ok("cpack", "-G", "DEB", "-B", str(out), cwd=env("WARREN_BUILD_DIR"))
    arch = ok("dpkg", "--print-architecture").stdout.strip()
    version = env("WARREN_VERSION")
    debs = {p: out / f"{p}_{version}_{arch}.deb" for p in PACKAGES}
    contents = set().union(*(package_contents(deb) for deb in debs.values()))
    state = {"contents": contents, "before": snapshot(contents), **debs}
    try:
        ok("dpkg", "-i", str(debs["warren"]), str(debs["warren-dev"]))
        yield state
    finally:
        # Whatever happened: nothing of ours stays on the machine.
        for pid in warren_processes():
            os.kill(int(pid), signal.SIGKILL)
        present = [p for p in reversed(PACKAGES) if installed(p)]
        if present:
            run("dpkg", "--purge", *present)


# -- the tests, in order --------------------------------------------------------------------------
def test_Packages_AreNamedAfterPackageVersionAndArchitecture(packages):
    for package in PACKAGES:
        deb = packages[package]
        assert deb.is_file(), f"cpack did not make {deb.name}: {sorted(p.name for p in deb.parent.iterdir())}"
        assert ok("dpkg-deb", "-f", str(deb), "Package").stdout.strip() == package
    # The SDK's testing library links the host's config loader (toml++) and plugin loader
    # (Boost.DLL, header-only over std::filesystem): a plugin's tests need their headers.
    assert ok("dpkg-deb", "-f", str(packages["warren-dev"]), "Depends").stdout.strip() == \
        f"warren (= {env('WARREN_VERSION')}), libtomlplusplus-dev, libboost-dev (>= 1.74)"
    # libpq and SQLite are opened with dlopen when used (host/src/system_library), so
    # dpkg-shlibdeps cannot see them: the package names them itself.
    runtime_depends = ok("dpkg-deb", "-f", str(packages["warren"]), "Depends").stdout
    for library in ("libpq5", "libsqlite3-0"):
        assert library in runtime_depends, f"warren does not depend on {library}: {runtime_depends}"


def test_Warren_InstallsBinaryConffilePluginsUserStateDirAndUnits(packages):
    assert ok(WARREN, "version").stdout.startswith(f"warren {env('WARREN_VERSION')} ")
    conffiles = ok("dpkg-query", "-W", "-f=${Conffiles}", "warren").stdout
    assert "/etc/warren/warren.toml" in conffiles

    plugin_dir = Path("/usr/lib/warren/plugins")
    for path in (plugin_dir, *plugin_dir.iterdir()):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (0, 0), f"{path} is not root-owned"
        assert info.st_mode & 0o022 == 0, f"{path} is writable by group or others"
    assert sorted(p.name for p in plugin_dir.iterdir()) == ["liborder_email.so",
                                                            "libsales_ranking.so"]

    user = ok("getent", "passwd", "warren").stdout.strip().split(":")
    assert int(user[2]) < 1000 and user[6] == "/usr/sbin/nologin", user
    for directory in ("/var/lib/warren", "/var/lib/warren/emails"):  # emails: conf's mail spool
        state = Path(directory).stat()
        assert state.st_uid == int(user[2]) and state.st_mode & 0o777 == 0o750, directory
    for unit in ("warren.service", "warren@.service"):
        assert Path("/lib/systemd/system", unit).is_file()


def test_PackagedConfig_PassesCheckAsTheWarrenUserWithACredentialFile(packages):
    # As the unit runs it: user warren, the password from a file (systemd's credential directory)
    # given with --broker-password-file, a state directory of its own laid out like
    # /var/lib/warren (which stays untouched: state there would rightly survive dpkg -r).
    scratch = Path(tempfile.mkdtemp(prefix="warren-service-"))
    try:
        scratch.chmod(0o755)
        (scratch / "broker-password").write_text("guest\n")
        # As systemd leaves a credential: readable by the service's user alone (warren refuses a
        # secret file others may read).
        (scratch / "broker-password").chmod(0o600)
        shutil.chown(scratch / "broker-password", "warren", "warren")
        (scratch / "state" / "emails").mkdir(parents=True)
        shutil.chown(scratch / "state", "warren", "warren")
        shutil.chown(scratch / "state" / "emails", "warren", "warren")

        result = ok("runuser", "-u", "warren", "--", "env", f"WARREN_STATE_DIR={scratch / 'state'}",
                    WARREN, "check", "-c", "/etc/warren/warren.toml",
                    f"--broker-password-file={scratch / 'broker-password'}")
        plugins = ok(WARREN, "plugins", "-c", "/etc/warren/warren.toml")
    finally:
        shutil.rmtree(scratch)

    assert "OK" in result.stdout
    assert plugins.stdout.count("  loads        yes") == 2, plugins.stdout


def test_SystemdUnits_VerifyCleanAndExposureAtMost2_5(packages, capsys):
    scores = {}
    for unit in ("/lib/systemd/system/warren.service", "warren@orders.service"):
        verify = run("systemd-analyze", "verify", unit)
        assert verify.returncode == 0 and verify.stdout + verify.stderr == "", \
            f"systemd-analyze verify {unit}:\n{verify.stdout}{verify.stderr}"
        security = ok("systemd-analyze", "security", "--offline=true", "--no-pager", unit)
        found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
        assert found, security.stdout
        scores[unit] = float(found.group(1))
    with capsys.disabled():
        print(f"\nsystemd-analyze security --offline=true exposure: {scores}")
    assert all(score <= MAX_EXPOSURE for score in scores.values()), scores


@pytest.fixture(scope="module")
def template_build(packages, tmp_path_factory) -> Path:
    """packaging/templates/plugin/, copied and built out of tree against the installed package."""
    project = tmp_path_factory.mktemp("template") / "my_plugin"
    shutil.copytree(Path(env("WARREN_SOURCE_DIR")) / "packaging" / "templates" / "plugin", project,
                    ignore=shutil.ignore_patterns("build*"))
    cmake_build(project, project / "build")
    return project / "build"


def test_TemplatePlugin_BuildsOutOfTreeAgainstWarrenDevAndItsHarnessTestsPass(template_build):
    plugin = template_build / "plugins" / "libmy_plugin.so"
    assert plugin.is_file()
    exported = ok("nm", "-D", "--defined-only", str(plugin)).stdout.split()
    assert [s for s in exported if not re.fullmatch(r"[0-9a-f]+|[A-Za-z]", s)] == \
        ["warren_plugin_entry"], "hidden visibility: only the entry point is exported"
    listing = ok(WARREN, "plugins", "-c",
                 str(template_build.parent / "conf" / "my_plugin.toml"),
                 "--plugin-dir", str(template_build / "plugins")).stdout
    assert "  name         my_plugin\n" in listing and "  loads        yes" in listing, listing
    assert "(differs from the host's)" not in listing, listing


def test_TemplatePlugin_RunsWithTheInstalledHostAndHandlesAMessage(template_build, broker,
                                                                     monkeypatch):
    monkeypatch.setenv("WARREN_BIN", WARREN)
    queue = unique_name("pkg-template")
    port = free_port()
    config = f"""
[host]
name = "{queue}"
shutdown_timeout = "10s"
[metrics]
listen = "127.0.0.1:{port}"
[broker]
uri = "{uri_without_password()}"
[[queues]]
name = "{queue}"
type = "quorum"
allow_message_loss = true
[[workers]]
name = "my_plugin"
plugin = "my_plugin"
queue = "{queue}"
"""
    process = WarrenProcess(config, plugin_dir=str(template_build / "plugins"),
                            env_overrides={"WARREN_BROKER_PASSWORD": broker_password()})
    try:
        process.start()
        process.wait_ready(timeout=60)
        message_id = broker.publish("", queue, "hello from the package test")

        process.wait_for_log(rf"handled message {message_id} \(27 bytes, routing key {queue}\)",
                             timeout=30)
        wait_until(lambda: broker.queue_counts(queue) == (0, 0), timeout=30,
                   what=lambda: f"{queue} empty and acked, now {broker.queue_counts(queue)}")
        assert process.terminate(timeout=30) == 0, process.describe()
    finally:
        process.cleanup()
        broker.delete_queue(queue)


def unit_syscall_filter(unit: Path) -> Set[str]:
    """The syscalls UNIT's SystemCallFilter= lines allow, groups expanded by systemd-analyze."""
    def expand(names: List[str]) -> Set[str]:
        found: Set[str] = set()
        for name in names:
            if not name.startswith("@"):
                found.add(name)
                continue
            listing = ok("systemd-analyze", "syscall-filter", "--no-pager", name).stdout
            members = [line.strip() for line in listing.splitlines()[1:]
                       if line.strip() and not line.strip().startswith("#")]
            found |= expand(members)
        return found

    allowed: Set[str] = set()
    denied: Set[str] = set()
    for line in unit.read_text().splitlines():
        if line.startswith("SystemCallFilter="):
            value = line.split("=", 1)[1].split()
            if value[0].startswith("~"):
                denied |= expand([value[0][1:], *value[1:]])
            else:
                allowed |= expand(value)
    return allowed - denied


def test_InstalledHost_RunningAPlugin_UsesOnlySyscallsTheUnitsFilterAllows(template_build, broker,
                                                                          tmp_path):
    # No systemd runs here to enforce the unit's seccomp filter, so trace a whole run instead:
    # start, consume, handle, publish, graceful stop.
    if not shutil.which("strace"):
        pytest.fail("strace is missing (scripts/bootstrap installs it)", pytrace=False)
    queue = unique_name("pkg-syscalls")
    port = free_port()
    config = tmp_path / "warren.toml"
    config.write_text(f"""
[host]
name = "{queue}"
shutdown_timeout = "10s"
[metrics]
listen = "127.0.0.1:{port}"
[broker]
uri = "{uri_without_password()}"
[[queues]]
name = "{queue}"
type = "classic"
durable = false
allow_message_loss = true
[[workers]]
name = "my_plugin"
plugin = "my_plugin"
queue = "{queue}"
""")
    password = tmp_path / "broker-password"
    password.write_text(broker_password())
    password.chmod(0o600)  # a secret file others may read is refused
    trace, log = tmp_path / "trace", tmp_path / "log"
    with open(log, "wb") as output:
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-o", str(trace), WARREN, "run", "-c",
                                   str(config), "--plugin-dir", str(template_build / "plugins"),
                                   f"--broker-password-file={password}"],
                                  stdout=output, stderr=subprocess.STDOUT)
    try:
        def host_pid():
            if tracer.poll() is not None:
                if "PTRACE" in log.read_text(errors="replace"):
                    pytest.skip(f"ptrace is not permitted here: {log.read_text()}")
                raise AssertionError(f"warren under strace exited: {log.read_text()}")
            # The child running warren: strace first forks short-lived children of its own to
            # probe what ptrace supports, and on a busy machine the first child seen is one.
            for child in Path(f"/proc/{tracer.pid}/task/{tracer.pid}/children").read_text().split():
                try:
                    if os.readlink(f"/proc/{child}/exe") == WARREN:
                        return int(child)
                except OSError:
                    continue  # gone already
            return None

        pid = wait_until(host_pid, timeout=30, what="warren started under strace")
        wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).ok,
                   timeout=60, what=lambda: f"/readyz of the traced host: {log.read_text()}",
                   ignore=(requests.RequestException,))
        message_id = broker.publish("", queue, "traced")
        wait_until(lambda: f"handled message {message_id}" in log.read_text(), timeout=30,
                   what=lambda: f"the traced message handled: {log.read_text()}")
        os.kill(pid, signal.SIGTERM)
        assert tracer.wait(timeout=60) == 0, log.read_text()
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        broker.delete_queue(queue)

    used = set(re.findall(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", trace.read_text(), re.M))
    assert len(used) > 20, f"the trace looks empty: {sorted(used)}"
    for unit in ("warren.service", "warren@.service"):
        outside = used - unit_syscall_filter(Path("/lib/systemd/system") / unit)
        assert not outside, f"{unit}'s SystemCallFilter would refuse {sorted(outside)} (EPERM)"


def test_PluginNew_WithTheInstalledBinary_MakesAProjectThatBuildsAndPassesItsTests(
        packages, tmp_path):
    project = tmp_path / "demo"

    ok(WARREN, "plugin", "new", "demo", str(project))
    cmake_build(project, project / "build")

    assert (project / "build" / "plugins" / "libdemo.so").is_file()


def test_Remove_LeavesOnlyTheConffileAndNoProcess_PurgeLeavesNothing(packages):
    before, contents = packages["before"], packages["contents"]
    installed_paths = snapshot(contents)
    listed = set(ok("dpkg", "-L", *PACKAGES).stdout.split()) - {"/."}
    assert listed == contents, f"dpkg -L differs from the .deb contents: {listed ^ contents}"
    assert installed_paths - before >= contents - before, "a packaged file is missing"
    assert {"/var/lib/warren", "/var/lib/warren/emails"} <= installed_paths

    ok("dpkg", "--remove", "warren-dev", "warren")
    after_remove = snapshot(contents)
    assert warren_processes() == [], "a warren process survived dpkg -r"
    assert sorted(after_remove - before) == ["/etc/warren", "/etc/warren/warren.toml"], \
        "dpkg -r left more than the conffile"
    assert sorted(before - after_remove) == [], "dpkg -r removed something that was not ours"

    ok("dpkg", "--purge", "warren")
    after_purge = snapshot(contents)
    assert sorted(after_purge ^ before) == [], "dpkg -P left (or removed) files"
    assert run("getent", "passwd", "warren").returncode != 0, "the warren user is still there"
    assert run("getent", "group", "warren").returncode != 0, "the warren group is still there"
    assert not [p for p in os.listdir("/var/lib/dpkg/info") if p.startswith("warren")]
    assert not any(installed(p) for p in PACKAGES)
