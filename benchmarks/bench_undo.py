"""Undo at scale (issue 18): ``consolidate undo RUN`` of a run that consolidated 1,000 real notes
(scripted judge keeping 1 in 5, as bench_scale.py) into a store of 100,000 memories, against the same
undo on an empty store; wall clock of the command, median of ``--runs`` (>= 5), interleaved. Each
round works on a fresh copy of the cached store of bench_scale.py and runs the session first
(neither timed). Also the undo's steps timed in-process on one more copy at the biggest size.

    python benchmarks/bench_undo.py [--runs 5] [--size 100000]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import (CONSOLE, check_venv, fill_session, median, parser, real_notes, release_chroma,  # noqa: E402
                    scripted_chain_factory, skip_without_notes)

#: The undo's parts timed one by one (in-process, on a store whose run is not undone yet).
STEPS = ("graph.load", "graph.save", "snapshots.settle_graph_appends", "context_md.write", "LongTerm.delete",
         "LongTerm.upsert", "Store.longterm")


def prepare(source: Path | None, dest: Path, notes, now: float | None) -> tuple[str, str]:
    """A copy of ``source`` (an empty store when None) with one consolidated session; (store, run id)."""
    from consolidate.pipeline.run import run_queue
    from consolidate.store.store import Store

    import bench_scale

    if source is not None:
        shutil.copytree(source / ".memofs", dest / ".memofs")
    store = Store(dest / ".memofs", project=bench_scale.SCOPE)
    fill_session(store, "undo-1000", notes)
    [plan] = run_queue(store, chain_factory=scripted_chain_factory(), time_box=None, now=now)
    store.close()
    release_chroma()
    return str(dest / ".memofs"), plan.run_id


def steps_timed(store_path: str, run_id: str) -> dict[str, float]:
    """Seconds spent in each of STEPS during one in-process undo."""
    import importlib

    from consolidate.store.store import Store
    from consolidate.pipeline.undo import undo_run

    spent: dict[str, float] = {}
    patched = []
    for dotted in STEPS:
        owner_name, attr = dotted.rsplit(".", 1)
        mod = importlib.import_module({"graph": "consolidate.store.graph", "snapshots": "consolidate.store.snapshots",
                                       "LongTerm": "consolidate.store.index.longterm", "Store": "consolidate.store.store",
                                       "context_md": "consolidate.store.views.context_md"}[owner_name])
        target = getattr(mod, owner_name) if owner_name in ("LongTerm", "Store") else mod
        fn = getattr(target, attr)

        def timed(*a, _fn=fn, _name=dotted, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t

        setattr(target, attr, timed)
        patched.append((target, attr, fn))
    try:
        store = Store(Path(store_path), project="bench")
        t = time.perf_counter()
        undo_run(store, run_id)
        spent["undo in all"] = time.perf_counter() - t
        store.close()
    finally:
        for target, attr, fn in patched:
            setattr(target, attr, fn)
        release_chroma()
    return spent


def main() -> int:
    ap = parser(__doc__, 5, "undo runs per store size")
    ap.add_argument("--size", type=int, default=100000, help="memories in the big store (default 100000)")
    ap.add_argument("--notes", type=int, default=1000)
    args = ap.parse_args()
    check_venv()
    import bench_scale

    notes = real_notes(args.notes)
    skip_without_notes(notes)
    folder, info = bench_scale.cached_store(args.size, False)
    bench_scale.with_context_top(folder)
    now = info["built_at"] + 3600  # its quarantined entries never expire in these runs
    tmp = Path(tempfile.mkdtemp(prefix="bench-undo-"))
    big = f"{args.size:,}"
    cases = {"empty": None, big: folder}
    secs: dict[str, list[float]] = {n: [] for n in cases}
    names = list(cases)
    k = 0
    for r in range(args.runs):
        for name in names[r % len(names):] + names[:r % len(names)]:
            k += 1
            store, run_id = prepare(cases[name], tmp / f"u{k}", notes, now if cases[name] else None)
            t = time.perf_counter()
            p = subprocess.run([CONSOLE, "undo", run_id, "--store", store], capture_output=True, text=True)
            secs[name].append(time.perf_counter() - t)
            if p.returncode != 0:
                raise SystemExit(f"undo failed ({p.returncode}): {p.stderr[-2000:]}")
            shutil.rmtree(tmp / f"u{k}", ignore_errors=True)
        print(f"  round {r + 1}/{args.runs} done", flush=True)
    print(f"\nconsolidate undo of a run of {len(notes)} real notes (1 in 5 kept), wall clock of the command,"
          f" {args.runs} interleaved runs, median (min-max):")
    for name in names:
        print(f"  {name:>8} memories: {median(secs[name]):6.2f} s ({min(secs[name]):.2f} - {max(secs[name]):.2f})"
              f"  {median(secs[name]) / median(secs['empty']):5.2f}x of the empty store's")
    store, run_id = prepare(folder, tmp / "steps", notes, now)
    spent = steps_timed(store, run_id)
    print(f"\nWhere an undo's time goes at {big} memories (one in-process undo, its parts timed):")
    for name, value in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {value:8.2f} s  {name}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
