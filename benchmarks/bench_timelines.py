"""Longitudinal consolidation on real agent-notes timelines (issue 31 item 4): the sessions of each
timeline in ``$CONSOLIDATE_SHARED/data/timelines/`` (see its README.md) are consolidated in ``seq``
order into ONE fresh store through the public API (each session's notes added with their metadata,
the session ended ``success``, the queue run), and the script reports, per session and at the end:

- stale survival: of the notes a later session edited in place (``changes.jsonl`` ``old_id``) or
  deleted (``removed.jsonl``), by that session, the share whose memory (a memory whose provenance
  ``note_ids`` include the note) is still ``active``; edited and deleted apart (most scratchpad
  removals are finished plans, not falsehoods). Goal (issue 31): stale survival <= 10 %;
- duplicates: active memories whose statements share a ``consolidate.core.normal.text_key`` (and,
  with the MiniLM embedding, pairs of active memories at cosine >= 0.95);
- store size: active memories after each session.

One deterministic run (no medians); the wall time is printed. Test material only: read at run time.

    python benchmarks/bench_timelines.py [--timeline SLUG ...] [--judge rules ...] [--embedding hash] [--json]
        [--notes-files both|on|off]   # both (default): the notes alone and with the notes files, side by side
    JUDGELAB_PROMPTS=/tmp/p python benchmarks/bench_timelines.py --judge "cli:template:$PWD/../shared/tools/judgelab/capture.py"
    JUDGELAB_ANSWERS=/tmp/a python benchmarks/bench_timelines.py --judge "cli:template:$PWD/../shared/tools/judgelab/replay.sh"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parent.parent
TIMELINES = Path(os.environ.get("CONSOLIDATE_SHARED", REPO.parent / "shared")) / "data" / "timelines"
#: Note fields kept as note metadata (the commit sha is left out: 40 hex digits read as key material).
META_FIELDS = ("id", "section", "subsection", "source_file", "date")
COSINE = 0.95


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one per non-blank line; [] when the file is missing."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_timeline(folder: Path) -> dict[str, Any]:
    """``{"slug", "sessions": [(seq, [note, ...]), ...] in seq order, "edited": {old_id: new_seq},
    "removed": {id: removed_in_seq}}`` for one timeline folder (layout in its README.md)."""
    sessions = []
    for f in sorted(folder.glob("s[0-9]*.jsonl")):
        notes = read_jsonl(f)
        if notes:
            sessions.append((int(notes[0]["seq"]), notes))
    sessions.sort(key=lambda s: s[0])
    edited: dict[str, int] = {}
    for c in read_jsonl(folder / "changes.jsonl"):
        edited[c["old_id"]] = min(int(c["new_seq"]), edited.get(c["old_id"], 10**9))
    removed = {r["id"]: int(r["removed_in_seq"]) for r in read_jsonl(folder / "removed.jsonl")}
    return {"slug": folder.name, "sessions": sessions, "edited": edited, "removed": removed}


def provenance_pairs(metadata: dict[str, Any]) -> set[tuple[str | None, int]]:
    """The ``(session_id or None, product note id)`` pairs a memory's provenance names: every
    ``note_ids`` list found in its ``provenance`` (a JSON string or object, possibly nested or a list
    of records), each paired with the ``session_id`` of the record holding it."""
    raw = metadata.get("provenance")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return set()
    out: set[tuple[str | None, int]] = set()

    def walk(x: Any, sid: str | None) -> None:
        if isinstance(x, dict):
            sid = x.get("session_id", sid)
            for nid in x.get("note_ids") or []:
                if isinstance(nid, int):
                    out.add((sid, nid))
            for v in x.values():
                if isinstance(v, (dict, list)):
                    walk(v, sid)
        elif isinstance(x, list):
            for v in x:
                walk(v, sid)

    walk(raw, metadata.get("session_id"))
    return out


def timeline_ids(metadata: dict[str, Any], note_map: dict[tuple[str, int], str]) -> set[str]:
    """The timeline note ids behind a memory: its provenance pairs mapped through ``note_map``
    (``(session_id, product note id) -> timeline id``); a pair without a session id matches any."""
    ids = set()
    for sid, nid in provenance_pairs(metadata):
        if sid is not None and (sid, nid) in note_map:
            ids.add(note_map[(sid, nid)])
        elif sid is None:
            ids.update(t for (s, n), t in note_map.items() if n == nid)
    return ids


def stale_survival(stale: dict[str, int], upto: int, active_sources: set[str], ever_sources: set[str]) -> dict[str, Any]:
    """Of the notes in ``stale`` (timeline id -> seq it was edited or deleted in) gone stale by
    session ``upto``: ``n``, ``with_memory`` (a memory was ever written from it), ``active`` (a memory
    from it is active now) and ``share`` = active / n (None when n is 0)."""
    due = [i for i, seq in stale.items() if seq <= upto]
    active = sum(1 for i in due if i in active_sources)
    return {"n": len(due), "with_memory": sum(1 for i in due if i in ever_sources), "active": active,
            "share": active / len(due) if due else None}


def duplicates(documents: list[str], embeddings: Iterable[Any] | None = None) -> dict[str, Any]:
    """Near-identical active memories: ``text_key_extra`` (memories beyond the first of each group
    sharing a ``text_key``), ``text_key_groups`` (groups of 2+), and with ``embeddings`` (one vector
    per document) ``cosine_pairs`` (pairs at cosine >= 0.95)."""
    from consolidate.core.normal import text_key

    groups: dict[str, int] = {}
    for d in documents:
        k = text_key(d or "")
        groups[k] = groups.get(k, 0) + 1
    out: dict[str, Any] = {"text_key_extra": sum(c - 1 for c in groups.values()),
                           "text_key_groups": sum(1 for c in groups.values() if c > 1)}
    if embeddings is not None:
        import numpy as np

        m = np.asarray(list(embeddings), dtype=float)
        if len(m) > 1:
            m = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
            sims = m @ m.T
            out["cosine_pairs"] = int((np.triu(sims, 1) >= COSINE).sum())
        else:
            out["cosine_pairs"] = 0
    return out


def snapshot(store, note_map: dict[tuple[str, int], str], ever: set[str], with_embeddings: bool):
    """``(active count, memories of any status, timeline ids behind active memories, active documents, embeddings or None)``;
    adds the timeline ids behind every memory (any status) to ``ever``."""
    include = ["metadatas", "documents"] + (["embeddings"] if with_embeddings else [])
    got = store.longterm().collection.get(include=include)
    docs, vecs, active_src = [], [], set()
    embs = got.get("embeddings") if with_embeddings else None
    for i, meta in enumerate(got["metadatas"] or []):
        meta = meta or {}
        src = timeline_ids(meta, note_map)
        ever.update(src)
        if meta.get("status", "active") == "active":
            active_src.update(src)
            docs.append(got["documents"][i])
            if embs is not None:
                vecs.append(embs[i])
    return len(docs), len(got["ids"]), active_src, docs, (vecs if with_embeddings else None)


def run_timeline(tl: dict[str, Any], judges: list[Any], embedding: str | None, workdir: Path,
                 notes_files: bool = True) -> dict[str, Any]:
    """Consolidate ``tl``'s sessions in order into one fresh store under ``workdir``; returns the
    per-session rows and the final figures (see the module docstring). ``notes_files``: each session
    also hands over every notes file as it stands at its commit (``SessionTier.add_notes_file``: the
    notes introduced so far, less those removed or edited by then), as a harness that reads the
    agent's notes files at session end would."""
    from consolidate import Store, run_queue
    from consolidate.store.resolve import in_folder

    started = time.time()
    kwargs = {"embedding": embedding} if embedding else {}
    store = Store(in_folder(workdir / tl["slug"]), project=tl["slug"], **kwargs)
    note_map: dict[tuple[str, int], str] = {}
    ever: set[str] = set()
    rows = []
    with_emb = embedding is None or "minilm" in (embedding or "").lower()
    files: dict[str, dict[str, str]] = {}  # source_file -> {timeline note id: content}, as the file stands
    try:
        for seq, notes in tl["sessions"]:
            t0 = time.time()
            sid = notes[0]["session_id"]
            for n in notes:
                meta = {k: n[k] for k in META_FIELDS if n.get(k) is not None}
                nid = store.sessions.add_note(sid, n["content"], metadata=meta)
                note_map[(sid, int(nid))] = n["id"]
            if notes_files:
                for held in files.values():
                    for gone in [i for i in held if tl["removed"].get(i, 10**9) <= seq or tl["edited"].get(i, 10**9) <= seq]:
                        del held[gone]
                for n in notes:
                    if n.get("source_file"):
                        files.setdefault(n["source_file"], {})[n["id"]] = n["content"]
                for source_file, held in sorted(files.items()):
                    store.sessions.add_notes_file(sid, source_file, list(held.values()), scope=tl["slug"])
            store.sessions.end(sid, "success")
            run_queue(store, judges=judges, time_box=None)
            active, total, active_src, docs, vecs = snapshot(store, note_map, ever, False)
            rows.append({"seq": seq, "notes": len(notes), "active": active, "memories": total, "seconds": round(time.time() - t0, 2),
                         "edited": stale_survival(tl["edited"], seq, active_src, ever),
                         "deleted": stale_survival(tl["removed"], seq, active_src, ever)})
        active, total, active_src, docs, vecs = snapshot(store, note_map, ever, with_emb)
        last = tl["sessions"][-1][0] if tl["sessions"] else 0
        return {"timeline": tl["slug"], "sessions": len(tl["sessions"]), "notes": len(note_map), "active": active,
                "memories": total,
                "edited": stale_survival(tl["edited"], last, active_src, ever),
                "deleted": stale_survival(tl["removed"], last, active_src, ever),
                "duplicates": duplicates(docs, vecs), "seconds": round(time.time() - started, 1), "per_session": rows}
    finally:
        store.close()


