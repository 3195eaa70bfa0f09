"""Worker memory at scale (issue 18): the peak RSS of ``consolidate worker`` consolidating the same
1,000 real notes (scripted judge keeping 1 in 5, as bench_memory.py) into a store of 100,000
memories against an empty store. Goal: at most 1.3x.

Each run works on a fresh copy of the cached store of bench_scale.py (random unit vectors, the
SessionStart context already written; the copy is not measured); peak RSS per child process with
``/usr/bin/time -f %M`` (bench_memory.peak_rss), runs interleaved, median of ``--runs`` (>= 5).
Also, for the floor of a store of that size, the peak of a process that only opens the index and
answers one query (Chroma loads the whole HNSW index of the collection into memory).

    python benchmarks/bench_memory_scale.py [--runs 5] [--size 100000]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CONSOLE, PYTHON, check_venv, fill_session, goal_line, keeps, median, parser,  # noqa: E402
                    real_notes, skip_without_notes)

OPEN_INDEX = r"""
import sys
import chromadb
from chromadb.config import Settings
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
col = client.get_collection("memories")
col.query(query_embeddings=[[1.0] + [0.0] * 383], n_results=5)
"""


def main() -> int:
    ap = parser(__doc__, 5, "runs of each")
    ap.add_argument("--size", type=int, default=100000, help="memories in the big store (default 100000)")
    ap.add_argument("--notes", type=int, default=1000)
    args = ap.parse_args()
    check_venv()
    import bench_scale
    from bench_memory import TIME, peak_rss

    notes = real_notes(args.notes)
    skip_without_notes(notes)
    from consolidate.store.store import Store

    folder, info = bench_scale.cached_store(args.size, False)
    bench_scale.with_context_top(folder)
    tmp = Path(tempfile.mkdtemp(prefix="bench-memscale-"))
    kept = [n["content"] for n in notes if keeps(n["content"])]
    script = tmp / "script.json"
    script.write_text(json.dumps({c: {"verdict": "keep", "statement": c, "type": "fact", "evidence": "observed-success",
                                      "confidence": "high", "reason": "benchmark keep"} for c in kept}))
    k = [0]

    def fresh(source: Path | None) -> str:
        k[0] += 1
        dest = tmp / f"s{k[0]}"
        if source is not None:
            shutil.copytree(source / ".memofs", dest / ".memofs")
        store = Store(dest / ".memofs", project=bench_scale.SCOPE)
        fill_session(store, "mem-1000", notes)
        store.close()
        return str(store.path)

    big = f"{args.size:,}"
    cases = {
        "empty": lambda: [CONSOLE, "worker", "--store", fresh(None), "--judge", f"scripted:{script}"],
        big: lambda: [CONSOLE, "worker", "--store", fresh(folder), "--judge", f"scripted:{script}"],
        f"floor at {big}: open the index, one query": lambda: [
            PYTHON, "-c", OPEN_INDEX, str(folder / ".memofs" / "chroma")],
    }
    rss: dict[str, list[float]] = {n: [] for n in cases}
    secs: dict[str, list[float]] = {n: [] for n in cases}
    names = list(cases)
    for r in range(args.runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            m, s = peak_rss(cases[name](), tmp)
            rss[name].append(m)
            secs[name].append(s)
            for p in tmp.glob("s*"):
                shutil.rmtree(p, ignore_errors=True)
        print(f"  round {r + 1}/{args.runs} done", flush=True)
    print(f"\nconsolidate worker on {len(notes)} real notes (1 in 5 kept), peak RSS per child ({TIME} -f %M),"
          f" {args.runs} interleaved runs, median (min-max):")
    empty = median(rss["empty"])
    for name in names:
        print(f"  {name:<44} {median(rss[name]):7.1f} MB ({min(rss[name]):.1f} - {max(rss[name]):.1f})"
              f"  {median(rss[name]) / empty:5.2f}x of the empty store's   wall {median(secs[name]):.2f} s")
    shutil.rmtree(tmp, ignore_errors=True)
    ok = goal_line(f"worker peak memory at {big} memories", median(rss[big]) / empty, 1.3, what="of the empty store's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
