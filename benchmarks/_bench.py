"""Shared helpers of the benchmark scripts (issue 7): timing, real notes, the scripted 20 % judge,
goal lines. Only the standard library at import time.

The machine is a shared 2-core box, so every script takes the median of at least 5 runs and
measures the things it compares side by side in the same run, interleaved round by round.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
#: Real notes (test material only: read at run time, never copied into the repository).
REALNOTES = Path(os.environ.get("CONSOLIDATE_REALNOTES", REPO.parent / "shared" / "data" / "realnotes"))
#: Cached big stores (bench_scale.py), outside the repository.
CACHE = Path(os.environ.get("CONSOLIDATE_BENCH_CACHE", "/tmp/consolidate-bench-cache"))
PYTHON = sys.executable
CONSOLE = str(Path(sys.executable).parent / "consolidate")

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


#: Every timed comparison takes the median of at least this many runs (shared, noisy machine).
MIN_RUNS = 5


def parser(doc: str, runs: int, what: str = "timed runs per case"):
    """The benchmark script's argument parser (description: the first paragraph of ``doc``) with
    ``--runs``, read as at least MIN_RUNS."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--runs", type=lambda v: max(MIN_RUNS, int(v)), default=runs,
                    help=f"{what} (>= {MIN_RUNS}; default {runs})")
    return ap


def check_venv() -> None:
    """Warn when not run with the project's venv python (the figures would compare other things),
    and compile the package's modules: with ``PYTHONDONTWRITEBYTECODE=1`` (set on this machine) a
    module changed since its ``.pyc`` was written is compiled again at every process start (5-12 ms
    for one module), which no installed copy pays."""
    import compileall
    import importlib.util

    for name in ("consolidate", "judges"):
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(folder, quiet=1)
    if not Path(CONSOLE).exists():
        print(f"note: {CONSOLE} not found: run with the project's venv python (. .venv/bin/activate)",
              file=sys.stderr)


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def spread(xs: list[float], unit: Callable[[float], str] = ms) -> str:
    """``median (min-max, n runs)``."""
    return f"{unit(median(xs))} (min {unit(min(xs))}, max {unit(max(xs))}, {len(xs)} runs)"


def interleaved(cases: dict[str, Callable[[], float | None]], runs: int, warmup: int = 1,
                setup: Callable[[str, int], None] | None = None) -> dict[str, list[float]]:
    """Run every case ``runs`` times, round-robin (the order rotates each round so no case always
    follows the same one). A case returns its own seconds, or None to be timed here (wall clock).
    ``setup(name, round)`` runs before each call, untimed. Warm-up rounds are not recorded."""
    names = list(cases)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + runs):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            if setup:
                setup(name, r)
            t = time.perf_counter()
            got = cases[name]()
            dt = time.perf_counter() - t if got is None else got
            if r >= warmup:
                out[name].append(dt)
    return out


def run_cmd(argv: list[str], *, stdin: bytes | None = None, env: dict | None = None,
            check: bool = True) -> float:
    """Wall-clock seconds of one subprocess (fork, exec, run, exit, wait)."""
    t = time.perf_counter()
    p = subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t
    if check and p.returncode != 0:
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(argv)}\n{p.stderr.decode()[-2000:]}")
    return dt


def goal_line(name: str, value: float, goal: float, *, what: str, unit: str = "x", at_most: bool = True) -> bool:
    """Print the final ``GOAL ...`` line; returns whether the goal is met."""
    met = value <= goal if at_most else value >= goal
    op = "<=" if at_most else ">="
    print(f"GOAL {name}: {value:.2f}{unit} {what} (goal {op} {goal:g}{unit}): {'MET' if met else 'MISSED'}")
    return met


# -- imports -------------------------------------------------------------------------------------

#: Modules that must never load on the session-end fast path (docs/design.md#the-pipeline and docs/design.md#non-negotiables).
HEAVY = ("chromadb", "litellm", "instructor", "onnxruntime", "numpy", "pydantic", "networkx")


def importtime(argv: list[str], stdin: bytes = b"") -> list[tuple[str, int, int]]:
    """(module, self us, cumulative us) of every import of one ``python -X importtime`` run."""
    import re

    p = subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    rows = []
    for line in p.stderr.decode().splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)", line)
        if m:
            rows.append((m.group(3), int(m.group(1)), int(m.group(2))))
    return rows


