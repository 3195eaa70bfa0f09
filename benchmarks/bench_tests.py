"""How long the test suite takes (issue 30): collection time, total wall, per-file totals and the
slowest tests, for the README's test command or any pytest arguments; optionally branch coverage
of consolidate/ and judges/ over every Python process the suite starts, and the lines covered in
one run and not in another.

Runs (each one is a whole suite: 20-35 minutes one process at a time on the shared 2-core box)::

    python benchmarks/bench_tests.py                       # the README's command (-n auto), report
    python benchmarks/bench_tests.py --pytest-args "-q -p no:xdist"   # one process, for "before"
    python benchmarks/bench_tests.py --coverage /tmp/cov-after        # also coverage, kept there
    python benchmarks/bench_tests.py --report /tmp/run/junit.xml      # report an earlier run again
    python benchmarks/bench_tests.py --compare-coverage /tmp/cov-before/covered.json /tmp/cov-after/covered.json

How it counts:

- **collection**: ``pytest --collect-only -q`` in its own process, wall-clock, median of
  ``--collect-runs`` (collection imports every test module and their imports: chromadb, litellm).
- **wall**: the whole ``pytest`` run, wall-clock, one run (the machine is shared: note the load
  average printed before and after).
- **per file / slowest**: from pytest's JUnit XML (``--junitxml``); a test's time is its setup,
  call and teardown. With ``-n`` the per-file sums are CPU-side work spread over the workers, so
  they add up to more than the wall.
- **coverage**: ``COVERAGE_PROCESS_START`` names a generated rc file (branch coverage, parallel
  data files), so coverage.py's own ``.pth`` hook starts measuring in the pytest process, in
  each xdist worker and in every subprocess the tests start with the environment kept (the CLI,
  the hook, the MCP server). Processes ended by a signal write no data (crash-injection tests);
  that holds before and after alike. ``covered.json`` lists, per file, the lines and the branch
  arcs executed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_test_command() -> str:
    """The README's test command (the line of the code block after ``<!-- test-command -->``)."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("<!-- test-command -->")
    block = [x for x in lines[start + 1:] if not x.startswith("```")]
    return block[0]


def readme_pytest_args() -> list[str]:
    """The pytest arguments of the README's test command (after ``python -m pytest``)."""
    cmd = readme_test_command()
    part = cmd.split("python -m pytest", 1)[1]
    return shlex.split(part)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def collect_time(runs: int, env: dict) -> tuple[float, int]:
    """Median wall seconds of ``pytest --collect-only -q`` and the number of tests collected."""
    times, count = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                             cwd=REPO, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        m = re.search(r"(\d+) tests? collected", out.stdout)
        count = int(m.group(1)) if m else sum(1 for x in out.stdout.splitlines() if "::" in x)
    return statistics.median(times), count


def rcfile(data: Path) -> Path:
    rc = data / "coveragerc"
    rc.write_text("[run]\nbranch = True\nsource = consolidate, judges\nparallel = True\n"
                  f"data_file = {data / 'cov'}\n", encoding="utf-8")
    return rc


