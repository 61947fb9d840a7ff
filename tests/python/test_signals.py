"""The stop signals: SIGINT and SIGTERM stop the daemon cleanly whatever signal state it
inherited (docs/DESIGN.md: it installs handlers of its own and reads them through a
signalfd)."""
import os
import pathlib
import shutil
import signal
import subprocess

import pytest

from daemons import TOOL_SLOWDOWN
from wire import request


def _signal_mask_of(pid):
    """{field: set of signal numbers} of SigBlk, SigIgn and SigCgt in /proc/PID/status
    (the main thread's)."""
    return _signal_mask_of_task(pathlib.Path(f"/proc/{pid}"))


def _signal_mask_of_task(task):
    """The same of one thread, /proc/PID/task/TID (or of a process, /proc/PID)."""
    out = {}
    for line in (task / "status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("SigBlk", "SigIgn", "SigCgt"):
            bits = int(value, 16)
            out[key] = {n for n in range(1, 65) if bits >> (n - 1) & 1}
    return out


def _inherit(ignore=(), block=()):
    """A preexec_fn giving the child these signals ignored and these blocked, as a shell
    gives a background job SIGINT ignored."""
    def pre():
        for s in ignore:
            signal.signal(s, signal.SIG_IGN)
        if block:
            signal.pthread_sigmask(signal.SIG_BLOCK, set(block))
    return pre


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("ignored,blocked", [(True, False), (False, True), (True, True)],
                         ids=["ignored", "blocked", "ignored+blocked"])
def test_stop_signal_works_whatever_was_inherited(start_daemon, sig, ignored, blocked):
    """A daemon started with the stop signal ignored (a shell's background job has SIGINT
    so) or blocked installs its own handler for it and stops cleanly on it."""
    d = start_daemon(locales=2, extra_args=("--log-level", "notice"),
                     preexec_fn=_inherit([sig] if ignored else (), [sig] if blocked else ()))
    if not os.environ.get("H5ARKD_WRAPPER"):  # a tool (valgrind) takes every signal itself
        mask = _signal_mask_of(d.proc.pid)
        assert signal.SIGINT not in mask["SigIgn"] and signal.SIGTERM not in mask["SigIgn"], mask
        assert {signal.SIGINT, signal.SIGTERM} <= mask["SigCgt"], mask
    hdr, _ = request(d.endpoint, {"v": 1, "cmd": "create", "args": {
        "dtype": "int64", "size": 1000, "fill": "zeros"}})
    assert hdr["ok"], hdr
    assert d.stop(sig, timeout=10 * TOOL_SLOWDOWN) == 0
    assert "stopped cleanly" in (d.tmp / "daemon.log").read_text()


# A library's thread that unblocks every signal: started before main (a constructor), so
# it never had the daemon's mask, and it sets an empty one besides.
STRAY_THREAD = r"""
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
static void *stray(void *arg) {
    (void)arg;
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    for (;;) pause();
    return NULL;
}
__attribute__((constructor)) static void start_stray(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, stray, NULL) == 0) pthread_detach(t);
}
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stop_signal_taken_by_a_thread_that_unblocks_it(start_daemon, tmp_path, sig):
    """The kernel gives a process's signal to a thread that does not block it: the daemon's
    handler there passes it on to the signalfd, and the daemon stops cleanly."""
    if os.environ.get("H5ARKD_WRAPPER"):
        pytest.skip("LD_PRELOAD would load the thread into the tool (valgrind) as well")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stray thread's library")
    (tmp_path / "stray.c").write_text(STRAY_THREAD)
    lib = tmp_path / "stray.so"
    subprocess.run([cc, "-shared", "-fPIC", "-pthread", "-o", str(lib), str(tmp_path / "stray.c")],
                   check=True, capture_output=True, timeout=60)
    env = {"LD_PRELOAD": str(lib)}
    if os.environ.get("ASAN_OPTIONS"):  # a sanitizer build: its runtime need not come first
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    d = start_daemon(locales=2, extra_args=("--log-level", "notice"), env=env)
    threads = pathlib.Path(f"/proc/{d.proc.pid}/task")
    unblocked = [t for t in threads.iterdir() if sig not in _signal_mask_of_task(t)["SigBlk"]]
    assert len(unblocked) == 1, "the stray thread is there, not blocking the signal"
    assert d.stop(sig, timeout=10 * TOOL_SLOWDOWN) == 0
    assert "stopped cleanly" in (d.tmp / "daemon.log").read_text()
