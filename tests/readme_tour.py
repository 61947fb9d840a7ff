#!/usr/bin/env python3
"""The README's tour, run as written: its ```python blocks statement by statement (a
statement whose line ends in a comment that is a Python literal, `s.to_list()  #
['alpha', '']`, must give that value; other comments are prose) and its ```sh blocks line
by line (each must succeed), top to bottom, from the repository's root.

tests/python/test_readme.py runs it against a test daemon under pytest, the endpoint
changed and the `scripts/` lines left to the fresh-machine test; tests/docker/fresh_test.py
runs it whole, as written, in a fresh Debian root after `scripts/run`. Needs nothing but
Python (numpy when the blocks use it).

    python3 tests/readme_tour.py [--endpoint URL] [--skip-scripts] [README.md]
"""
import argparse
import ast
import io
import os
import pathlib
import re
import subprocess
import sys
import tokenize

REPO = pathlib.Path(__file__).resolve().parents[1]
README_ENDPOINT = "tcp://127.0.0.1:5555"  # the endpoint the READMEs connect to


def blocks(path, kinds=("python",), section=None):
    """[(kind, line of the block's first line of code, code)] of the fenced blocks of the
    given kinds, in the order they come; only those under the heading `section` (up to the
    next heading of the same level) when it is given."""
    text = path.read_text()
    start, end = 0, len(text)
    if section:
        m = re.search(rf"^(#+) {re.escape(section)}\n", text, re.M)
        if not m:
            raise ValueError(f"{path}: no section '{section}'")
        start = m.end()
        nxt = re.search(rf"^#{{1,{len(m.group(1))}}} ", text[start:], re.M)
        end = start + nxt.start() if nxt else len(text)
    return [(m.group(1), text.count("\n", 0, m.start(2)) + 1, m.group(2))
            for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.M | re.S)
            if m.group(1) in kinds and start <= m.start() < end]


def python_blocks(path):
    """[(line of the block's first line of code, code)] of the ```python blocks."""
    return [(line, code) for _, line, code in blocks(path)]


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
    if hasattr(got, "tolist") and not isinstance(want, type(got)):
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


def shell_lines(first_line, source):
    """[(README line, command)] of a ```sh block: its lines without comment-only ones."""
    return [(first_line + i, line.strip()) for i, line in enumerate(source.splitlines())
            if line.strip() and not line.strip().startswith("#")]


def run_shell(path, first_line, source, endpoint, skip_scripts, out=None):
    out = out or sys.stdout
    env = {**os.environ, "H5ARK_ENDPOINT": endpoint}
    for line, command in shell_lines(first_line, source):
        if skip_scripts and command.startswith("scripts/"):
            print(f"{path.name}:{line}: skipped (a setup command): {command}", file=out)
            continue
        proc = subprocess.run(["bash", "-o", "pipefail", "-ec", command], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(f"{path.name}:{line}: $ {command}\n{proc.stdout}", end="", file=out)
        assert proc.returncode == 0, \
            f"{path.name}:{line}: `{command}` exited {proc.returncode}:\n{proc.stdout}"


def run_tour(path, endpoint=README_ENDPOINT, section=None, skip_scripts=False, out=None):
    """Every python and sh block (of `section`, or of the whole file), in order; returns
    the Python namespace the blocks ran in."""
    found = blocks(path, ("python", "sh"), section)
    pythons = [code for kind, _, code in found if kind == "python"]
    assert pythons and README_ENDPOINT in pythons[0], \
        f"{path}: the first Python block should connect to {README_ENDPOINT}"
    namespace = {"__name__": "__readme__"}
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    os.chdir(REPO)  # the tour puts client/python on sys.path from there
    try:
        for kind, first_line, code in found:
            if kind == "python":
                run_block(path, first_line, code.replace(README_ENDPOINT, endpoint), namespace)
            else:
                run_shell(path, first_line, code, endpoint, skip_scripts, out)
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        client = sys.modules.get("h5ark")
        if client is not None:
            try:
                client.disconnect()
            except Exception:  # noqa: BLE001 - the tour's connection may already be gone
                pass
    return namespace


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("readme", nargs="?", default=str(REPO / "README.md"))
    ap.add_argument("--endpoint", default=README_ENDPOINT)
    ap.add_argument("--section", default="A five-minute tour",
                    help="the heading whose blocks are run ('' for the whole file)")
    ap.add_argument("--skip-scripts", action="store_true",
                    help="leave out sh lines that run scripts/ (setup commands)")
    opts = ap.parse_args()
    path = pathlib.Path(opts.readme).resolve()
    try:
        run_tour(path, opts.endpoint, opts.section or None, opts.skip_scripts)
    except AssertionError as e:
        print(f"tour: FAIL {e}", file=sys.stderr)
        return 1
    print(f"tour: {path.name}, section '{opts.section}': every block ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
