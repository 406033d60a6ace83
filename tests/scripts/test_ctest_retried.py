"""scripts/lib/ctest_retried.py, which lists in scripts/test's summary the tests that passed only
on their second try, on what a real ctest run printed (`--repeat until-pass:2
--output-on-failure`, as scripts/test runs it): a test that fails once then passes is named with
its failed try's output; one that always passes, one that always fails (the summary's "Failed"
list has it) and one that is skipped are not. If ctest's output changes shape, this says so."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lib" / "ctest_retried.py"


def ctest_output(tmp_path: Path) -> Path:
    source, build = tmp_path / "project", tmp_path / "build"
    source.mkdir()
    marker = tmp_path / "tried-once"
    # A name with spaces and angle brackets, as gtest_discover_tests gives typed tests.
    flaky = "Flaky.Test<ns::(anonymous namespace)::Backend>"
    lines = ["cmake_minimum_required(VERSION 3.20)", "project(retried NONE)", "enable_testing()",
             f'add_test(NAME "{flaky}" COMMAND sh -c "if [ -e {marker} ]; then echo fine; '
             f'else touch {marker}; echo connection refused at the first try; exit 1; fi")',
             'add_test(NAME passes COMMAND sh -c "echo fine")',
             'add_test(NAME fails COMMAND sh -c "echo broken; exit 1")',
             'add_test(NAME skipped COMMAND sh -c "echo SKIP-ME")',
             'set_tests_properties(skipped PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP-ME")']
    (source / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    subprocess.run([os.environ.get("CMAKE", "cmake"), "-S", str(source), "-B", str(build)],
                   check=True, capture_output=True)
    finished = subprocess.run([os.environ.get("CTEST", "ctest"), "--test-dir", str(build),
                               "--repeat", "until-pass:2", "--output-on-failure"],
                              capture_output=True, text=True)
    assert finished.returncode != 0, finished.stdout  # `fails` fails, on purpose
    output = tmp_path / "ctest.log"
    output.write_text(finished.stdout + finished.stderr)
    return output


def test_ATestThatPassesOnItsSecondTry_IsNamedWithItsFailedTrysOutput(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(ctest_output(tmp_path))],
                            capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "retried: Flaky.Test<ns::(anonymous namespace)::Backend>",
        "| connection refused at the first try",
    ], result.stdout


def test_MissingFile_IsExit2(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "absent.log")],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout.startswith("no ctest output ("), result.stdout
