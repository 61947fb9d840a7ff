"""The stop signals: SIGINT and SIGTERM stop the daemon cleanly whatever signal state it
inherited (docs/DESIGN.md: it installs handlers of its own and reads them through a
signalfd)."""
import os
import pathlib
import signal

import pytest

from conftest import TOOL_SLOWDOWN, request


def _signal_mask_of(pid):
    """{field: set of signal numbers} of SigBlk, SigIgn and SigCgt in /proc/PID/status
    (the main thread's)."""
    out = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
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
