"""Memory (issue 7, benchmark 7): peak RSS of a worker consolidating 1,000 real notes.

Measured per child process (``/usr/bin/time -f %M``, the maximum resident set size of ``time -v``,
so the child is forked by a small process; else ``os.wait4``), median of 5
runs, interleaved, each on a fresh store holding one ended session of 1,000 real notes (filled
untimed by this process):

- ``consolidate worker --judge scripted:FILE``: the command the session-end hook starts, with a
  scripted judge file that keeps the same 1 note in 5 (by content hash) as the other benchmarks
  (the notes it does not name stay unjudged and die with the session);
- ``python -c`` running ``run_queue`` with the zero-latency hash judge of bench_pipeline.py;
- the floor: one process that loads the same embedding function, embeds the kept statements and
  adds them to a fresh Chroma PersistentClient;
- ``python -c "import sqlite3, json"`` for scale, and two parts of the floor alone: ``import
  chromadb``, and the embedding model loaded with one text embedded.

Issue 7 sets no goal for memory: the last line gives the worker's peak against the floor's.

    python benchmarks/bench_memory.py [--runs 5]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CONSOLE, PYTHON, check_venv, fill_session, keeps, median, real_notes, parser,  # noqa: E402
                    skip_without_notes)

BENCH_DIR = str(Path(__file__).resolve().parent)

RUN_QUEUE = r"""
import sys
sys.path.insert(0, sys.argv[2])
from _bench import scripted_chain_factory
from consolidate.pipeline.run import run_queue
from consolidate.store.store import Store
plans = run_queue(Store(sys.argv[1], project="bench"), chain_factory=scripted_chain_factory(), time_box=None)
assert plans and plans[0].finished
"""

DOCS = r"""
import json, sys
from consolidate.store.store import Store
docs = Store(sys.argv[1], project="bench").longterm().collection.get(include=["documents"])["documents"]
open(sys.argv[2], "w", encoding="utf-8").write(json.dumps(docs))
"""

FLOOR = r"""
import json, sys
import chromadb
from chromadb.config import Settings
from consolidate.store.index.embeddings import get_embedding_function
docs = json.load(open(sys.argv[1], encoding="utf-8"))
ef = get_embedding_function("minilm")
client = chromadb.PersistentClient(path=sys.argv[2], settings=Settings(anonymized_telemetry=False))
col = client.get_or_create_collection("memories", embedding_function=None, metadata={"hnsw:space": "cosine"})
col.add(ids=[f"m{i}" for i in range(len(docs))], documents=docs, embeddings=ef.embed(docs))
"""


TIME = "/usr/bin/time"


def peak_rss(argv: list[str], tmp: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one child process: through ``/usr/bin/time -f %M`` when it
    exists (a small process forks the child, so the figure is the child's own), else ``os.wait4``
    (a forked child's maximum starts at this process's size)."""
    import time

    out = tmp / "time.out"
    wrapped = [TIME, "-f", "%M", "-o", str(out), *argv] if os.path.exists(TIME) else argv
    t = time.perf_counter()
    p = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    p.stderr.close()
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(argv)}\n{err[-2000:]}")
    if wrapped is not argv:
        return int(out.read_text().split()[-1]) / 1024.0, dt  # kilobytes
    return usage.ru_maxrss / 1024.0, dt  # Linux: kilobytes


def main() -> int:
    ap = parser(__doc__, 5, "runs of each")
    ap.add_argument("--notes", type=int, default=1000)
    args = ap.parse_args()
    runs = args.runs
    check_venv()
    notes = real_notes(args.notes)
    skip_without_notes(notes)
    from consolidate.store.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    kept = [n["content"] for n in notes if keeps(n["content"])]
    script = tmp / "script.json"
    script.write_text(json.dumps({c: {"verdict": "keep", "statement": c, "type": "fact", "evidence": "observed-success",
                                      "confidence": "high", "reason": "benchmark keep"} for c in kept}))
    # the floor embeds what a pipeline run writes: the durable statements of one run
    probe = Store(tmp / "probe" / ".memofs", project="bench")
    fill_session(probe, "mem-1000", notes)
    probe.close()
    # in children, so that this process stays small: a forked child starts with its parent's RSS
    subprocess.run([PYTHON, "-c", RUN_QUEUE, str(probe.path), BENCH_DIR], check=True)
    subprocess.run([PYTHON, "-c", DOCS, str(probe.path), str(tmp / "docs.json")], check=True)
    docs = json.loads((tmp / "docs.json").read_text())
    k = [0]

    def fresh() -> str:
        k[0] += 1
        store = Store(tmp / f"s{k[0]}" / ".memofs", project="bench")
        fill_session(store, "mem-1000", notes)
        store.close()
        return str(store.path)

    cases = {
        "consolidate worker --judge scripted:FILE": lambda: [CONSOLE, "worker", "--store", fresh(),
                                                              "--judge", f"scripted:{script}"],
        "python -c run_queue (hash judge)": lambda: [PYTHON, "-c", RUN_QUEUE, fresh(), BENCH_DIR],
        "floor: embed + Chroma add, one process": lambda: [PYTHON, "-c", FLOOR, str(tmp / "docs.json"),
                                                            str(tmp / f"floor{k[0] + 1}")],
        'python -c "import sqlite3, json"': lambda: [PYTHON, "-c", "import sqlite3, json"],
        '  part: python -c "import chromadb"': lambda: [PYTHON, "-c", "import chromadb"],
        "  part: embedding model loaded, one text embedded": lambda: [
            PYTHON, "-c", "from consolidate.store.index.embeddings import get_embedding_function as f; f('minilm').embed(['x'])"],
    }
    rss: dict[str, list[float]] = {n: [] for n in cases}
    secs: dict[str, list[float]] = {n: [] for n in cases}
    names = list(cases)
    for r in range(runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            argv = cases[name]()
            if name.startswith("floor"):
                k[0] += 1
            m, s = peak_rss(argv, tmp)
            rss[name].append(m)
            secs[name].append(s)
        for p in tmp.glob("s*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in tmp.glob("floor*"):
            shutil.rmtree(p, ignore_errors=True)
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"{len(notes)} real notes in one ended session; {len(docs)} durable memories written per run;"
          f" peak RSS per child, {runs} interleaved runs, median (min-max):")
    how = (f"{TIME} -f %M" if os.path.exists(TIME) else
           f"os.wait4; this process peaked at {own:.0f} MB and a forked child's figure starts at its parent's size")
    print(f"  (measured with {how})")
    floor = median(rss["floor: embed + Chroma add, one process"])
    for name in names:
        print(f"  {name:<44} {median(rss[name]):7.1f} MB ({min(rss[name]):.1f} - {max(rss[name]):.1f})"
              f"  {median(rss[name]) / floor:5.2f}x of the floor   wall {median(secs[name]):.2f} s")
    worker = median(rss["consolidate worker --judge scripted:FILE"])
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nGOAL worker peak RSS: {worker:.0f} MB = {worker / floor:.2f}x of the floor ({floor:.0f} MB, embed +"
          f" Chroma add in one process) (no goal set in issue 7): REPORTED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
