"""The Python blocks of the READMEs, run as written, top to bottom, against a test daemon
(only the endpoint is changed), so that the documentation cannot drift from the code.
A statement whose line ends in a comment that is a Python literal (`s.to_list()  #
['alpha', '']`) must give that value; other comments are prose."""
import ast
import io
import pathlib
import re
import sys
import tokenize

import numpy as np
import pytest

from conftest import REPO

import h5ark

README_ENDPOINT = "tcp://127.0.0.1:5555"  # the endpoint the READMEs connect to

pytestmark = pytest.mark.filterwarnings("ignore::h5ark.H5arkWarning")  # files overwritten


def python_blocks(path):
    """[(line of the block's first line of code, code)] of the ```python blocks."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S)]


def literal_comments(source):
    """{line: value} for the comments that are Python literals."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            try:
                out[tok.start[0]] = ast.literal_eval(tok.string[1:].strip())
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    return out


def same(got, want):
    if isinstance(got, np.ndarray):
        got = got.tolist()
    if isinstance(got, tuple) and isinstance(want, tuple):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    return bool(got == want)


def run_block(path, first_line, source, namespace):
    """Run one block statement by statement in `namespace`; tracebacks name README lines."""
    tree = ast.parse(source)
    ast.increment_lineno(tree, first_line - 1)
    expected = {line + first_line - 1: value
                for line, value in literal_comments(source).items()}
    lines = source.splitlines()
    body = tree.body
    for i, node in enumerate(body):
        shares_line = i + 1 < len(body) and body[i + 1].lineno == node.end_lineno
        if isinstance(node, ast.Expr) and node.end_lineno in expected and not shares_line:
            code = compile(ast.Expression(node.value), str(path), "eval")
            got = eval(code, namespace)
            want = expected[node.end_lineno]
            text = lines[node.end_lineno - first_line].strip()
            assert same(got, want), \
                f"{path.name}:{node.end_lineno}: `{text}` gives {got!r}, not {want!r}"
        else:
            exec(compile(ast.Module([node], type_ignores=[]), str(path), "exec"), namespace)


def run_readme(path, daemon, monkeypatch):
    monkeypatch.chdir(REPO)  # the top-level tour puts client/python on sys.path from there
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


def test_python_client_readme_runs(start_daemon, monkeypatch):
    path = REPO / "client" / "python" / "README.md"
    daemon = start_daemon(locales=2)
    ns = run_readme(path, daemon, monkeypatch)
    # the last block ran to its end, on this daemon
    assert isinstance(ns["names"], h5ark.Strings)
    assert (daemon.data_dir / "session.hdf5").is_file()


def test_top_level_tour_runs(start_daemon, monkeypatch):
    path = REPO / "README.md"
    daemon = start_daemon(locales=2)
    ns = run_readme(path, daemon, monkeypatch)
    assert isinstance(ns["keys"], h5ark.Strings)
    assert sorted(p.name for p in daemon.data_dir.glob("demo_LOCALE*.h5")) == \
        ["demo_LOCALE0000.h5", "demo_LOCALE0001.h5"]


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
