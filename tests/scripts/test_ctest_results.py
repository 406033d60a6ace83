"""scripts/lib/ctest_results.py, which makes skips visible in scripts/test's summary, on the JUnit
file of a real ctest run: a tiny CMake project whose tests pass, fail, are skipped in ctest (a
GoogleTest GTEST_SKIP, through the SKIP_REGULAR_EXPRESSION that gtest_discover_tests sets), and
pass in ctest while pytest skipped a case inside them (the packaging test's "ptrace is not
permitted here"). If ctest's JUnit file or pytest's summary lines change, the counts here go wrong
and this test says so."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lib" / "ctest_results.py"

# What each test prints and its exit code.
TESTS = {
    "passes": ("[  PASSED  ] 1 test.", 0),
    "fails": ("something broke", 1),
    # GoogleTest's own output of a GTEST_SKIP (exit 0).
    "gtest_skips": ("x_test.cc:42: Skipped\\nno IPv6 here\\n\\n[  SKIPPED ] Server.Ipv6 (0 ms)", 0),
    # An integration test: pytest -rs lists the skip, ctest sees exit 0.
    "pytest_skips_one": ("SKIPPED [1] test_deb_packages.py:357: ptrace is not permitted here: "
                         "PTRACE_TRACEME: Operation not permitted\\n"
                         "3 passed, 1 skipped in 12.34s", 0),
}


def run_ctest(tmp_path: Path) -> Path:
    source, build = tmp_path / "project", tmp_path / "build"
    source.mkdir()
    lines = ["cmake_minimum_required(VERSION 3.20)", "project(results NONE)", "enable_testing()"]
    for name, (output, code) in TESTS.items():
        script = source / f"{name}.sh"
        script.write_text(f"#!/bin/sh\nprintf '%b\\n' '{output}'\nexit {code}\n")
        script.chmod(0o755)
        lines.append(f"add_test(NAME {name} COMMAND {script})")
    lines.append('set_tests_properties(gtest_skips PROPERTIES SKIP_REGULAR_EXPRESSION '
                 '"\\\\[  SKIPPED \\\\]")')
    (source / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    cmake = os.environ.get("CMAKE", "cmake")
    ctest = os.environ.get("CTEST", "ctest")
    subprocess.run([cmake, "-S", str(source), "-B", str(build)], check=True,
                   capture_output=True)
    junit = tmp_path / "results.xml"
    # Exit 8: a test failed, as one does here on purpose.
    finished = subprocess.run([ctest, "--test-dir", str(build), "--output-junit", str(junit),
                               "--test-output-size-passed", "1048576"], capture_output=True,
                              text=True)
    assert finished.returncode != 0 and junit.is_file(), finished.stdout + finished.stderr
    return junit


def test_CountsTestsFailuresAndSkipsOfBothKinds_WithEachSkipsReasonAndEachFailuresOutput(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(run_ctest(tmp_path))],
                            capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "4 tests, 1 failed, 2 skipped", result.stdout
    assert sorted(lines[1:3]) == sorted([
        "skipped: gtest_skips: no IPv6 here",
        "skipped: pytest_skips_one: test_deb_packages.py:357: ptrace is not permitted here: "
        "PTRACE_TRACEME: Operation not permitted",
    ]), result.stdout
    # Failures come last, each with the end of its output: CI shows only the log's end.
    assert lines[3:] == ["failed: fails", "| something broke"], result.stdout


def test_MissingFile_IsExit2SayingThereAreNoResults(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "absent.xml")],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout.startswith("no test results ("), result.stdout

