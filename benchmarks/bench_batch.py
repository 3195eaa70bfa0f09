"""Batch concurrency (issue 7, benchmark 6): 20 queued sessions, a judge with a simulated latency
of 1 s per call (``ScriptedJudge(latency=1.0)``, keeping 1 note in 5), drained with concurrency 8
against concurrency 1, interleaved. Goal: a speedup of at least 5.

Each session holds 20 real notes (one judge batch, so one 1-s call) taken from a different real
session. The drain is ``consolidate.pipeline.batch.run_batch`` when the module exists (the ``consolidate
batch`` command); otherwise a ThreadPoolExecutor over ``consolidate.pipeline.run.run_session`` per
claimed session, and the output says so. Each run gets a fresh store (filled untimed).

    python benchmarks/bench_batch.py [--runs 5] [--sessions 20] [--latency 1.0]
"""

from __future__ import annotations

import io
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (STAGE_SECONDS, STEP_SECONDS, check_venv, fill_session, goal_line, parser,  # noqa: E402
                    install_stage_timers, install_step_timers, interleaved, median, real_sessions, release_chroma, scripted_chain_factory,
                    skip_without_notes)

LOCKED = ("contradiction", "provenance", "withdrawn", "apply")


def drain_function():
    """(name, drain(store, concurrency, factory) -> list of per-session results)."""
    try:
        from consolidate.pipeline.batch import run_batch
    except ImportError:
        run_batch = None
    if run_batch is not None:
        def drain(store, concurrency, factory):
            r = run_batch(store, concurrency=concurrency, chain_factory=factory, out=io.StringIO())
            return r.sessions
        return "consolidate.pipeline.batch.run_batch", drain

    from concurrent.futures import ThreadPoolExecutor

    from consolidate.pipeline.run import run_session
    from consolidate.pipeline.stages.apply import summary

    def drain(store, concurrency, factory):
        def one(row):
            claimed = store.sessions.claim(row["session_id"])
            if claimed is None:
                return {"session_id": row["session_id"], "skipped": True}
            plan = run_session(store, claimed["session_id"], outcome=claimed["outcome"], chain_factory=factory)
            return {"session_id": plan.session_id, **summary(plan)}
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return list(pool.map(one, store.sessions.pending()))
    return ("ThreadPoolExecutor over consolidate.pipeline.run.run_session (consolidate.pipeline.batch is not there yet)", drain)


def install_embed_timer() -> None:
    """Time LongTerm.embed (called by the contradiction stage, under the store lock; the first call of
    a process also loads the model)."""
    import functools

    from consolidate.store.index import longterm

    fn = longterm.LongTerm.embed

    @functools.wraps(fn)
    def timed(self, texts):
        t = time.perf_counter()
        try:
            return fn(self, texts)
        finally:
            STEP_SECONDS["contradiction: embedding the keepers (LongTerm.embed)"] = \
                STEP_SECONDS.get("contradiction: embedding the keepers (LongTerm.embed)", 0.0) + time.perf_counter() - t

    longterm.LongTerm.embed = timed


