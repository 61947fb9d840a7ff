"""The READMEs' blocks, run as written, top to bottom, against a test daemon (only the
endpoint is changed), so that the documentation cannot drift from the code: the client's
README's Python blocks, and the top-level README's tour, Python and shell blocks
(tests/readme_tour.py, which tests/docker/fresh_test.py also runs whole in a fresh root).
A statement whose line ends in a comment that is a Python literal (`s.to_list()  #
['alpha', '']`) must give that value; other comments are prose."""
import pathlib
import sys

import pytest

from daemons import REPO

import h5ark

sys.path.insert(0, str(REPO / "tests"))
from readme_tour import README_ENDPOINT, python_blocks, run_block, run_tour  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::h5ark.H5arkWarning")  # files overwritten
TOUR = "A five-minute tour"


def run_readme(path, daemon, monkeypatch):
    monkeypatch.chdir(REPO)  # the client's README puts client/python on sys.path from there
    monkeypatch.setattr(sys, "path", list(sys.path))
    found = python_blocks(path)
    assert found and README_ENDPOINT in found[0][1], \
        f"{path}: the first Python block should connect to {README_ENDPOINT}"
    namespace = {"__name__": "__readme__"}
    try:
        for first_line, source in found:
            run_block(path, first_line, source.replace(README_ENDPOINT, daemon.endpoint),
                      namespace)
    finally:
        try:
            h5ark.disconnect()
        except h5ark.ConnectionClosedError:
            pass
    return namespace


def test_python_client_readme_runs(start_daemon, monkeypatch, tmp_path):
    path = REPO / "client" / "python" / "README.md"
    # its checkpoint block writes into the daemon's --checkpoint-dir
    daemon = start_daemon(locales=2, extra_args=["--checkpoint-dir", str(tmp_path / "ck")])
    ns = run_readme(path, daemon, monkeypatch)
    # the last block ran to its end, on this daemon
    assert isinstance(ns["names"], h5ark.Strings)
    assert (daemon.data_dir / "session.hdf5").is_file()


def test_top_level_tour_runs(start_daemon, capsys):
    """The tour's Python and shell blocks in order; its `scripts/` lines are the
    fresh-machine test's (tests/docker/fresh_test.py)."""
    daemon = start_daemon(locales=2)
    ns = run_tour(REPO / "README.md", daemon.endpoint, TOUR, skip_scripts=True)
    assert isinstance(ns["keys"], h5ark.Strings)
    assert sorted(p.name for p in daemon.data_dir.glob("demo_LOCALE*.h5")) == \
        ["demo_LOCALE0000.h5", "demo_LOCALE0001.h5"]
    out = capsys.readouterr().out
    assert "$ build/client/c/h5ark get x" in out  # the shell block ran too
    assert (daemon.data_dir / "parts.h5").is_file()


def test_tour_shell_line_failing_fails(start_daemon, tmp_path):
    """A shell line of the tour that fails fails the tour, naming its line."""
    readme = tmp_path / "README.md"
    readme.write_text(f"""# x

## A five-minute tour

```python
import h5ark
h5ark.connect("{README_ENDPOINT}")
```

```sh
build/client/c/h5ark ping
build/client/c/h5ark get no_such_object
```
""")
    daemon = start_daemon(locales=1)
    with pytest.raises(AssertionError, match=r"README.md:12: `build/client/c/h5ark get no_such"):
        run_tour(readme, daemon.endpoint, TOUR)


def test_literal_comments_are_checked(start_daemon, monkeypatch, tmp_path):
    """A README whose comment gives a wrong value fails, naming the line."""
    readme = tmp_path / "README.md"
    readme.write_text(f"""# x

```python
import h5ark
h5ark.connect("{README_ENDPOINT}")
h5ark.arange(3).to_list()         # [0, 1, 2]
h5ark.arange(3).to_list()         # the values; prose is not checked
```

```python
h5ark.arange(3).to_list()         # [0, 1, 3]
```
""")
    daemon = start_daemon(locales=1)
    with pytest.raises(AssertionError, match=r"README.md:11: .* gives \[0, 1, 2\], not \[0, 1, 3\]"):
        run_readme(pathlib.Path(readme), daemon, monkeypatch)
