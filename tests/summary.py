#!/usr/bin/env python3
"""One summary of a test run from its JUnit XML reports: passed, failed and skipped per
pass, the failed tests by name, and why tests were skipped, each reason with its count.

    tests/summary.py LABEL=REPORT[,REPORT...] ...

A REPORT is ctest's (--output-junit: the unit tests, one test case each; its `integration`
case is the pytest run, counted from pytest's own report) or pytest's (--junitxml). A
report that does not exist is a part of the pass that did not run. scripts/test prints this
at its end, also when a pass fails."""
import collections
import pathlib
import sys
import xml.etree.ElementTree as ET

MAX_FAILED_NAMES = 20  # per part; the rest are counted


class Part:
    """The counts of one report: a pass's unit tests (ctest) or integration tests (pytest)."""

    def __init__(self, what):
        self.what = what
        self.passed = self.failed = self.skipped = 0
        self.failed_names = []
        self.skip_reasons = collections.Counter()
        self.note = ""

    def add(self, case):
        """One <testcase>: its outcome from its child elements (or ctest's status)."""
        name = case.get("name", "?")
        if case.get("classname") not in (None, "", name):  # pytest's module; ctest repeats the name
            name = f"{case.get('classname')}::{name}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skip = case.find("skipped")
        if bad is not None or case.get("status") == "fail":
            self.failed += 1
            self.failed_names.append(name)
        elif skip is not None or case.get("status") in ("notrun", "disabled"):
            self.skipped += 1
            reason = (skip.get("message") if skip is not None else "") or "no reason given"
            if skip is not None and skip.get("type") == "pytest.xfail":
                reason = f"expected to fail: {reason}"
            self.skip_reasons[reason.strip()] += 1
        else:
            self.passed += 1

    def line(self):
        if self.note:
            return f"{self.what}: {self.note}"
        return (f"{self.what}: {self.passed} passed, {self.failed} failed, "
                f"{self.skipped} skipped")


def read_report(path):
    """The Parts of one report file: [unit] for ctest's, [integration] for pytest's; for
    ctest's, whether its integration case failed (pytest's own report may be missing then)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if any(s.get("name") == "pytest" for s in suites):
        part = Part("integration (pytest)")
        for s in suites:
            for case in s.iter("testcase"):
                part.add(case)
        return part, None
    part = Part("unit (ctest)")
    integration_failed = None
    for s in suites:
        for case in s.iter("testcase"):
            if case.get("name") == "integration":
                integration_failed = case.get("status") == "fail" or case.find("failure") is not None
            else:
                part.add(case)
    return part, integration_failed


def summarise(passes):
    """passes: [(label, [report path...])] -> the summary's lines."""
    out, skipped_lines = ["Test summary (scripts/test):"], []
    width = max([len(label) for label, _ in passes] + [8])
    total_failed = 0
    for label, reports in passes:
        parts, integration_failed = [], None
        for path in reports:
            path = pathlib.Path(path)
            if not path.is_file():
                is_pytest = "pytest" in path.name
                part = Part("integration (pytest)" if is_pytest else "unit (ctest)")
                part.note = "not run"
                if is_pytest and integration_failed:
                    part.note = ("failed before pytest wrote its report (see "
                                 f"{path.parent}/Testing/Temporary/LastTest.log)")
                    part.failed = 1
                parts.append(part)
                continue
            try:
                part, failed = read_report(path)
            except ET.ParseError as e:
                part = Part(path.name)
                part.note, part.failed = f"unreadable report ({e})", 1
                failed = None
            if failed is not None:
                integration_failed = failed
            parts.append(part)
        for i, part in enumerate(parts):
            out.append(f"  {label if i == 0 else '':<{width}}  {part.line()}")
            total_failed += part.failed
            for name in part.failed_names[:MAX_FAILED_NAMES]:
                out.append(f"  {'':<{width}}    FAILED {name}")
            if len(part.failed_names) > MAX_FAILED_NAMES:
                out.append(f"  {'':<{width}}    ... and {len(part.failed_names) - MAX_FAILED_NAMES}"
                           " more")
            for reason, n in sorted(part.skip_reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                skipped_lines.append(f"  {label:<{width}}  {n:5d}  {reason}")
    if skipped_lines:
        out.append("Skipped, by reason (pass, count, reason):")
        out += skipped_lines
    return out, total_failed


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    passes = []
    for arg in argv:
        label, sep, files = arg.partition("=")
        if not sep or not files:
            print(f"summary: '{arg}' is not LABEL=REPORT[,REPORT...]", file=sys.stderr)
            return 2
        passes.append((label, files.split(",")))
    lines, _ = summarise(passes)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
