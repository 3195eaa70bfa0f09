"""Curator grading of written stores (issue 19, item 5): duplicates (goal: at most 2 % of written
memories), junk (goal: at most 3 % of the rest) and unresolved contradictions (goal: none), graded
by curators who see only the written store.

1. Keep the stores of an end-to-end run:
   ``consolidate eval --end-to-end --labels L --keep-stores DIR ...``
2. Export their memories for the curators (no label, no note id, no judge reason):
   ``python benchmarks/curator_grades.py export --stores DIR --out SET/memories.md``
   (writes ``SET/memories.md.key.json`` beside it: opaque id -> store, memory id, status).
3. Curators write grades files (the shape is in consolidate/evals/curation.py's docstring).
4. ``python benchmarks/curator_grades.py score --key SET/memories.md.key.json GRADES [GRADES ...]``
   prints the figures per curator and for the memories all curators graded alike (``--json`` for
   the object).

The figures are counts, so there is nothing to time or repeat.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consolidate.evals.curation import export_stores, score_grades  # noqa: E402


def _pct(x):
    return "n/a" if x is None else f"{100 * x:.1f} %"


def render(r: dict) -> str:
    lines = [f"{r['memories']} memories exported"]
    views = [(f"curator {i}", f) for i, f in enumerate(r["curators"], 1)]
    if len(r["curators"]) > 1:
        views.append((f"graded alike by all ({_pct(r['agreement'])} agreement)", r["agreed"]))
    for name, f in views:
        w, a = f["written"], f["active"]
        lines += [f"{name}:",
                  f"  duplicates {w['duplicates']} of {w['graded']} written ({_pct(w['duplicate_share'])}; goal <= 2 %);"
                  f" of the active: {a['duplicates']} of {a['graded']} ({_pct(a['duplicate_share'])})",
                  f"  junk {w['junk']} of the other {w['graded'] - w['duplicates']} ({_pct(w['junk_share_of_the_rest'])};"
                  f" goal <= 3 %); of the active: {a['junk']} ({_pct(a['junk_share_of_the_rest'])})",
                  f"  contradicting pairs {f['contradictions']}: unresolved contradictions: {f['unresolved_contradictions']}"
                  f" (both active; goal 0), flagged for review: {f['flagged_contradictions']}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write the curator file of the stores under --stores")
    e.add_argument("--stores", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--title", default="Memories to grade")
    s = sub.add_parser("score", help="figures from the export's key and the curators' grade files")
    s.add_argument("--key", required=True)
    s.add_argument("grades", nargs="+")
    s.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.cmd == "export":
        print(json.dumps(export_stores(a.stores, a.out, a.title)))
        return 0
    r = score_grades(a.key, a.grades)
    print(json.dumps(r, indent=1) if a.json else render(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
