"""Curator grading of written stores (issue 19, item 5): what a user finds in the store, judged by
people who see only the store.

``export_stores`` writes the memories of one or more stores (the throwaway stores ``consolidate eval
--end-to-end --keep-stores DIR`` keeps, one ``<session>/.memofs`` each) to a curator file: for every
memory an opaque id (``S03-M007``: store 3, memory 7), its store's project name, status (active,
quarantined, disputed: only active memories are shown by default recall), type, evidence and text.
Nothing else: no label, no note id, no judge reason, so curators grade what a user would read.

Curators write ``grades.json``::

    {"memories": [{"id": "S03-M007", "grade": "ok" | "duplicate" | "junk",
                   "duplicate_of": "S03-M002", "why": "..."}, ...],
     "contradictions": [{"ids": ["S03-M004", "S03-M009"], "why": "..."}, ...]}

``score_grades`` turns one or more grade files into the issue's figures: the share of written memories
that repeat another memory of the same store (goal: at most 2 %; among the active memories, a memory
graded duplicate of one no longer active is none, so grades of a store made before a curation pass
score the store after it, whose export numbers the same memories alike), the share of the other memories that
are junk (stale, readable from the code in seconds, work in progress, task or status lines, generic
advice; goal: at most 3 %), and the contradicting pairs left unresolved (both memories active; goal:
none). A pair with a disputed or quarantined side is counted apart as flagged for review. Each figure
is given per curator and for the memories both curators graded alike.

Raises BadInput for a missing store folder, a grade file that is not the shape above, or a grade
naming an id the export does not hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate import Store
from consolidate.store.resolve import STORE_FOLDER

GRADES = ("ok", "duplicate", "junk")


def read_stores(stores_dir: str | Path) -> list[dict[str, Any]]:
    """The memories of every ``<name>/.memofs`` store under ``stores_dir`` (sorted by name): a list of
    ``{"id", "store", "project", "memory_id", "status", "type", "evidence", "confidence", "text"}``
    with opaque ids ``S<store>-M<memory>`` numbered in store order, then by memory creation order
    (then memory id). BadInput when the folder holds no store."""

    paths = sorted(Path(stores_dir).glob(f"*/{STORE_FOLDER}"))
    if not paths:
        raise BadInput(f"no store (<name>/.memofs) under {stores_dir}")
    out: list[dict[str, Any]] = []
    for si, path in enumerate(paths, 1):
        store = Store(path)
        try:
            got = store.longterm().collection.get(include=["documents", "metadatas"])
        finally:
            store.close()
        rows = sorted(zip(got["ids"], got["documents"], got["metadatas"]),
                      key=lambda r: (str((r[2] or {}).get("created_at", "")), r[0]))
        for mi, (mid, doc, meta) in enumerate(rows, 1):
            meta = meta or {}
            out.append({"id": f"S{si:02d}-M{mi:03d}", "store": path.parent.name, "project": path.parent.name,
                        "memory_id": mid, "status": meta.get("status", "active"), "type": meta.get("type"),
                        "evidence": meta.get("evidence"), "confidence": meta.get("confidence"), "text": doc})
    return out


def render_export(memories: list[dict[str, Any]], title: str) -> str:
    """The curator file (Markdown): one section per store, one line per memory:
    ``S03-M007 [active] decision (observed-success): text``."""
    lines = [f"# {title}", "",
             "One section per project store; one line per memory: id [status] type (evidence): text.",
             "Only [active] memories are shown to agents by default; [quarantined] and [disputed] wait for"
             " a confirmation or a person's review.", ""]
    store = None
    for m in memories:
        if m["store"] != store:
            store = m["store"]
            n = sum(1 for x in memories if x["store"] == store)
            lines += ["", f"## store {m['id'].split('-')[0]}: project {m['project']} ({n} memories)", ""]
        text = " ".join(str(m["text"]).split())
        lines.append(f"{m['id']} [{m['status']}] {m['type']} ({m['evidence']}): {text}")
    return "\n".join(lines) + "\n"


def export_stores(stores_dir: str | Path, out: str | Path, title: str = "Memories to grade") -> dict[str, Any]:
    """Write the curator file ``out`` (see :func:`render_export`) and ``out``'s key beside it
    (``<out>.key.json``: opaque id -> store, memory id, status, type; no text) and return
    ``{"memories": n, "stores": k, "file": out}``."""
    memories = read_stores(stores_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_export(memories, title), encoding="utf-8")
    key = {m["id"]: {k: m[k] for k in ("store", "memory_id", "status", "type", "evidence")} for m in memories}
    Path(f"{out}.key.json").write_text(json.dumps(key, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"memories": len(memories), "stores": len({m["store"] for m in memories}), "file": str(out)}


def read_grades(path: str | Path, ids: set[str]) -> dict[str, Any]:
    """One curator's ``grades.json`` checked against the export's ids: ``{"grade": {id: grade},
    "duplicate_of": {id: id}, "contradictions": [(id, id), ...]}``. BadInput for a bad shape or an
    unknown id."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"grade file {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise BadInput(f"grade file {path}: expected an object with a `memories` list")
    grade: dict[str, str] = {}
    dup_of: dict[str, str] = {}
    for row in data["memories"]:
        if not isinstance(row, dict) or row.get("id") not in ids or row.get("grade") not in GRADES:
            raise BadInput(f"grade file {path}: bad entry {str(row)[:120]} (id from the export,"
                           f" grade one of {', '.join(GRADES)})")
        grade[row["id"]] = row["grade"]
        if row["grade"] == "duplicate" and row.get("duplicate_of") in ids:
            dup_of[row["id"]] = row["duplicate_of"]
    pairs = []
    for row in data.get("contradictions") or []:
        pair = row.get("ids") if isinstance(row, dict) else None
        if not isinstance(pair, list) or len(pair) != 2 or not set(pair) <= ids:
            raise BadInput(f"grade file {path}: bad contradiction {str(row)[:120]} (two ids from the export)")
        pairs.append(tuple(sorted(pair)))
    return {"grade": grade, "duplicate_of": dup_of, "contradictions": sorted(set(pairs))}


def _duplicates(ids: list[str], grade: dict[str, str], dup_of: dict[str, str]) -> set[str]:
    """The memories of ``ids`` that repeat another memory of ``ids``. The curators' ``duplicate_of``
    links join memories into groups that make one point; in each group the first member of ``ids``
    not graded duplicate (else the first) is the one that stays, the others of ``ids`` are
    duplicates. So a memory graded duplicate of one that is no longer active (merged, dropped) is no
    duplicate of the active ones; one graded duplicate without a valid ``duplicate_of`` always is."""
    root: dict[str, str] = {}

    def find(i: str) -> str:
        while root.get(i, i) != i:
            i = root[i]
        return i

    for a, b in dup_of.items():
        ra, rb = find(a), find(b)
        if ra != rb:
            root[ra] = rb
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(find(i), []).append(i)
    out: set[str] = set()
    for members in groups.values():
        if len(members) == 1:
            if grade[members[0]] == "duplicate" and members[0] not in dup_of:
                out.add(members[0])
            continue
        stays = next((i for i in members if grade[i] != "duplicate"), members[0])
        out |= {i for i in members if i != stays}
    return out


def _figures(memories: list[dict[str, Any]], grade: dict[str, str], pairs,
             dup_of: dict[str, str] | None = None) -> dict[str, Any]:
    status = {m["id"]: m["status"] for m in memories}
    graded = [m["id"] for m in memories if m["id"] in grade]
    active = [i for i in graded if status[i] == "active"]
    links = {a: b for a, b in (dup_of or {}).items() if a in grade and b in grade}

    def shares(ids):
        dups = _duplicates(ids, grade, links)
        rest = [i for i in ids if i not in dups]
        junk = sum(grade[i] == "junk" for i in rest)
        return {"graded": len(ids), "duplicates": len(dups), "duplicate_share": len(dups) / len(ids) if ids else None,
                "junk": junk, "junk_share_of_the_rest": junk / len(rest) if rest else None}

    unresolved = [p for p in pairs if all(status[i] == "active" for i in p)]
    return {"written": shares(graded), "active": shares(active),
            "contradictions": len(pairs), "unresolved_contradictions": len(unresolved),
            "flagged_contradictions": len(pairs) - len(unresolved),
            "unresolved_pairs": [list(p) for p in unresolved]}


def score_grades(export_key: str | Path, grade_files: list[str | Path]) -> dict[str, Any]:
    """The curator figures (see the module docstring) from the export's key file and one or more
    curators' grade files: ``{"curators": [figures per file], "agreed": figures over the memories
    every curator graded alike (contradictions: pairs every curator named), "agreement": share of
    memories graded alike}``."""
    key = json.loads(Path(export_key).read_text(encoding="utf-8"))
    memories = [{"id": i, **v} for i, v in sorted(key.items())]
    ids = set(key)
    graded = [read_grades(g, ids) for g in grade_files]
    per = [_figures(memories, g["grade"], g["contradictions"], g["duplicate_of"]) for g in graded]
    common = set.intersection(*(set(g["grade"]) for g in graded)) if graded else set()
    alike = {i: graded[0]["grade"][i] for i in common if len({g["grade"][i] for g in graded}) == 1}
    pairs = set.intersection(*(set(g["contradictions"]) for g in graded)) if graded else set()
    return {"memories": len(memories), "curators": per,
            "agreed": _figures(memories, alike, sorted(pairs), graded[0]["duplicate_of"]) if graded else None,
            "agreement": len(alike) / len(common) if common else None}
