"""Scale (issue 7, benchmark 4): the run of bench_pipeline.py (1,000 real notes, scripted judge
keeping 20 %) into a store that already holds 10,000 and 100,000 memories, against the same run
into an empty store: time per kept memory. Goal: at most 1.5 times the empty store's at 100,000.
Also the graph's load and save time (consolidate.store.graph.load / save) at 100,000 memories.

The big stores are built once and cached outside the repository (default
/tmp/consolidate-bench-cache/, or $CONSOLIDATE_BENCH_CACHE), on a fast path: synthetic memories
with random unit vectors of dimension 384 upserted straight into the Chroma collection (the
metadata shape of consolidate.store.index.longterm.record_for; one scope, the run's; 95 % active, 4 %
quarantined, 1 % disputed; six types) and the graph files written directly (memory nodes, one
session node per 20 memories, 2,000 entity nodes; derived_from and mentions edges). Every timed
run works on a fresh copy of the cached store (the copy is not timed). Runs are interleaved:
each round runs empty, 10k and 100k in a rotating order.

    python benchmarks/bench_scale.py [--runs 5] [--sizes 10000,100000] [--rebuild]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CACHE, STAGE_SECONDS, STEP_SECONDS, check_venv, fill_session, goal_line,  # noqa: E402
                    install_stage_timers, install_step_timers, median, real_notes, release_chroma,
                    scripted_chain_factory, skip_without_notes)

SCOPE = "bench"
TYPES = (("fact", 35), ("decision", 20), ("constraint", 15), ("recipe", 10), ("failure", 10), ("preference", 10))
FIELDS = {"decision": {"reason": "it keeps the build reproducible"}, "preference": {"who": "user"},
          "recipe": {"command": "make test", "context": "CI on Linux"},
          "failure": {"symptom": "the build hangs", "cause": "a stale lock file"}}
TOOLS = ("pnpm", "docker", "pytest", "postgres", "redis", "vite", "ruff", "terraform", "kubectl", "nginx")
VERSION = 2  # of the cache layout: bump to rebuild old caches


def s_(x: float) -> str:
    return f"{x:.2f} s"


def build_store(n: int, folder: Path) -> dict:
    """Build a store of ``n`` synthetic memories in ``folder`` (fast path); returns its info."""
    import numpy as np

    from consolidate.store.store import Store

    t0 = time.time()
    if folder.exists():
        shutil.rmtree(folder)
    store = Store(folder / ".memofs", project=SCOPE)
    lt = store.longterm()  # manifest + collection with the store's metadata, as a real store has
    now = time.time()
    today = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).date().isoformat()
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds")
    rng = np.random.default_rng(7)
    kinds = [t for t, w in TYPES for _ in range(w)]
    batch = min(5000, lt.client.get_max_batch_size())
    graph = folder / ".memofs" / "graph"
    graph.mkdir(parents=True, exist_ok=True)
    entities = [f"entity:src/module{j}.py" for j in range(1990)] + [f"entity:{t}" for t in TOOLS]
    with open(graph / "nodes.jsonl", "w", encoding="utf-8") as nodes, \
            open(graph / "edges.jsonl", "w", encoding="utf-8") as edges:
        for start in range(0, n, batch):
            count = min(batch, n - start)
            vecs = rng.standard_normal((count, lt.ef.dimension)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            ids, docs, metas = [], [], []
            for k in range(count):
                i = start + k
                mid = "mem-" + hashlib.sha256(f"synthetic {i}".encode()).hexdigest()[:16]
                type_ = kinds[i % len(kinds)]
                status = "quarantined" if i % 25 == 3 else "disputed" if i % 100 == 7 else "active"
                evidence = "inferred" if status == "quarantined" else ("user-stated", "observed-success")[i % 2]
                confidence = "low" if status == "quarantined" else ("medium", "high")[i % 2]
                session = f"syn-{i // 20}"
                run_id = f"run-syn{i // 20:08d}"
                doc = (f"Synthetic memory {i}: the {TOOLS[i % len(TOOLS)]} setup of component {i % 997} needs"
                       f" option {i % 89} because of constraint {i % 31}.")
                prov = {"session_id": session, "run_id": run_id, "date": stamp, "evidence": evidence,
                        "source": "judge:api:gpt-4o-mini", "prompt_version": "judge-v1",
                        "reason": "synthetic", "note_ids": [i]}
                ids.append(mid)
                docs.append(doc)
                metas.append({"type": type_, "status": status, "tier": "durable", "evidence": evidence,
                              "confidence": confidence, "last_confirmed": today, "scope": SCOPE,
                              "session_id": session, "run_id": run_id, "source": prov["source"],
                              "prompt_version": "judge-v1", "provenance": json.dumps(prov),
                              "fields": json.dumps(FIELDS.get(type_, {}))})
                nodes.write(json.dumps({"id": mid, "kind": "memory", "type": type_, "status": status,
                                        "scope": SCOPE, "statement": doc[:300]}, sort_keys=True) + "\n")
                edges.write(json.dumps({"source": mid, "target": "session:" + session, "key": "derived_from",
                                        "kind": "derived_from", "run_id": run_id}, sort_keys=True) + "\n")
                for e in {entities[i % len(entities)], entities[-1 - i % len(TOOLS)]}:
                    edges.write(json.dumps({"source": mid, "target": e, "key": "mentions", "kind": "mentions"},
                                           sort_keys=True) + "\n")
            lt.collection.upsert(ids=ids, documents=docs, metadatas=metas, embeddings=vecs)
        for j in range(0, n, 20):
            nodes.write(json.dumps({"id": f"session:syn-{j // 20}", "kind": "session"}, sort_keys=True) + "\n")
        for e in entities:
            kind = "tool" if e[len("entity:"):] in TOOLS else "file"
            nodes.write(json.dumps({"id": e, "kind": "entity", "entity_kind": kind, "name": e[len("entity:"):]},
                                   sort_keys=True) + "\n")
    assert lt.collection.count() == n, lt.collection.count()
    store.close()
    del lt
    info = {"version": VERSION, "memories": n, "built_at": now, "build_seconds": round(time.time() - t0, 1)}
    (folder / "info.json").write_text(json.dumps(info))
    return info


def cached_store(n: int, rebuild: bool) -> tuple[Path, dict]:
    folder = CACHE / f"store-{n}"
    info_path = folder / "info.json"
    if not rebuild and info_path.exists():
        info = json.loads(info_path.read_text())
        if info.get("version") == VERSION and info.get("memories") == n:
            return folder, info
    print(f"building the cached store of {n:,} memories in {folder} ...", flush=True)
    info = build_store(n, folder)
    print(f"  built in {info['build_seconds']} s", flush=True)
    return folder, info


def with_context_top(folder: Path) -> None:
    """Give a cached store the SessionStart context a run on it would have left
    (memory/context.md and memory/context.top.json, from which the next run merges its top: issue
    18); a store written before that layout pays one full read of its memories in its first run."""
    try:
        from consolidate.store.views.context_md import CONTEXT_TOP
        from consolidate.store.views.context_md import write as write_context
    except ImportError:  # a checkout from before issue 18 (measuring "before"): it reads every memory
        return
    from consolidate.store.store import Store

    if (folder / ".memofs" / "memory" / CONTEXT_TOP).exists():
        return
    t = time.time()
    store = Store(folder / ".memofs", project=SCOPE)
    with store.lock():
        write_context(store, SCOPE)
    store.close()
    release_chroma()
    print(f"  {folder.name}: memory/{CONTEXT_TOP} written by a full read ({time.time() - t:.0f} s, once)", flush=True)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class Runner:
    def __init__(self, notes, tmp: Path):
        self.notes, self.tmp = notes, tmp
        self.factory = scripted_chain_factory()
        self.k = 0
        self.results: dict[str, list[dict]] = {}

    def prepare(self, source: Path | None):
        from consolidate.store.store import Store

        self.k += 1
        dest = self.tmp / f"run{self.k}"
        if source is not None:
            shutil.copytree(source / ".memofs", dest / ".memofs")
        store = Store(dest / ".memofs", project=SCOPE)
        fill_session(store, "bench-1000", self.notes)
        return store

    def run(self, label: str, source: Path | None, now: float | None):
        from consolidate.pipeline.run import run_queue
        from consolidate.pipeline.stages.apply import summary

        store = self.prepare(source)  # untimed
        STEP_SECONDS.clear()
        STAGE_SECONDS.clear()
        failed = None
        t = time.perf_counter()
        try:
            plans = run_queue(store, chain_factory=self.factory, time_box=None, now=now)
        except Exception as exc:  # a run that fails at this size: recorded, the benchmark goes on
            plans, failed = [], f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
        dt = time.perf_counter() - t
        durable = summary(plans[0])["written_durable"] if plans else None
        self.results.setdefault(label, []).append({"seconds": dt, "durable": durable, "failed": failed,
                                                   "stages": dict(STAGE_SECONDS), "steps": dict(STEP_SECONDS)})
        store.close()
        del store
        release_chroma()
        shutil.rmtree(self.tmp / f"run{self.k}", ignore_errors=True)


def probe_index(source: Path, tmp: Path, k: int = 154) -> dict[str, str]:
    """The index calls of a run timed alone on a copy of the store (no profiler): opening the index in
    a process, the contradiction stage's batched neighbour queries, purge's and context.md's reads,
    the upsert; and, for the record, the calls a run made before issue 18 (one filtered query per
    keeper, every quarantined entry read)."""
    import numpy as np

    from consolidate.store.index.longterm import _where
    from consolidate.store.store import Store

    dest = tmp / "probe"
    shutil.copytree(source / ".memofs", dest / ".memofs")
    store = Store(dest / ".memofs", project=SCOPE)
    lt = store.longterm()
    col = lt.collection
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((k, lt.ef.dimension)).astype(np.float32)
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).tolist()
    where = _where(type_="fact", scope=SCOPE, statuses=("active", "quarantined", "disputed"), tier="durable")
    out: dict[str, str] = {}

    def timed(label, fn, n=5):
        xs = []
        for _ in range(n):
            t = time.perf_counter()
            try:
                fn()
            except Exception as exc:
                out[label] = f"FAILS after {time.perf_counter() - t:.2f} s: {type(exc).__name__}: {str(exc)[:90]}"
                return
            xs.append(time.perf_counter() - t)
        out[label] = f"{median(xs) * 1000:.1f} ms"

    col.count()
    # what a run does now (issue 18)
    from consolidate.store.index import longterm as _lt
    from consolidate.store.views.context_md import CONTEXT_RESERVE, _top_by_merge
    from consolidate.store.views.context_md import read_top as _read_top
    from consolidate.pipeline.stages.purge import _quarantined_before

    def reopen():
        _lt.close_all()
        release_chroma()
        Store(dest / ".memofs", project=SCOPE).longterm().collection.count()

    timed("open the index in a process: client, collection, first read (the HNSW segment loaded)", reopen, n=3)
    lt = store.longterm()
    col = lt.collection
    types = ["fact", "decision", "constraint", "recipe", "failure", "preference"]
    timed(f"contradiction now: neighbours of {k} keepers, one batched call per type (neighbours_many)",
          lambda: [lt.neighbours_many(vecs[j::6], type_=t, scope=SCOPE, k=5, min_similarity=0.55)
                   for j, t in enumerate(types)], n=3)
    today = _dt.datetime.fromtimestamp(time.time(), _dt.timezone.utc).date()
    cutoff = (today - _dt.timedelta(days=14)).isoformat()
    timed("purge now: quarantined entries confirmed in the 400 days before the cutoff",
          lambda: _quarantined_before(lt, cutoff, today), n=3)
    touched = [f"mem-{j}" for j in range(k)]
    timed("context.md now: the previous top and the run's ids read by id, merged",
          lambda: _top_by_merge(_read_top(store), lt, SCOPE, 30, 30 + CONTEXT_RESERVE, touched, set()), n=3)
    timed("chroma upsert of 154 records (the apply step)",
          lambda: lt.upsert([{"id": f"probe-{j}", "document": "probe", "embedding": vecs[j],
                              "metadata": {"type": "fact", "status": "active", "tier": "durable", "scope": SCOPE}}
                             for j in range(k)]), n=3)
    # what a run did before (for the record)
    timed("before: one neighbour query with the stage's metadata filter (one per keeper)",
          lambda: col.query(query_embeddings=[vecs[0]], n_results=5, where=where,
                            include=["documents", "metadatas", "distances"]))
    timed("before: purge read every quarantined entry (documents and metadata)",
          lambda: lt.with_status("quarantined"), n=3)
    store.close()
    lt = col = store = None  # released before the folder is removed
    release_chroma()
    shutil.rmtree(dest, ignore_errors=True)
    return out


def graph_load_save(folder: Path, tmp: Path, runs: int) -> tuple[list[float], list[float], int, int]:
    from consolidate.store import graph

    loads, saves = [], []
    nodes = edges = 0
    out = tmp / "graph-save"
    for _ in range(runs):
        t = time.perf_counter()
        g = graph.load(folder / ".memofs" / "graph")
        loads.append(time.perf_counter() - t)
        nodes, edges = g.number_of_nodes(), g.number_of_edges()
        t = time.perf_counter()
        graph.save(g, out)
        saves.append(time.perf_counter() - t)
        del g
    shutil.rmtree(out, ignore_errors=True)
    return loads, saves, nodes, edges


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per store size (>= 5; default 5)")
    ap.add_argument("--sizes", default="10000,100000", help="store sizes, comma-separated (default 10000,100000)")
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached stores")
    ap.add_argument("--budget", type=float, default=570.0,
                    help="seconds the whole script may take (default 570): rounds stop when the next would not fit")
    args = ap.parse_args()
    runs = max(5, args.runs)
    sizes = sorted(int(x) for x in args.sizes.split(",") if x.strip())
    check_venv()
    notes = real_notes(args.notes)
    skip_without_notes(notes)
    started = time.time()
    caches = {}
    for n in sizes:
        folder, info = cached_store(n, args.rebuild)
        with_context_top(folder)
        caches[n] = (folder, info)
        print(f"cached store of {n:,} memories: {folder} ({du(folder) / 1e6:,.0f} MB; built in"
              f" {info['build_seconds']} s on {_dt.datetime.fromtimestamp(info['built_at']).date()})", flush=True)
    built = time.time() - started
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    r = Runner(notes, tmp)
    install_step_timers()
    install_stage_timers()
    # The runs use the cache's build time as their clock, so its quarantined entries (last confirmed
    # on the build day) never expire in a purge, however old the cache.
    labels = {"empty": (None, None)}
    for n in sizes:
        labels[f"{n:,}"] = (caches[n][0], caches[n][1]["built_at"] + 3600)
    r.run("warm-up", None, None)
    names = list(labels)
    reserve = 60.0 if sizes else 0.0  # graph load/save and the index probe after the rounds
    done_rounds, last_round = 0, 0.0
    for i in range(runs):
        elapsed = time.time() - started
        if i and elapsed + last_round + reserve > args.budget:
            print(f"  stopping after {i} rounds: another round ({last_round:.0f} s) would pass the budget of"
                  f" {args.budget:.0f} s (elapsed {elapsed:.0f} s, of which {built:.0f} s building the cache)")
            break
        t = time.time()
        for name in names[i % len(names):] + names[:i % len(names)]:
            r.run(name, *labels[name])
        last_round = time.time() - t
        done_rounds = i + 1
        print(f"  round {i + 1}/{runs} done in {last_round:.0f} s (elapsed {time.time() - started:.0f} s)", flush=True)

    print(f"\n{len(notes)} real notes per run, scripted judge keeping 1 in 5; {done_rounds} interleaved rounds;"
          f" median:" + ("" if done_rounds >= 5 else
                         "  (FEWER THAN 5 RUNS: stopped at the time budget" +
                         (f"; building the cache took {built:.0f} s of it: run again for the full 5)" if built > 5 else ")")))
    per_kept, failures = {}, {}
    kept_empty = median([x["durable"] for x in r.results["empty"]])
    for name in names:
        rows = r.results[name]
        secs = median([x["seconds"] for x in rows])
        fails = [x["failed"] for x in rows if x["failed"]]
        # a failed run wrote nothing: its time so far over the keeps of the same run into an empty store
        # (the same notes, the same judge) is a lower bound of its time per kept memory
        per_kept[name] = median([x["seconds"] / (x["durable"] or kept_empty) for x in rows])
        line = (f"  store {name:>8}: run {s_(secs)} (min {s_(min(x['seconds'] for x in rows))}, max"
                f" {s_(max(x['seconds'] for x in rows))}), ")
        if fails:
            failures[name] = fails[0]
            line += (f"FAILED in {len(fails)}/{len(rows)} runs ({fails[0]}); time to the failure per kept memory"
                     f" >= {per_kept[name] * 1000:.1f} ms = >= {per_kept[name] / per_kept['empty']:.2f}x of empty")
        else:
            kept = median([x["durable"] for x in rows])
            line += (f"{kept:.0f} durable written, {per_kept[name] * 1000:.1f} ms per kept memory ="
                     f" {per_kept[name] / per_kept['empty']:.2f}x of empty")
        print(line)
    print("\nTime per stage (median; a failed run counts up to its failure) by store size:")
    print("  " + f"{'stage':<58}" + "".join(f"{n:>10}" for n in names))
    from consolidate.pipeline.stages import SESSION

    stages = ["count"] + [st.name for st in SESSION if st.name != "release_model"]  # in the order a run takes them
    for st in stages:
        print("  " + f"{st:<58}" + "".join(f"{median([x['stages'].get(st, 0) for x in r.results[n]]):>9.2f}s"
                                            for n in names))
        if st == "apply":
            for step in r.results["empty"][0]["steps"]:
                print("  " + f"  {step:<56}" + "".join(
                    f"{median([x['steps'].get(step, 0) for x in r.results[n]]):>9.2f}s" for n in names))

    biggest = sizes[-1] if sizes else None
    if biggest:
        loads, saves, nn, ne = graph_load_save(caches[biggest][0], tmp, 5)
        print(f"\nGraph at {biggest:,} memories ({nn:,} nodes, {ne:,} edges; nodes.jsonl + edges.jsonl"
              f" {(du(caches[biggest][0] / '.memofs' / 'graph')) / 1e6:.0f} MB), 5 runs, median:"
              f" graph.load {s_(median(loads))} (min {s_(min(loads))}), graph.save {s_(median(saves))}"
              f" (min {s_(min(saves))})")

    label = f"{biggest:,}" if biggest else "empty"
    ratio = per_kept[label] / per_kept["empty"]
    if biggest:
        print(f"\nWhere the time goes at {label} memories: the index calls of a run, timed alone on a copy"
              f" (median; no profiler):")
        for what, value in probe_index(caches[biggest][0], tmp).items():
            if value.startswith("FAILS"):
                print(f"  {'FAILS':>12}  {what}: {value}")
            else:
                print(f"  {value:>12}  {what}")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n(total {time.time() - started:.0f} s)")
    if label in failures:
        print(f"GOAL scale, time per kept memory at {label} memories: >= {ratio:.2f}x of the empty store's"
              f" (goal <= 1.5x): MISSED (the run FAILS at {label} memories: {failures[label]})")
        return 1
    ok = goal_line(f"scale, time per kept memory at {label} memories", ratio, 1.5, what="of the empty store's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