def combine(data: Path) -> dict:
    """Combine the parallel data files in ``data``; write and return ``covered.json``:
    ``{relative file: {"lines": [...], "arcs": [[a, b], ...]}}``."""
    import coverage

    cov = coverage.Coverage(config_file=str(data / "coveragerc"), data_file=str(data / "cov"))
    cov.combine([str(data)], keep=True)
    cov.save()
    cd = cov.get_data()
    out = {}
    for f in sorted(cd.measured_files()):
        rel = os.path.relpath(f, REPO) if f.startswith(str(REPO)) else f
        # a file measured in another checkout (a subprocess that lost PYTHONPATH) counts under its name
        rel = re.sub(r"^.*?/(consolidate|judges)/", r"\1/", rel)
        entry = out.setdefault(rel, {"lines": set(), "arcs": set()})
        entry["lines"] |= set(cd.lines(f) or [])
        entry["arcs"] |= {tuple(a) for a in (cd.arcs(f) or [])}
    result = {k: {"lines": sorted(v["lines"]), "arcs": sorted(v["arcs"])} for k, v in out.items()}
    (data / "covered.json").write_text(json.dumps(result), encoding="utf-8")
    try:
        (data / "summary.txt").write_text(_summary(cov), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - a report is a convenience; covered.json is the record
        print(f"coverage report: {exc}")
    return result


def _summary(cov) -> str:
    import io

    buf = io.StringIO()
    # this checkout's files only, and none that is gone: a test's temporary venv (the packaging tests
    # install the wheel) is measured too, and its files are removed with it
    total = cov.report(file=buf, show_missing=False, skip_empty=True, ignore_errors=True,
                       include=[f"{REPO / name}/*" for name in ("consolidate", "judges")])
    return buf.getvalue() + f"\nTOTAL {total:.2f} %\n"


def compare(before: dict, after: dict) -> int:
    """Print lines and arcs covered in ``before`` and not in ``after``; their count."""
    lost_lines = lost_arcs = 0
    for f, b in sorted(before.items()):
        a = after.get(f, {"lines": [], "arcs": []})
        lines = sorted(set(b["lines"]) - set(a["lines"]))
        arcs = sorted({tuple(x) for x in b["arcs"]} - {tuple(x) for x in a["arcs"]})
        if lines:
            print(f"{f}: lines covered before, not after: {lines}")
        if arcs:
            print(f"{f}: branch arcs covered before, not after: {arcs[:40]}{' ...' if len(arcs) > 40 else ''}")
        lost_lines += len(lines)
        lost_arcs += len(arcs)
    def totals(d):
        return sum(len(v["lines"]) for v in d.values()), sum(len(v["arcs"]) for v in d.values())
    bl, ba = totals(before)
    al, aa = totals(after)
    print(f"lines covered: before {bl}, after {al}; arcs covered: before {ba}, after {aa}")
    print(f"lost: {lost_lines} lines, {lost_arcs} arcs")
    return lost_lines


def report(junit: Path, top: int) -> dict:
    """Per-file totals and the ``top`` slowest tests of a JUnit XML file; printed and returned."""
    root = ET.parse(junit).getroot()
    cases = []
    outcome = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for tc in root.iter("testcase"):
        t = float(tc.get("time") or 0)
        cls = tc.get("classname") or ""
        name = f"{cls}::{tc.get('name')}"
        file = next((p + ".py" for p in cls.split(".") if p.startswith("test_")), cls.split(".")[0] + ".py")
        kind = "passed"
        for child in tc:
            if child.tag in ("failure",):
                kind = "failed"
            elif child.tag == "error":
                kind = "error"
            elif child.tag == "skipped":
                kind = "skipped"
        outcome[kind] += 1
        cases.append((t, name, file, kind))
    total = sum(c[0] for c in cases)
    per_file: dict[str, list[float]] = {}
    for t, _n, f, _k in cases:
        per_file.setdefault(f, []).append(t)
    print(f"\n{len(cases)} tests: " + ", ".join(f"{v} {k}" for k, v in outcome.items() if v)
          + f"; sum of test times {total:.1f} s")
    print(f"\nper file (top {top}): seconds, share of the summed time, tests")
    for f, ts in sorted(per_file.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"  {sum(ts):8.1f} s {100 * sum(ts) / max(total, 1e-9):5.1f} %  {len(ts):4d}  {f}")
    print(f"\nslowest {top} tests (setup + call + teardown):")
    for t, n, _f, k in sorted(cases, reverse=True)[:top]:
        print(f"  {t:8.1f} s  {n}{'' if k == 'passed' else '  [' + k + ']'}")
    failed = [n for _t, n, _f, k in cases if k in ("failed", "error")]
    for n in failed:
        print(f"  FAILED {n}")
    return {"tests": len(cases), "sum": total, "outcome": outcome, "failed": failed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pytest-args", default=None,
                    help="pytest arguments (default: the README's test command's)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the JUnit XML and the log (default: a temporary one)")
    ap.add_argument("--coverage", type=Path, default=None, metavar="DIR",
                    help="also measure branch coverage (every process), data and covered.json in DIR")
    ap.add_argument("--collect-runs", type=int, default=3, help="collection timings (median; default 3)")
    ap.add_argument("--top", type=int, default=20, help="files and tests listed (default 20)")
    ap.add_argument("--report", type=Path, default=None, metavar="JUNIT", help="only report an earlier run's JUnit XML")
    ap.add_argument("--compare-coverage", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="lines covered in BEFORE's covered.json and not in AFTER's")
    a = ap.parse_args()

    if a.compare_coverage:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in a.compare_coverage)
        return 1 if compare(before, after) else 0
    if a.report:
        report(a.report, a.top)
        return 0

    args = shlex.split(a.pytest_args) if a.pytest_args is not None else readme_pytest_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-tests-"))
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(REPO))
    print(f"pytest {' '.join(args)}   (out: {out}; load {load()})")
    ctime, count = collect_time(a.collect_runs, env)
    print(f"collection: {ctime:.1f} s (median of {a.collect_runs}), {count} tests")
    if a.coverage:
        a.coverage.mkdir(parents=True, exist_ok=True)
        env["COVERAGE_PROCESS_START"] = str(rcfile(a.coverage))
    junit = out / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", *args, "--durations=50", f"--junitxml={junit}", "-p", "no:cacheprovider"]
    t0 = time.perf_counter()
    with open(out / "pytest.log", "w", encoding="utf-8") as log:
        rc = subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    print(f"pytest exit {rc}; wall {wall:.0f} s ({wall / 60:.1f} min); load after {load()}")
    if junit.exists():
        report(junit, a.top)
    if a.coverage:
        combine(a.coverage)
        summary = a.coverage / "summary.txt"
        print(summary.read_text(encoding="utf-8").splitlines()[-1] if summary.exists() else "no coverage summary")
    (out / "result.json").write_text(json.dumps({"args": args, "collection_s": ctime, "tests": count, "wall_s": wall,
                                                 "exit": rc}), encoding="utf-8")
    return rc


if __name__ == "__main__":
    sys.exit(main())
