"""Recall (issue 18): the CLI ``consolidate recall`` against its floor, recall latency at 100,000
memories against 1,000, and the model load paid once per process.

1. ``consolidate recall QUERY`` (a fresh process: interpreter, imports, model load, one query
   embedding, the index queries) against its floor, a ``python -c`` that does only that: import
   chromadb, open the collection, load the MiniLM embedding, embed the query, one Chroma query of
   5 neighbours. Interleaved, median of ``--runs`` (>= 5), on the cached store of 1,000 memories.
2. ``consolidate.recall(store, query)`` in one process per store, the model loaded and the index
   opened before timing: p50 and p95 over ``--queries`` real-note queries, at 1,000 and 100,000
   memories (the cached stores of bench_scale.py: random unit vectors, 95 % active; the same
   queries at both sizes), ``--runs`` rounds alternating the sizes, each round in a fresh process.
3. The model load once per process: in one process, two Store objects on two stores; the second
   store's first recall against the first store's (the second finds the model loaded).

Goals (issue 18): CLI recall at most 1.3x its floor; recall p50 and p95 at 100,000 at most 2x
those at 1,000.

    python benchmarks/bench_recall.py [--runs 5] [--queries 40]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CONSOLE, PYTHON, check_venv, goal_line, interleaved, median, ms, parser,  # noqa: E402
                    real_notes, run_cmd, skip_without_notes, spread)

QUERY = "which port does the API gateway listen on behind nginx"

FLOOR = r"""
import sys
import chromadb
from chromadb.config import Settings
from consolidate.store.index.embeddings import get_embedding_function
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
col = client.get_collection("memories")
vec = get_embedding_function("minilm").embed([sys.argv[2]])[0]
col.query(query_embeddings=[vec], n_results=5, include=["documents", "metadatas", "distances"])
"""

LATENCY = r"""
import json, statistics, sys, time
from consolidate import Store, recall
store = Store(sys.argv[1], project="bench")
queries = json.loads(open(sys.argv[2], encoding="utf-8").read())
recall(store, queries[0], record=False)  # model loaded, index opened: not timed
xs = []
for q in queries:
    t = time.perf_counter()
    recall(store, q, record=False)
    xs.append(time.perf_counter() - t)
print(json.dumps(xs))
"""

ONCE = r"""
import json, sys, time
from consolidate import Store, recall
out = {}
for label, path in (("first store", sys.argv[1]), ("second store", sys.argv[2])):
    store = Store(path, project="bench")
    t = time.perf_counter()
    store.embedder().embed([sys.argv[3]])
    out[label + " embeds"] = time.perf_counter() - t
    t = time.perf_counter()
    recall(store, sys.argv[3], record=False)
    out[label] = time.perf_counter() - t
print(json.dumps(out))
"""


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main() -> int:
    ap = parser(__doc__, 5, "timed runs per case")
    ap.add_argument("--queries", type=int, default=40, help="recall queries per store and round (default 40)")
    args = ap.parse_args()
    check_venv()
    import bench_scale

    notes = real_notes(200)
    skip_without_notes(notes)
    queries = [n["content"][:300] for n in notes[: args.queries]]
    caches = {}
    for n in (1000, 100000):
        folder, _ = bench_scale.cached_store(n, False)
        bench_scale.with_context_top(folder)
        caches[n] = folder
    tmp = Path(tempfile.mkdtemp(prefix="bench-recall-"))
    copies = {}
    for n, folder in caches.items():  # recall records what it showed: on copies
        copies[n] = tmp / f"store-{n}"
        shutil.copytree(folder / ".memofs", copies[n] / ".memofs")
    (tmp / "queries.json").write_text(json.dumps(queries))
    small = str(copies[1000] / ".memofs")

    # 1. CLI recall against its floor
    cases = {
        'python -c "import sqlite3, json"': lambda: run_cmd([PYTHON, "-c", "import sqlite3, json"]),
        "floor: chromadb + model load + embed + one query": lambda: run_cmd(
            [PYTHON, "-c", FLOOR, str(copies[1000] / ".memofs" / "chroma"), QUERY]),
        "consolidate recall QUERY": lambda: run_cmd([CONSOLE, "recall", QUERY, "--store", small]),
    }
    res = interleaved(cases, args.runs, warmup=1)
    floor = median(res["floor: chromadb + model load + embed + one query"])
    print(f"1. CLI recall on 1,000 memories, {args.runs} interleaved rounds (after 1 warm-up), wall clock:")
    for name, xs in res.items():
        print(f"  {name:<52} {spread(xs)}   {median(xs) / floor:.2f}x of the floor")
    cli_ratio = median(res["consolidate recall QUERY"]) / floor

    # 2. recall latency at 100,000 against 1,000, in-process
    lat: dict[int, list[float]] = {1000: [], 100000: []}
    p50s: dict[int, list[float]] = {1000: [], 100000: []}
    p95s: dict[int, list[float]] = {1000: [], 100000: []}
    for r in range(args.runs):
        for n in ((1000, 100000) if r % 2 == 0 else (100000, 1000)):
            out = subprocess.run([PYTHON, "-c", LATENCY, str(copies[n] / ".memofs"), str(tmp / "queries.json")],
                                 capture_output=True, text=True, check=True)
            xs = json.loads(out.stdout.strip().splitlines()[-1])
            lat[n] += xs
            p50s[n].append(median(xs))
            p95s[n].append(p95(xs))
    print(f"\n2. consolidate.recall() in-process, {len(queries)} queries x {args.runs} rounds (sizes alternating,"
          " a fresh process each; model and index loaded before timing); median over rounds:")
    for n in (1000, 100000):
        print(f"  {n:>7,} memories: p50 {ms(median(p50s[n]))}, p95 {ms(median(p95s[n]))}"
              f" (all {len(lat[n])} calls: p50 {ms(median(lat[n]))}, p95 {ms(p95(lat[n]))})")
    r50 = median(p50s[100000]) / median(p50s[1000])
    r95 = median(p95s[100000]) / median(p95s[1000])
    print(f"  100,000 / 1,000: p50 {r50:.2f}x, p95 {r95:.2f}x")

    # 3. the model load, once per process
    once = [json.loads(subprocess.run([PYTHON, "-c", ONCE, small, str(copies[100000] / ".memofs"), QUERY],
                                      capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
            for _ in range(args.runs)]
    first = median([o["first store"] for o in once])
    second = median([o["second store"] for o in once])
    e1 = median([o["first store embeds"] for o in once])
    e2 = median([o["second store embeds"] for o in once])
    print(f"\n3. one process, two stores ({args.runs} processes, median): the first store's first embedding"
          f" {ms(e1)} (imports and loads the model), the second store's {ms(e2)} (the model loaded again, or"
          f" shared); then the first recall of each store {ms(first)} and {ms(second)} (opens its index)")
    shutil.rmtree(tmp, ignore_errors=True)
    ok1 = goal_line("CLI recall", cli_ratio, 1.3, what="of its floor")
    ok2 = goal_line("recall p50 at 100,000 memories", r50, 2.0, what="of 1,000's")
    ok3 = goal_line("recall p95 at 100,000 memories", r95, 2.0, what="of 1,000's")
    return 0 if ok1 and ok2 and ok3 else 1


if __name__ == "__main__":
    sys.exit(main())