def report_importtime(title: str, argv: list[str], stdin: bytes = b"") -> list[str]:
    """Print the 10 slowest imports of ``argv`` (by cumulative and by self time) and the heavy
    modules among them, compared with ``python -c "import sqlite3, json"``; returns (the heavy ones,
    {top-level package: cumulative ms} of the packages outside the standard library)."""
    rows = importtime(argv, stdin)
    base = importtime([PYTHON, "-X", "importtime", "-c", "import sqlite3, json"])
    base_names = {r[0] for r in base}
    extra = [r for r in rows if r[0] not in base_names]
    print(f"\n{title}: {len(rows)} modules, {sum(r[1] for r in rows) / 1000:.1f} ms of import in all;"
          f" {len(extra)} modules and {sum(r[1] for r in extra) / 1000:.1f} ms more than"
          f" `python -c \"import sqlite3, json\"` ({len(base)} modules, {sum(r[1] for r in base) / 1000:.1f} ms)")
    print("  10 slowest imports by cumulative time (the module and everything it imported):")
    for name, self_us, cum_us in sorted(rows, key=lambda r: -r[2])[:10]:
        print(f"    {cum_us / 1000:7.1f} ms cumulative {self_us / 1000:6.1f} ms self  {name}")
    print("  10 slowest imports by self time:")
    for name, self_us, cum_us in sorted(rows, key=lambda r: -r[1])[:10]:
        print(f"    {self_us / 1000:7.1f} ms self {cum_us / 1000:7.1f} ms cumulative  {name}")
    heavy = sorted({r[0] for r in rows if r[0].split(".")[0] in HEAVY})
    tops = sorted({r[0].split(".")[0] for r in extra if not r[0].startswith("_")})
    print(f"  top-level modules imported beyond the baseline: {', '.join(tops)}")
    third = sorted(((r[2], r[0]) for r in extra if "." not in r[0] and not r[0].startswith("_")
                    and r[0] not in sys.stdlib_module_names and r[2] >= 500), reverse=True)
    print("  non-standard-library packages, cumulative import time: "
          + ", ".join(f"{name} {us / 1000:.1f} ms" for us, name in third))
    print(f"  heavy modules imported ({', '.join(HEAVY)}): {', '.join(heavy) if heavy else 'none'}")
    return heavy, {name: us / 1000 for us, name in third}


# -- a module as it was at an earlier commit -------------------------------------------------------

def module_at(rev: str, path: str):
    """The module ``path`` (e.g. ``consolidate/store/graph.py``) as of commit ``rev``, loaded from ``git show`` as a
    module of its package beside today's modules (its relative imports find them), for a side-by-side
    comparison in one process; None when git or the commit is not there."""
    import importlib.util
    import tempfile

    try:
        source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO, capture_output=True, text=True,
                                check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    package, _, stem = path.removesuffix(".py").replace("/", ".").rpartition(".")
    name = f"{package}.{stem}_before_{rev.replace('-', '_').replace('~', '_')}"
    file = Path(tempfile.mkdtemp(prefix=f"{stem}-before-")) / f"{name.rsplit('.', 1)[1]}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- real notes ----------------------------------------------------------------------------------

def real_sessions() -> dict[str, list[dict]]:
    """``{session slug: [note dicts]}`` from ``realnotes/sessions/*.jsonl``, sorted by slug, notes in
    file order; {} when the folder is absent (the caller skips with a message)."""
    out: dict[str, list[dict]] = {}
    for path in sorted(glob.glob(str(REALNOTES / "sessions" / "*.jsonl"))):
        rows = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    if isinstance(obj.get("content"), str) and obj["content"].strip():
                        rows.append(obj)
        if rows:
            out[Path(path).stem] = rows
    return out


def real_notes(limit: int | None = None) -> list[dict]:
    """The first ``limit`` real notes over every session (slug order, then file order)."""
    notes = [n for rows in real_sessions().values() for n in rows]
    return notes[:limit] if limit else notes


def skip_without_notes(notes) -> None:
    if not notes:
        print(f"SKIP: no real notes under {REALNOTES}/sessions/*.jsonl (field `content`); nothing measured")
        sys.exit(0)


# -- the scripted judge that keeps 20 % ------------------------------------------------------------

def keeps(content: str, share: int = 5) -> bool:
    """Deterministic 1-in-``share`` choice by the SHA-256 of the content."""
    return int(hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16) % share == 0


def keep_20_percent(note) -> dict:
    """ScriptedJudge script: a keep (standalone statement = the note text, a durable fact observed
    to hold) for 1 note in 5 by content hash, a drop for the others."""
    if keeps(note.content):
        return {"verdict": "keep", "statement": note.content, "type": "fact", "evidence": "observed-success",
                "confidence": "high", "reason": "benchmark keep"}
    return {"verdict": "drop", "reason": "benchmark drop"}


