"""The Arkouda endpoint of a daemon run as two ranks under mutated envelopes (the live
fuzzer of test_fuzz_live.py): every reply well formed, every rank still up, and real commands
still right afterwards."""
import os

import numpy as np
import pytest

from daemons import MPIRUN, Daemon, mpi_build
from test_arkouda_wire import Ak, download, upload
from test_fuzz_live import ak_fuzz

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")

MESSAGES = int(os.environ.get("H5ARK_FUZZ_AK_RANKS_MESSAGES", "2500"))
RANKS = int(os.environ.get("H5ARK_FUZZ_AK_RANKS", "2"))  # by hand: 3 and more


@pytest.fixture(scope="module")
def akd():
    if not mpi_build():
        pytest.skip("h5arkd was built without MPI")
    d = Daemon(ranks=RANKS, locales=2, arkouda=True, max_memory="256M")
    yield d
    d.cleanup()


def test_live_fuzz_arkouda_two_ranks(akd):
    ranks = akd.rank_pids()
    assert len(ranks) == RANKS
    kinds = ak_fuzz(akd.endpoint, akd.ak_endpoint, MESSAGES,
                    int(os.environ.get("H5ARK_FUZZ_SEED", "20261125")))
    assert akd.proc.poll() is None, akd.read_log()
    assert akd.rank_pids() == ranks, akd.read_log()
    c = Ak(akd.ak_endpoint)  # a 30 s receive timeout: a hang fails
    try:
        arr = np.arange(5001, dtype=np.int64) * 7 - 3
        name, _, _ = upload(c, arr)
        np.testing.assert_array_equal(download(c, name, "int64", 5001), arr)
        assert c.ok("sumAll<int64,1>", {"x": name, "skipNan": "False"}) == \
            f"int64 {int(arr.sum())}"
        out, _, size = c.created("cumSum<int64,1>", {"x": name, "axis": "0",
                                                      "includeInitial": "False"})
        np.testing.assert_array_equal(download(c, out, "int64", size), np.cumsum(arr))
    finally:
        c.close()
    print(f"{MESSAGES} Arkouda messages at {RANKS} ranks, all answered: {kinds}")
