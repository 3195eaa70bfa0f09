"""Pipeline overhead (issue 7, benchmark 3): 1,000 real notes through the whole pipeline with a
zero-latency scripted judge that keeps 20 %, against the floor: embedding plus Chroma ``add`` of
exactly the memories the pipeline wrote, with the same embedding function, in the same process,
into a fresh PersistentClient.

Each pipeline run: a fresh store, the 1,000 notes written to one session and its end queued
(untimed), then ``run_queue`` timed (opening the index, loading the model, every stage, apply).
Each floor run, timed from its start: ``get_embedding_function("minilm")``, a fresh
``chromadb.PersistentClient`` and collection, ``embed`` of the kept statements, ``add`` with their
ids, documents and metadata. The two alternate, round by round. Goal: at most 1.3 times the floor.

    python benchmarks/bench_pipeline.py [--runs 5] [--notes 1000]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (STEP_SECONDS, check_venv, fill_session, goal_line, install_step_timers, parser,  # noqa: E402
                    interleaved, median, profile_top, real_notes, release_chroma, scripted_chain_factory,
                    skip_without_notes)


def s_(x: float) -> str:
    return f"{x:.2f} s"


class Bench:
    def __init__(self, notes: list[dict], tmp: Path):
        self.notes = notes
        self.tmp = tmp
        self.factory = scripted_chain_factory()
        self.n = 0
        self.plans = []
        self.steps: list[dict[str, float]] = []
        self.floor_parts: list[dict[str, float]] = []
        self.kept: dict | None = None

    def fresh_store(self):
        from consolidate.store.store import Store

        self.n += 1
        store = Store(self.tmp / f"p{self.n}" / ".memofs", project="bench")
        fill_session(store, "bench-1000", self.notes)
        return store

    def pipeline(self) -> float:
        from consolidate.pipeline.run import run_queue

        store = self.fresh_store()  # untimed
        STEP_SECONDS.clear()
        t = time.perf_counter()
        plans = run_queue(store, chain_factory=self.factory, time_box=None)
        dt = time.perf_counter() - t
        self.steps.append(dict(STEP_SECONDS))
        assert len(plans) == 1 and plans[0].finished, plans
        self.plans.append(plans[0])
        if self.kept is None:  # what the pipeline wrote: the floor writes exactly this
            res = store.longterm().collection.get(include=["documents", "metadatas"])
            self.kept = {"ids": res["ids"], "documents": res["documents"], "metadatas": res["metadatas"]}
        store.close()
        del store
        release_chroma()
        shutil.rmtree(self.tmp / f"p{self.n}", ignore_errors=True)
        return dt

    def floor(self) -> float:
        import chromadb
        from chromadb.config import Settings

        from consolidate.store.index.embeddings import get_embedding_function

        self.n += 1
        path = self.tmp / f"f{self.n}"
        k = self.kept
        t0 = time.perf_counter()
        ef = get_embedding_function("minilm")
        client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        col = client.get_or_create_collection("memories", embedding_function=None,
                                              metadata={"hnsw:space": "cosine"})
        t1 = time.perf_counter()
        vectors = ef.embed(k["documents"])
        t2 = time.perf_counter()
        col.add(ids=k["ids"], documents=k["documents"], metadatas=k["metadatas"], embeddings=vectors)
        t3 = time.perf_counter()
        self.floor_parts.append({"client + collection": t1 - t0, "load model + embed": t2 - t1, "add": t3 - t2})
        del col, client
        release_chroma()
        shutil.rmtree(path, ignore_errors=True)
        return t3 - t0


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def hotspots(plan, tmp: Path) -> dict[str, float]:
    """Time alone the parts of a run that the floor does not have, on a finished plan."""
    import copy

    from consolidate.store import journal
    import numpy as np
    from consolidate.store.store import Store

    durable = [c for c in plan.candidates if c.embedding is not None]
    n = len(durable)

    def pairwise():  # what contradiction.run does for the keepers of one run: one similarity matrix
        m = np.asarray([c.embedding for c in durable], dtype=np.float32)
        m @ m.T

    store = Store(tmp / "journal-probe" / ".memofs", project="bench")
    p = copy.deepcopy(plan)
    out = {}
    lt = store.longterm()
    out[f"contradiction: {n} x longterm.neighbours on the fresh, empty index (a collection.count() each)"] = \
        median([_timed(lambda: [lt.neighbours(c.embedding, type_=c.type, scope="bench") for c in durable])
                for _ in range(5)])
    for what, fn in ((f"contradiction: {n} x {n} similarities between the {n} keepers"
                      " (one numpy matrix product, as contradiction.run does)", pairwise),
                     (f"apply: plan.to_dict() (dataclasses.asdict of {len(plan.notes)} notes,"
                      f" {len(plan.events)} events, {n} embeddings)", p.to_dict),
                     ("apply: journal.write (to_dict, json.dump, fsync)", lambda: journal.write(store, p))):
        xs = []
        for _ in range(5):
            t = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t)
        out[what] = median(xs)
    store.close()
    return out


def main() -> int:
    ap = parser(__doc__, 7, "timed runs of each")
    ap.add_argument("--notes", type=int, default=1000, help="real notes in the session (default 1000)")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile run when the goal is missed")
    args = ap.parse_args()
    runs = args.runs
    check_venv()
    notes = real_notes(args.notes)
    skip_without_notes(notes)
    if len(notes) < args.notes:
        print(f"note: only {len(notes)} real notes available")
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    b = Bench(notes, tmp)
    print(f"{len(notes)} real notes ({sum(len(n['content']) for n in notes):,} characters) in one session;"
          f" scripted judge, zero latency, keeps 1 note in 5 by content hash (statement = the note text,"
          f" type fact, evidence observed-success)\n")
    install_step_timers()
    b.pipeline()  # warm-up: imports chromadb, onnxruntime; finds the kept memories
    plan = b.plans.pop()
    from consolidate.pipeline.stages.apply import summary

    s = summary(plan)
    judged_keep = sum(1 for v in plan.note_status.values() if v == "keep")
    print(f"What one run does: {s['notes']} notes, {judged_keep} judged keep, {s.get('notes_drop', 0)} judged drop,"
          f" {s.get('notes_blocked', 0)} blocked by the secret gate; of the keeps: {s['written_durable']} durable"
          f" written, {s['written_quarantined']} quarantined, {s['written_transient']} transient,"
          f" {s['rejected']} rejected by the write policy,"
          f" {sum(1 for c in plan.candidates if c.outcome == 'duplicate')} duplicates")
    print(f"The floor writes exactly the {len(b.kept['ids'])} memories the pipeline put in Chroma.\n")
    b.floor()  # warm-up of the floor
    b.floor_parts.clear()
    b.steps.clear()

    res = interleaved({"pipeline (run_queue)": b.pipeline, "floor (embed + add)": b.floor}, runs, warmup=0)
    pipe, floor = median(res["pipeline (run_queue)"]), median(res["floor (embed + add)"])
    print(f"{runs} interleaved rounds; median (min-max):")
    for name, xs in res.items():
        print(f"  {name:<22} {s_(median(xs))} ({s_(min(xs))} - {s_(max(xs))})   {median(xs) / floor:.2f}x of the floor")
    kept = len(b.kept["ids"])
    print(f"  per kept memory: pipeline {pipe / kept * 1000:.1f} ms, floor {floor / kept * 1000:.1f} ms;"
          f" per note: pipeline {pipe / len(notes) * 1000:.2f} ms")
    print("\nFloor parts (median):")
    for part in b.floor_parts[0]:
        print(f"  {part:<22} {s_(median([p[part] for p in b.floor_parts]))}")
    print("\nPipeline time per stage (plan.stage_seconds, median over the runs):")
    stages = list(b.plans[0].stage_seconds)
    for st in stages:
        v = median([p.stage_seconds.get(st, 0.0) for p in b.plans])
        print(f"  {st:<14} {s_(v)}  {v / pipe * 100:5.1f} %")
    rest = median([t - sum(p.stage_seconds.values()) for t, p in zip(res["pipeline (run_queue)"], b.plans)])
    print(f"  {'(outside the stages: claim, open the store, lock, replay check)':<14} {s_(rest)}")
    print("  apply, by step:")
    for label in b.steps[0]:
        print(f"    {label:<50} {s_(median([st.get(label, 0.0) for st in b.steps]))}")

    ratio = pipe / floor
    if ratio > 1.3:
        print("\nWhere the time above the floor goes (the suspects timed alone, without a profiler, on the"
              " last run's plan, median of 5):")
        for what, secs in hotspots(b.plans[-1], tmp).items():
            print(f"  {s_(secs):>8}  {what}")
    if ratio > 1.3 and not args.no_profile:
        from consolidate.pipeline.run import run_queue

        store = b.fresh_store()
        print("\nWhere the time goes: one more pipeline run under cProfile (the profiler slows Python code"
              " more than native code), top functions by own time:")
        print(profile_top(lambda: run_queue(store, chain_factory=b.factory, time_box=None), sort="tottime", limit=18))
        store = b.fresh_store()
        print("\n  consolidate and judges functions by cumulative time:")
        print(profile_top(lambda: run_queue(store, chain_factory=b.factory, time_box=None), sort="cumulative",
                          limit=30, restrict=r"/(consolidate|judges)/"))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\npipeline {s_(pipe)} vs floor {s_(floor)} for {kept} kept memories of {len(notes)} notes")
    ok = goal_line("pipeline overhead", ratio, 1.3, what="of the floor (embed + Chroma add of the kept memories)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
