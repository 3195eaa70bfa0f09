"""Idle run (issue 7, benchmark 2): ``consolidate run --session S`` for an ended session with no
notes, against ``python -c pass`` and ``python -c "import sqlite3, json"``, interleaved.

Goal: at most 1.5 times ``python -c "import sqlite3, json"``, and no heavy import (docs/design.md#non-negotiables:
idle sessions cost nothing). Each timed run takes its own session (ended, no notes) in one fresh
temp store; the store holds a long-term tier (a manifest) like a store in use would.

    python benchmarks/bench_idle.py [--runs 15]
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CONSOLE, PYTHON, check_venv, goal_line, interleaved, median, ms, parser,  # noqa: E402
                    report_importtime, run_cmd, spread)

#: One idle run under cProfile in a fresh interpreter: the consolidate functions by cumulative time.
PROFILE = r"""
import cProfile, io, pstats, sys, time
t = time.perf_counter()
import consolidate.cli.main as cli
t_import = time.perf_counter() - t
pr = cProfile.Profile()
t = time.perf_counter()
pr.enable()
cli.main(["run", "--session", sys.argv[2], "--store", sys.argv[1]])
pr.disable()
t_main = time.perf_counter() - t
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(r"consolidate|judges|importlib._bootstrap>:1165", 14)
sys.stderr.write(f"import consolidate.cli.main {t_import * 1000:.1f} ms; main() {t_main * 1000:.1f} ms\n" + s.getvalue())
"""


def main() -> int:
    ap = parser(__doc__, 15, "timed runs per case")
    args = ap.parse_args()
    runs = args.runs
    check_venv()
    from consolidate.core.atomic import write_json_atomic
    from consolidate.store.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    store = Store(tmp / "store", project="bench")
    # a store in use has a long-term tier: its manifest (the index itself is never opened here)
    write_json_atomic(store.sub("manifest.json"), {"layout_version": 1,
                                                   "embedding": {"id": "minilm-l6-v2-int8-onnx", "dimension": 384}})
    n_sessions = (runs + 3) * 2 + 4
    for i in range(n_sessions):
        store.sessions.end(f"idle{i}", "success")
    store.close()
    ids = itertools.count()

    def idle_run():
        return run_cmd([CONSOLE, "run", "--session", f"idle{next(ids)}", "--store", str(store.path)])

    print(f"python: {PYTHON}\nconsole script: {CONSOLE}\nstore: {store.path} ({n_sessions} ended sessions, no notes)\n")
    cases = {
        "python -c pass": lambda: run_cmd([PYTHON, "-c", "pass"]),
        'python -c "import sqlite3, json"': lambda: run_cmd([PYTHON, "-c", "import sqlite3, json"]),
        "consolidate run --session S (ended, no notes)": idle_run,
        "  imports only: python -c 'import consolidate.cli.main, consolidate.pipeline.run'": lambda: run_cmd(
            [PYTHON, "-c", "import consolidate.cli.main, consolidate.pipeline.run, consolidate.cli.commands.run"]),
    }
    res = interleaved(cases, runs, warmup=2)
    base = median(res['python -c "import sqlite3, json"'])
    print(f"{runs} interleaved rounds (after 2 warm-up rounds); median, min, max of wall clock")
    for name, xs in res.items():
        print(f"  {name:<75} {spread(xs)}   {median(xs) / base:.2f}x of import sqlite3, json")

    # what the idle run printed, once
    out = subprocess.run([CONSOLE, "run", "--session", f"idle{next(ids)}", "--store", str(store.path)],
                         capture_output=True, text=True)
    print(f"  its output: {' | '.join(out.stdout.strip().splitlines()[:3])[:200]}")

    argv = [PYTHON, "-X", "importtime", "-m", "consolidate", "run", "--session", f"idle{next(ids)}",
            "--store", str(store.path)]
    heavy, packages = report_importtime("python -X importtime -m consolidate run --session S", argv)

    ratio = median(res["consolidate run --session S (ended, no notes)"]) / base
    if ratio > 1.5:
        p = subprocess.run([PYTHON, "-c", PROFILE, str(store.path), f"idle{next(ids)}"], capture_output=True, text=True)
        print("\nWhere the idle run's time goes (one run under cProfile in a fresh interpreter; the"
              " consolidate functions by cumulative time):")
        print("  " + "\n  ".join(line for line in p.stderr.splitlines() if line.strip())[:6000])

    print(f"\nidle run {ms(median(res['consolidate run --session S (ended, no notes)']))} vs python -c pass"
          f" {ms(median(res['python -c pass']))} vs import sqlite3, json {ms(base)}")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"GOAL no heavy import on the idle path: {'MISSED (' + ', '.join(heavy) + ')' if heavy else 'MET'}")
    ok = goal_line("idle run", ratio, 1.5, what='of python -c "import sqlite3, json"')
    return 0 if ok and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
