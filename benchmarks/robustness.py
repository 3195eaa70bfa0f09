"""One summary of the robustness tests (issue #6): crash points survived of those tried, concurrent
runs without loss, bad inputs rejected cleanly of those tried, time boxes kept.

    python benchmarks/robustness.py

Runs ``pytest -m robustness`` and counts the outcomes per test file. Needs the test extra.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {
    "test_crash": "crash points survived (SIGKILL, rerun converges to the no-crash store)",
    "test_concurrency": "concurrent runs / undo without loss",
    "test_many_processes": "many processes on one store at realistic size (MiniLM, 150 notes a session)",
    "test_bad_input": "bad inputs rejected cleanly or kept byte-exact",
    "test_timeboxes": "time boxes kept",
}


def main() -> int:
    with TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "robustness", f"--junitxml={report}",
                               "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
        if not report.exists():
            print(proc.stdout[-2000:], proc.stderr[-2000:])
            return 1
        counts: dict[str, list[int]] = {}
        for case in ET.parse(report).iter("testcase"):
            group = case.get("classname", "").split(".")[-1]
            ok = not any(child.tag in ("failure", "error", "skipped") for child in case)
            tally = counts.setdefault(group, [0, 0])
            tally[0] += ok
            tally[1] += 1
    total_ok = total = 0
    for group, label in GROUPS.items():
        ok, n = counts.get(group, [0, 0])
        total_ok, total = total_ok + ok, total + n
        print(f"{ok:3d} of {n:3d}  {label}")
    print(f"ROBUSTNESS: {total_ok} of {total} passed" + (": MET" if total_ok == total and total else ": MISSED"))
    return 0 if total_ok == total and total else 1


if __name__ == "__main__":
    sys.exit(main())
