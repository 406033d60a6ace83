"""`cmake --install BUILD --prefix DIR` writes only under DIR (issue 22): the config and the
systemd units included, which go to /etc/warren and /lib/systemd/system only for the prefix /usr
(the packages); and a plugin project from `warren plugin new` builds against such a prefix and
passes its own tests (the harness and the host libraries it links are exported with it).
Installs this build tree into temporary directories; touches nothing else (the /usr case goes
through DESTDIR)."""

import os
import shutil
import subprocess
from pathlib import Path
from typing import List

from warren_testkit import env


def install(prefix: str, destdir: Path = None) -> List[str]:
    """Installs the build tree to PREFIX (under DESTDIR if given); returns the manifest's paths."""
    build = Path(env("WARREN_BUILD_DIR"))
    environment = dict(os.environ)
    environment.pop("DESTDIR", None)
    if destdir is not None:
        environment["DESTDIR"] = str(destdir)
    result = subprocess.run(["cmake", "--install", str(build), "--prefix", prefix],
                            env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    paths = (build / "install_manifest.txt").read_text().split()
    assert paths, "cmake --install wrote an empty install_manifest.txt"
    return paths


def test_InstallToAPrefix_EveryPathOfTheManifestIsUnderIt(tmp_path):
    prefix = tmp_path / "prefix"
    paths = install(str(prefix))
    outside = [p for p in paths if not Path(p).is_relative_to(prefix)]
    assert outside == [], f"installed outside {prefix}: {outside}"
    assert str(prefix / "etc/warren/warren.toml") in paths
    assert str(prefix / "lib/systemd/system/warren.service") in paths
    assert str(prefix / "bin/warren") in paths
    assert str(prefix / "lib/warren/warren-worker") in paths


def test_InstallToUsr_TheConfigAndUnitsGoToEtcAndLibSystemd_AsInThePackages(tmp_path):
    """The manifest names the final paths; DESTDIR holds the files."""
    paths = install("/usr", destdir=tmp_path)
    for wanted in ("/etc/warren/warren.toml", "/lib/systemd/system/warren.service",
                   "/lib/systemd/system/warren@.service", "/usr/bin/warren",
                   "/usr/lib/warren/warren-worker"):
        assert wanted in paths, sorted(paths)
    missing = [p for p in paths if not (tmp_path / p.lstrip("/")).exists()]
    assert missing == [], f"listed but not under DESTDIR {tmp_path}: {missing}"


def test_PluginTemplate_BuiltAgainstAPrefix_PassesItsOwnTests(tmp_path):
    """The template's test loads its .so with Harness::load and routes and retries by its conf:
    find_package(Warren) from the prefix must bring Warren::testing with every library it links."""
    prefix = tmp_path / "prefix"
    install(str(prefix))
    project = tmp_path / "orders"
    result = subprocess.run([str(prefix / "bin/warren"), "plugin", "new", "orders", str(project)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    build = tmp_path / "orders-build"
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("CMAKE_PREFIX_PATH", "Warren_DIR", "CMAKE_MODULE_PATH")}
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # A sanitizer build (the asan preset) installs instrumented libraries: a project linking them
    # must be built with the same sanitizers, as anyone using such an SDK would.
    sanitize = os.environ.get("WARREN_SANITIZE", "")
    sanitizer_flags = [f"-DCMAKE_CXX_FLAGS=-fsanitize={sanitize} -fno-sanitize-recover=all",
                       f"-DCMAKE_EXE_LINKER_FLAGS=-fsanitize={sanitize}",
                       f"-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize={sanitize}"] if sanitize else []
    for command in (["cmake", "-S", str(project), "-B", str(build), *generator,
                     f"-DCMAKE_PREFIX_PATH={prefix}", *sanitizer_flags],
                    ["nice", "cmake", "--build", str(build), "-j", "2"],
                    ["ctest", "--test-dir", str(build), "--output-on-failure", "--no-tests=error"]):
        result = subprocess.run(command, env=environment, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, " ".join(command) + "\n" + result.stdout + result.stderr
