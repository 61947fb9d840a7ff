"""What --help says: every script answers at once, building and installing nothing; the
options h5arkd's and h5ark's help texts name are the options the programs take."""
import os
import re
import subprocess

import pytest

from daemons import daemon_binary, REPO

CLI = os.environ.get("H5ARK_CLI", str(REPO / "build" / "client" / "c" / "h5ark"))
SCRIPTS = ["scripts/run", "scripts/setup", "scripts/test", "scripts/fuzz", "bench/run",
           "tests/docker/rootfs_test.py"]
# What building or installing would call: each is replaced by one that leaves a mark.
BUILD_TOOLS = ["cmake", "make", "ninja", "cc", "gcc", "clang", "npm", "apt-get", "sudo",
               "dpkg-query", "debootstrap", "ctest", "valgrind"]


@pytest.fixture
def no_build_tools(tmp_path):
    """A PATH where the build and install tools only leave a mark in tmp_path/called."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in BUILD_TOOLS:
        (fake / tool).write_text(f"#!/bin/sh\necho {tool} >> {tmp_path}/called\nexit 1\n")
        (fake / tool).chmod(0o755)
    return {**os.environ, "PATH": f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}"}, \
        tmp_path / "called"


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help_answers_without_building(script, no_build_tools):
    env, called = no_build_tools
    out = subprocess.run([str(REPO / script), "--help"], capture_output=True, text=True,
                         env=env, timeout=30, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert not called.exists(), f"{script} --help ran {called.read_text().split()}"
    first = out.stdout.splitlines()[0] if out.stdout else ""
    assert len(out.stdout.splitlines()) >= 3 and not first.startswith(" "), out.stdout
    if script == "scripts/run":  # and names h5arkd's options, or says where they are
        assert "--endpoint" in out.stdout or "build/server/h5arkd --help" in out.stdout


def test_bench_help_without_the_test_packages(tmp_path):
    """bench/run --help answers where h5py is missing; a run says what is missing."""
    (tmp_path / "h5py.py").write_text('raise ImportError("No module named h5py (hidden)")\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([str(REPO / "bench" / "run"), "--help"], capture_output=True,
                         text=True, env=env, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("usage: bench/run"), out.stderr
    out = subprocess.run([str(REPO / "bench" / "run"), "--quick"], capture_output=True,
                         text=True, env=env, timeout=30)
    assert out.returncode == 1 and "h5py" in out.stderr and "Traceback" not in out.stderr, \
        out.stderr


def _help_options(text):
    """The long options a help text names at the start of its lines."""
    return set(re.findall(r"^\s+(--[a-z][a-z-]*)", text, re.M))


def test_daemon_help_names_the_options_it_parses():
    """Every option h5arkd parses is in its --help, and every one there is parsed."""
    helped = _help_options(subprocess.run([daemon_binary(), "--help"], capture_output=True,
                                          text=True, timeout=30, check=True).stdout)
    table = (REPO / "server" / "main.c").read_text()
    table = table[table.index("static const struct option opts[]"):]
    table = table[:table.index("{0, 0, 0, 0}")]
    parsed = {"--" + name for name in re.findall(r'\{"([a-z-]+)",', table)}
    assert helped == parsed, (helped - parsed, parsed - helped)


@pytest.mark.parametrize("option,value", [
    ("--endpoint", "ipc:///nonexistent/h5arkd.sock"), ("--arkouda-endpoint", "tcp://127.0.0.1:1"),
    ("--locales", "2"), ("--data-dir", "data"), ("--max-memory", "1G"), ("--shard-cache", "0"),
    ("--token-file", "/nonexistent"), ("--curve-secret-file", "/nonexistent"),
    ("--handlers", "2"), ("--max-queue", "8"), ("--max-message", "1M"),
    ("--metrics-endpoint", "0"), ("--http-endpoint", "0"), ("--web-dir", "web"),
    ("--idle-release", "1"), ("--log-level", "warn")])
def test_daemon_takes_each_option_its_help_names(option, value, tmp_path):
    """Given before --version (which stops the parsing there), each option is taken."""
    out = subprocess.run([daemon_binary(), option, value, "--version"], capture_output=True,
                         text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("h5arkd "), out.stderr
    assert option in _help_options(subprocess.run(
        [daemon_binary(), "--help"], capture_output=True, text=True, timeout=30).stdout)


def test_daemon_help_claims_no_single_rank_limit():
    """The Arkouda endpoint and every option work at several ranks (docs/DESIGN.md)."""
    text = subprocess.run([daemon_binary(), "--help"], capture_output=True, text=True,
                          timeout=30).stdout
    assert "one rank only" not in text and "--arkouda-endpoint" in text


def _cli(*args):
    return subprocess.run([CLI, "--endpoint", "ipc:///nonexistent/h5arkd.sock",
                           "--connect-timeout", "0.2", *args], capture_output=True, text=True,
                          timeout=30)


def test_cli_command_list_in_whole_sentences():
    """`h5ark --help` lists each command with a sentence of its own, not a cut one."""
    text = _cli("--help").stdout
    listed = text[text.index("Commands:\n"):].split("\n\n")[0].splitlines()[1:]
    assert len(listed) >= 10, text
    for line in listed:
        assert line.rstrip().endswith("."), line


def test_cli_takes_each_option_its_help_names():
    """Every option `h5ark help COMMAND` names is one the command takes."""
    text = _cli("--help").stdout
    commands = re.findall(r"^  ([a-z]+)\s", text[text.index("Commands:\n"):], re.M)
    checked = 0
    for cmd in commands:
        for option in _help_options(_cli("help", cmd).stdout):
            out = _cli(cmd, option, "1")
            assert "unknown option" not in out.stderr, (cmd, option, out.stderr)
            checked += 1
    assert checked >= 20, checked