def scripted_chain_factory(latency: float = 0.0):
    """A chain factory for run_session: one zero-latency (or ``latency`` s per call) ScriptedJudge."""
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    def factory():
        return JudgeChain([ScriptedJudge(keep_20_percent, latency=latency)])

    return factory


def fill_session(store, session_id: str, notes: list[dict], *, end: bool = True) -> None:
    """Write ``notes`` into the session tier (section as metadata, as an import would) in one
    transaction, then queue the session end."""
    db = store.sessions.db
    db.execute("BEGIN")
    for n in notes:
        store.sessions.add_note(session_id, n["content"], metadata={"section": n.get("section")} if n.get("section") else None)
    db.execute("COMMIT")
    if end:
        store.sessions.end(session_id, "success")


#: Seconds of each apply step in the current run (filled by the wrappers of ``install_step_timers``).
STEP_SECONDS: dict[str, float] = {}
#: Seconds of each stage in the current run (``install_stage_timers``), also for a run that raises.
STAGE_SECONDS: dict[str, float] = {}


def install_stage_timers() -> None:
    """Wrap every stage's ``run`` (looked up by its ``consolidate.pipeline.stages.Stage`` function at call time) with a
    timer, so the stages' times are known even when a run raises and its plan is lost."""
    import functools
    import importlib

    from consolidate.pipeline.stages import ORDER

    # the pipeline's steps between the stages: the keepers' embedding before the lock and purge's
    # quarantine expiry after it (issue 18), looked up at call time too
    for name, (module_name, attr) in {**{n: (n, "run") for n in ORDER}, **BETWEEN_STAGES}.items():
        module = importlib.import_module(f"consolidate.pipeline.stages.{module_name}")
        fn = getattr(module, attr)

        def timed(plan, ctx, *rest, _fn=fn, _name=name):
            t = time.perf_counter()
            try:
                return _fn(plan, ctx, *rest)
            finally:
                STAGE_SECONDS[_name] = STAGE_SECONDS.get(_name, 0.0) + time.perf_counter() - t

        setattr(module, attr, functools.wraps(fn)(timed))


#: The pipeline's timed steps that are not stages: name -> (stage module, function).
BETWEEN_STAGES = {"embed": ("contradiction", "embed_keepers"), "expire": ("purge", "expire")}


def release_chroma() -> None:
    """Drop chromadb's cached clients (one per path, each holding its index in memory)."""
    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:
        pass


def install_step_timers() -> None:
    """Wrap the apply steps (module attributes, looked up at call time) with timers: a perf_counter
    pair per call, negligible next to the steps."""
    import functools

    from consolidate.store.views import context_md
    from consolidate.store import journal, snapshots
    from consolidate.pipeline.stages import apply

    def wrap(module, name, label):
        fn = getattr(module, name)

        @functools.wraps(fn)
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                STEP_SECONDS[label] = STEP_SECONDS.get(label, 0.0) + time.perf_counter() - t

        setattr(module, name, timed)

    for module, name, label in ((journal, "write", "journal.write (plan as JSON, fsync)"),
                                (journal, "mark", "journal.mark (one fsync per step)"),
                                (snapshots, "take", "snapshot (undo record)"),
                                (apply, "_chroma", "chroma upsert"),
                                (apply, "_graph", "graph load, add, diff, save"),
                                (apply, "_events", "event log append"),
                                (apply, "_notes_md", "notes.md"),
                                (context_md, "write", "context.md (every active memory read back)"),
                                (apply, "_session_rows", "session rows deleted (secure_delete, checkpoint)")):
        wrap(module, name, label)


def profile_top(fn, *, sort: str = "tottime", limit: int = 20, restrict: str | None = None) -> str:
    """Run ``fn()`` under cProfile; the ``limit`` top functions by ``sort`` (optionally only those
    whose file:function matches the regex ``restrict``), as text."""
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    try:
        fn()
    finally:
        pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s).sort_stats(sort)
    if restrict:
        st.print_stats(restrict, limit)
    else:
        st.print_stats(limit)
    text = s.getvalue()
    # keep the table only (drop pstats' header lines about restrictions)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("List reduced", "Ordered by"))]
    return "\n".join("    " + ln.replace(sys.prefix + "/lib/python3.11/site-packages/", "").replace(str(REPO) + "/", "")
                     for ln in lines)
