"""What importing chromadb costs a process (issue 30; every CLI command, worker and MCP server that
opens the index pays it): ``consolidate.store.index.chroma_load.chromadb()`` with its deferral of the
imports no use here reaches (httpx's CLI, the OpenTelemetry gRPC exporter) and without it, in new
processes, side by side, interleaved round by round; median CPU seconds (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``), median wall seconds and the modules imported.

    python benchmarks/bench_chroma_import.py --runs 11
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import time

from _bench import PYTHON, REPO, check_venv, parser

CODE = ("import sys\nfrom consolidate.store.index import chroma_load\n{switch}\nchroma_load.chromadb()\n"
        "print(len(sys.modules))\n")
CASES = {"deferred (as shipped)": "", "not deferred": "chroma_load._defer_unused_imports = lambda: None"}


def one(switch: str) -> tuple[float, float, int]:
    """(CPU s, wall s, modules) of one new process importing chromadb through chroma_load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([PYTHON, "-c", CODE.format(switch=switch)], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, int(out.split()[-1])


def main() -> None:
    """Print one line per case: median CPU, median wall, modules, and the ratio to the first case."""
    args = parser(__doc__, 11, "new processes per case").parse_args()
    check_venv()
    got: dict[str, list[tuple[float, float, int]]] = {name: [] for name in CASES}
    one("")  # warm the file cache
    for _ in range(args.runs):
        for name, switch in CASES.items():
            got[name].append(one(switch))
    base = statistics.median(c for c, _, _ in got["deferred (as shipped)"])
    rows = {}
    for name, runs in got.items():
        cpu = statistics.median(c for c, _, _ in runs)
        wall = statistics.median(w for _, w, _ in runs)
        rows[name] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "modules": runs[0][2],
                      "cpu_ratio": round(cpu / base, 2)}
        print(f"{name:24s} CPU {cpu:.3f} s  wall {wall:.3f} s  modules {runs[0][2]}  CPU x{cpu / base:.2f}")
    print(json.dumps({"runs": args.runs, "cases": rows}))


if __name__ == "__main__":
    main()