def main() -> int:
    ap = parser(__doc__, 5, "timed runs of each concurrency")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--notes", type=int, default=20, help="notes per session (default 20: one judge call)")
    ap.add_argument("--latency", type=float, default=1.0, help="seconds per judge call (default 1.0)")
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    runs = args.runs
    check_venv()
    real = real_sessions()
    skip_without_notes(real)
    slugs = [s for s, rows in real.items() if len(rows) >= args.notes][:args.sessions]
    if len(slugs) < args.sessions:
        print(f"note: only {len(slugs)} real sessions have {args.notes} notes")
    sessions = {f"b{i:02d}-{s}": real[s][:args.notes] for i, s in enumerate(slugs)}
    name, drain = drain_function()
    factory = scripted_chain_factory(latency=args.latency)
    tmp = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    install_stage_timers()
    install_step_timers()
    install_embed_timer()
    from consolidate.store.store import Store

    state = {"k": 0}
    per_run: dict[str, list[dict]] = {}

    def case(concurrency: int):
        def run() -> float:
            state["k"] += 1
            store = Store(tmp / f"r{state['k']}" / ".memofs", project="bench")
            for sid, notes in sessions.items():
                fill_session(store, sid, notes)
            STAGE_SECONDS.clear()
            STEP_SECONDS.clear()
            t = time.perf_counter()
            results = drain(store, concurrency, factory)
            dt = time.perf_counter() - t
            errors = [r for r in results if "error" in r or r.get("skipped")]
            assert len(results) == len(sessions) and not errors, errors[:3]
            assert not store.sessions.pending(), "sessions left in the queue"
            per_run.setdefault(f"concurrency {concurrency}", []).append(
                {"durable": sum(r.get("written_durable", 0) for r in results), "stages": dict(STAGE_SECONDS),
                 "steps": dict(STEP_SECONDS)})
            store.close()
            del store
            release_chroma()
            shutil.rmtree(tmp / f"r{state['k']}", ignore_errors=True)
            return dt
        return run

    c = args.concurrency
    print(f"drain: {name}")
    print(f"{len(sessions)} queued sessions x {args.notes} real notes (one judge call each); judge latency"
          f" {args.latency:g} s per call; keeps 1 note in 5\n")
    res = interleaved({"concurrency 1": case(1), f"concurrency {c}": case(c)}, runs, warmup=1)
    per_run = {k: v[1:] for k, v in per_run.items()}  # drop the warm-up round
    one, many = median(res["concurrency 1"]), median(res[f"concurrency {c}"])
    n = len(sessions)
    ideal_one, ideal_many = n * args.latency, math.ceil(n / c) * args.latency
    print(f"{runs} interleaved rounds (after 1 warm-up round); median (min-max) wall clock:")
    for label, xs in res.items():
        rows = per_run[label]
        print(f"  {label:<14} {median(xs):6.2f} s ({min(xs):.2f} - {max(xs):.2f});"
              f" {median([r['durable'] for r in rows]):.0f} durable memories written")
    print(f"  judge waits alone: {ideal_one:.0f} s at concurrency 1, {ideal_many:.0f} s at concurrency {c}"
          f" (ceil({n}/{c}) waves): the best speedup possible is {ideal_one / ideal_many:.2f}")
    speedup = one / many
    locked = {label: median([sum(r["stages"].get(s, 0) for s in LOCKED) for r in rows]) for label, rows in per_run.items()}
    unlocked = {label: median([sum(v for s, v in r["stages"].items() if s not in LOCKED) for r in rows])
                for label, rows in per_run.items()}
    print(f"\nTime in the stages summed over the {n} sessions (median per run): outside the store lock (count to"
          f" write policy, judge waits included) and under it (contradiction, provenance, apply: one session at a"
          f" time):")
    for label in per_run:
        print(f"  {label:<14} outside the lock {unlocked[label]:6.2f} s, under the lock {locked[label]:6.2f} s")
    if speedup < 5:
        print(f"\nWhere the time goes at concurrency {c}: the sessions' locked sections run one at a time, so the"
              f" run cannot be shorter than about {ideal_many:.0f} s of judge waves plus what of the"
              f" {locked[f'concurrency {c}']:.2f} s under the lock does not overlap them.")
        rows = per_run[f"concurrency {c}"]
        print("  per stage, summed over the sessions (median per run): " + ", ".join(
            f"{s} {median([r['stages'].get(s, 0) for r in rows]):.2f} s" for s in rows[0]["stages"]))
        print("  under the lock, in detail (summed over the sessions, median per run):")
        for step in rows[0]["steps"]:
            print(f"    {median([r['steps'].get(step, 0) for r in rows]):6.2f} s  {step}")
    shutil.rmtree(tmp, ignore_errors=True)
    print()
    ok = goal_line(f"batch speedup, concurrency {c} vs 1", speedup, 5, what=f"({one:.2f} s / {many:.2f} s)",
                   at_most=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