def pct(s: dict[str, Any]) -> str:
    return "-" if s["share"] is None else f"{100 * s['share']:.1f}% ({s['active']}/{s['n']}, mem {s['with_memory']})"


def print_table(results: list[dict[str, Any]]) -> None:
    """The per-session and final tables of ``results`` (run_timeline answers) on stdout."""
    for r in results:
        print(f"\n## {r['timeline']}: {r['sessions']} sessions, {r['notes']} notes, {r['seconds']} s")
        print(f"{'seq':>4} {'notes':>6} {'active':>7} {'all':>5} {'s':>7}  edited-stale-active      deleted-stale-active")
        for row in r["per_session"]:
            print(f"{row['seq']:>4} {row['notes']:>6} {row['active']:>7} {row['memories']:>5} {row['seconds']:>7}  "
                  f"{pct(row['edited']):<24} {pct(row['deleted'])}")
    print("\n| timeline | sessions | notes | active (all) | edited stale active | deleted stale active | dup text_key | dup cos>=0.95 | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    tot = {"e": [0, 0, 0], "d": [0, 0, 0]}
    for r in results:
        d = r["duplicates"]
        print(f"| {r['timeline']} | {r['sessions']} | {r['notes']} | {r['active']} ({r['memories']}) | {pct(r['edited'])} | "
              f"{pct(r['deleted'])} | {d['text_key_extra']} | {d.get('cosine_pairs', '-')} | {r['seconds']} |")
        for k, key in (("e", "edited"), ("d", "deleted")):
            tot[k][0] += r[key]["active"]
            tot[k][1] += r[key]["n"]
            tot[k][2] += r[key]["with_memory"]
    for k, name in (("e", "edited"), ("d", "deleted")):
        a, n, w = tot[k]
        print(f"all: {name} notes whose memory is still active: {a}/{n}" + (f" = {100 * a / n:.1f}%" if n else "")
              + f" (goal <= 10 %); of the {w} that made a memory: " + (f"{100 * a / w:.1f}%" if w else "-"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeline", action="append", help="a timeline slug (repeatable; default all)")
    ap.add_argument("--judge", action="append", help="a judge spec as the CLI takes it (repeatable; default rules)")
    ap.add_argument("--embedding", default=None, help="embedding (default: the product default, MiniLM; `hash` for quick runs)")
    ap.add_argument("--data", type=Path, default=TIMELINES, help=f"timelines folder (default {TIMELINES})")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    ap.add_argument("--notes-files", choices=("both", "on", "off"), default="both",
                    help="hand each session's notes files over (on), not (off, the notes alone), or both side by side (default)")
    args = ap.parse_args(argv)
    import tempfile

    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    slugs = args.timeline or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    judges = args.judge or ["rules"]
    modes = {"both": (False, True), "on": (True,), "off": (False,)}[args.notes_files]
    started = time.time()
    by_mode: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-timelines-") as tmp:
        for on in modes:
            name = "with notes files" if on else "notes alone"
            by_mode[name] = []
            for slug in slugs:
                by_mode[name].append(run_timeline(load_timeline(args.data / slug), judges, args.embedding,
                                                  Path(tmp) / name.replace(" ", "-"), notes_files=on))
                print(f"{slug} ({name}): {by_mode[name][-1]['seconds']} s", file=sys.stderr)
    wall = round(time.time() - started, 1)
    if args.json:
        print(json.dumps({"judges": judges, "embedding": args.embedding or "default (MiniLM)", "wall_seconds": wall,
                          "modes": by_mode}, indent=1, ensure_ascii=False))
        return 0
    for name, results in by_mode.items():
        print(f"\n# {name}")
        print_table(results)
    if len(by_mode) == 2:
        print("\nside by side (one run): stale survival, notes alone -> with notes files")
        for key in ("edited", "deleted"):
            a = [sum(r[key][f] for r in rs) for rs in by_mode.values() for f in ("active",)]
            n = sum(r[key]["n"] for r in next(iter(by_mode.values())))
            print(f"  {key}: {a[0]}/{n} -> {a[1]}/{n}" + (f" ({100 * a[0] / n:.1f}% -> {100 * a[1] / n:.1f}%)" if n else ""))
        act = [sum(r["active"] for r in rs) for rs in by_mode.values()]
        print(f"  active memories at the end: {act[0]} -> {act[1]}")
    print(f"judges {judges}, embedding {args.embedding or 'default (MiniLM)'}, wall time {wall} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
