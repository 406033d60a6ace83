"""`cmake --install BUILD --prefix DIR` writes only under DIR (issue 22): the config and the
systemd units included, which go to /etc/warren and /lib/systemd/system only for the prefix /usr
(the packages). Installs this build tree into temporary directories; touches nothing else (the
/usr case goes through DESTDIR)."""

import os
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


def test_InstallToUsr_TheConfigAndUnitsGoToEtcAndLibSystemd_AsInThePackages(tmp_path):
    """The manifest names the final paths; DESTDIR holds the files."""
    paths = install("/usr", destdir=tmp_path)
    for wanted in ("/etc/warren/warren.toml", "/lib/systemd/system/warren.service",
                   "/lib/systemd/system/warren@.service", "/usr/bin/warren"):
        assert wanted in paths, sorted(paths)
    missing = [p for p in paths if not (tmp_path / p.lstrip("/")).exists()]
    assert missing == [], f"listed but not under DESTDIR {tmp_path}: {missing}"
