"""tests/summary.py, the summary scripts/test prints at its end, on the JUnit reports of a
real pytest run and a real ctest run of a few tiny tests."""
import shutil
import subprocess
import sys

import pytest

from daemons import REPO

TINY = '''
import pytest

def test_ok():
    pass

def test_ok_too():
    pass

def test_bad():
    assert 1 == 2

@pytest.mark.parametrize("i", range(3))
def test_skip_a(i):
    pytest.skip("no widget here")

@pytest.mark.skipif(True, reason="needs root")
def test_skip_b():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("setup fails")

def test_error(broken):
    pass
'''


def summary(*args):
    return subprocess.run([sys.executable, str(REPO / "tests" / "summary.py"), *args],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """(pytest's report, ctest's report) of the tiny runs."""
    tmp = tmp_path_factory.mktemp("summary")
    (tmp / "test_tiny.py").write_text(TINY)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={tmp}/pytest-integration.xml", f"--basetemp={tmp}/bt",
                    str(tmp / "test_tiny.py")], cwd=tmp, capture_output=True, timeout=120)
    ctest = shutil.which("ctest")
    if ctest is None:
        pytest.skip("ctest (cmake) is not installed")
    (tmp / "CTestTestfile.cmake").write_text(
        'add_test(unit.one "/bin/true")\nadd_test(unit.two "/bin/true")\n'
        'add_test(unit.three "/bin/false")\nadd_test(integration "/bin/false")\n')
    subprocess.run([ctest, "--output-junit", str(tmp / "ctest-junit.xml")], cwd=tmp,
                   capture_output=True, timeout=120)
    return tmp / "pytest-integration.xml", tmp / "ctest-junit.xml"


def test_counts_failures_and_skip_reasons(reports):
    py, ct = reports
    out = summary(f"release={ct},{py}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "  release   unit (ctest): 2 passed, 1 failed, 0 skipped" in lines, out.stdout
    assert "            integration (pytest): 2 passed, 2 failed, 4 skipped" in lines, out.stdout
    assert any(line.strip() == "FAILED unit.three" for line in lines), out.stdout
    assert any(line.strip() == "FAILED test_tiny::test_bad" for line in lines), out.stdout
    assert any(line.strip() == "FAILED test_tiny::test_error" for line in lines), out.stdout
    skipped = lines[lines.index("Skipped, by reason (pass, count, reason):") + 1:]
    assert skipped == ["  release       3  no widget here", "  release       1  needs root"]


def test_passes_that_did_not_run(reports, tmp_path):
    py, ct = reports
    out = summary(f"release={ct},{py}", f"ASan={ct},{tmp_path}/pytest-integration.xml",
                  f"valgrind={tmp_path}/pytest-valgrind.xml")
    lines = out.stdout.splitlines()
    # ctest ran but its integration test stopped before pytest wrote a report
    assert any("integration (pytest): failed before pytest wrote its report" in line
               for line in lines), out.stdout
    assert "  valgrind  integration (pytest): not run" in lines, out.stdout


def test_usage():
    assert summary().returncode == 2
    assert summary("--help").returncode == 0
    bad = summary("no-equals-sign")
    assert bad.returncode == 2 and "LABEL=REPORT" in bad.stderr
