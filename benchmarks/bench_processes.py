"""Many processes on one store (issue 11): recall latency of the process-safe index against the old
path, and the robustness figure "8 concurrent `run` processes over 8 sessions of 150 notes, 5
trials, the MCP server answering recall correctly after each".

Recall latency, measured side by side in one process on a store of about 450 memories (MiniLM; the script prints the count), runs
interleaved, medians:
- ``old path``: what recall did before issue 11: embed the query, then Chroma's count and query
  straight on the collection opened once (no freshness check; wrong after another process wrote);
- ``fresh, nobody wrote``: ``LongTerm.search`` (reads the generation token, holds the index lock);
- ``after another process wrote``: the same right after the generation token changed (the client is
  closed, dropped from Chroma's cache and reopened: the cost the first recall after a write pays).

Robustness: each trial builds a new store with 8 ended sessions of 150 flagged notes, starts 8
``consolidate run`` processes at once, and checks: every exit code 0, no traceback, each session
applied exactly once, and an MCP server (started before the runs, alive across them) recalls a
sample of the new memories by their own text.

    python benchmarks/bench_processes.py [--runs 5] [--trials 5] [--skip-trials]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from _bench import check_venv, interleaved, median, parser, spread  # noqa: E402


def recall_latency(runs: int) -> None:
    from consolidate import Store
    from consolidate.store.index.generation import bump_generation
    from many_processes import fill_sessions, finish, note_texts, start_cli

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".memofs"
        fill_sessions(path, ["s1", "s2", "s3"], 150)
        results = finish([start_cli(path, "run")])
        assert results[0][0] == 0, results[0][2][-2000:]
        store = Store(path, project="p")
        lt = store.longterm()
        print(f"store: {lt.count()} memories (MiniLM)")
        queries = note_texts("b", 40)
        i = {"n": 0}

        def query() -> str:
            i["n"] += 1
            return queries[i["n"] % len(queries)]

        def old_path():
            q = query()
            t = time.perf_counter()
            vec = lt.embed([q])[0]
            col = lt._index.collection  # the collection as opened: no freshness check
            if col.count():
                col.query(query_embeddings=[vec], n_results=5, where={"$and": [{"tier": "durable"},
                                                                                {"status": {"$in": ["active"]}}]},
                          include=["documents", "metadatas", "distances"])
            return time.perf_counter() - t

        def fresh():
            q = query()
            t = time.perf_counter()
            lt.search(q)
            return time.perf_counter() - t

        def after_write():
            q = query()
            bump_generation(store)  # what another process's write does to this one (untimed)
            t = time.perf_counter()
            lt.search(q)
            return time.perf_counter() - t

        cases = {"old path (no freshness check)": old_path, "fresh, nobody wrote": fresh,
                 "after another process wrote (reopen)": after_write}
        # each timed call is one recall; 20 calls per run, the run's figure is their median
        per_run = {name: [] for name in cases}
        for _ in range(runs):
            got = interleaved({n: (lambda f=f: median([f() for _ in range(20)])) for n, f in cases.items()}, 1,
                              warmup=0)
            for n, xs in got.items():
                per_run[n] += xs
        base = median(per_run["old path (no freshness check)"])
        print(f"{'recall latency':40} median of {runs} runs (each the median of 20 recalls)")
        for name, xs in per_run.items():
            print(f"  {name:38} {spread(xs)}   {median(xs) / base:.2f}x old path")
        store.close()


def trials(n: int, processes: int = 8, per_session: int = 150) -> bool:
    from many_processes import (MCPSession, applied_per_session, check_index, fill_sessions, finish,
                                note_texts, start_cli)

    all_ok = True
    for trial in range(n):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / ".memofs"
            fill_sessions(path, ["seed"], 20)
            assert finish([start_cli(path, "run")])[0][0] == 0
            sessions = [f"c{i}" for i in range(processes)]
            fill_sessions(path, sessions, per_session)
            with MCPSession(path) as mcp:
                assert mcp.recall_ids(note_texts("seed", 1)[0])  # the server's index is open before the runs
                t = time.perf_counter()
                results = finish([start_cli(path, "run") for _ in range(processes)])
                seconds = time.perf_counter() - t
                codes = [c for c, _, _ in results]
                tracebacks = sum("Traceback" in err for _, _, err in results)
                applied = applied_per_session(path)
                once = all(applied.get(s) == 1 for s in sessions)
                state = check_index(path)
                sample = sorted(state["docs"].items())[:: max(1, len(state["docs"]) // 40)]
                recalled = sum(mid in mcp.recall_ids(text) for mid, text in sample)
            ok = (codes == [0] * processes and not tracebacks and once and not state["not_found"]
                  and recalled == len(sample))
            all_ok &= ok
            print(f"trial {trial + 1}: exit codes {codes}, tracebacks {tracebacks}, sessions applied once:"
                  f" {once}, index {state['count']} memories, not found by own text {len(state['not_found'])},"
                  f" MCP recall {recalled}/{len(sample)}, {seconds:.0f} s: {'OK' if ok else 'FAILED'}")
    print(f"{processes} concurrent runs x {per_session} notes: {'all' if all_ok else 'NOT all'} {n} trials OK")
    return all_ok


def main() -> int:
    ap = parser(__doc__, 5)
    ap.add_argument("--trials", type=int, default=5, help="robustness trials (default 5)")
    ap.add_argument("--skip-trials", action="store_true")
    args = ap.parse_args()
    check_venv()
    recall_latency(args.runs)
    if args.skip_trials:
        return 0
    return 0 if trials(args.trials) else 1


if __name__ == "__main__":
    sys.exit(main())
