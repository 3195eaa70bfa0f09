"""How many kept real notes with time words the durability rule makes transient (issue 13, item 4).

Reads ../shared/data/labels/realnotes-dev-labels.jsonl (notes labeled keep or drop by an annotator),
takes the notes labeled ``keep`` whose text holds a time word (``TIME_WORDS`` below: a broad list,
independent of the rule under test), and runs ``consolidate.rules.memory_types.durability`` on each as a
judged keeper (high confidence, no TTL, as the judge would hand it on). A kept note made transient
is one the write policy demotes against the annotator's verdict. It prints each demoted note's id
and reason, then the count.

Run it on the code before and after a change with PYTHONPATH pointing at each checkout:

    PYTHONPATH=/path/to/old/checkout python benchmarks/bench_time_words.py
    python benchmarks/bench_time_words.py

No timing: a count, deterministic (one run is the figure).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABELS = Path(os.environ.get("CONSOLIDATE_LABELS", REPO.parent / "shared" / "data" / "labels"
                             / "realnotes-dev-labels.jsonl"))
if not LABELS.exists():  # a worktree one level deeper than the main checkout
    LABELS = Path("/work/shared/data/labels/realnotes-dev-labels.jsonl")

#: Time words and phrases in the kinds of notes agents write (not the rule's own list).
TIME_WORDS = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|now|nowadays|currently|current|at the moment|this (?:session|run|week|sprint|time)"
    r"|for the time being|temporar(?:y|ily)|recently|lately|soon|later|for now|right now|as of|until|anymore|yet"
    r"|from now on|going forward|at present)\b", re.IGNORECASE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--verbose", action="store_true", help="list the demoted long-term memories too")
    ap.add_argument("--all-kept", action="store_true", help="also count over every kept note, time word or not")
    args = ap.parse_args()
    if not args.labels.exists():
        print(f"labels not found: {args.labels}", file=sys.stderr)
        return 2
    from consolidate.rules import memory_types

    rows = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [r for r in rows if r.get("verdict") == "keep"]
    timed = [r for r in kept if TIME_WORDS.search(r["content"])]
    print(f"code: {Path(memory_types.__file__).resolve().parent.parent}")
    print(f"labels: {args.labels.name}: {len(rows)} notes, {len(kept)} kept, {len(timed)} kept with a time word")
    demoted = []
    for r in timed:
        text = " ".join(r["content"].split())
        tier, why = memory_types.durability(text, confidence="high", had_ttl=False)
        if tier == "transient":
            demoted.append((r["id"], why, TIME_WORDS.findall(r["content"])))
    for nid, why, words in demoted:
        print(f"  demoted {nid}: {why}; time words {sorted(set(w.lower() for w in words))}")
    print(f"kept notes with a time word made transient: {len(demoted)} of {len(timed)}")
    every = [r for r in rows if TIME_WORDS.search(r["content"])]
    by_verdict = {"keep": 0, "drop": 0}
    for r in every:
        if memory_types.durability(" ".join(r["content"].split()), confidence="high", had_ttl=False)[0] == "transient":
            by_verdict[r["verdict"]] += 1
    print(f"every labeled note with a time word ({len(every)}): made transient {sum(by_verdict.values())}"
          f" (labeled keep {by_verdict['keep']}, labeled drop {by_verdict['drop']})")
    longterm = sorted(args.labels.parent.parent.glob("realnotes/longterm/*.jsonl"))
    if longterm:  # curated long-term memory (CLAUDE.md, AGENTS.md): every line is a kept, durable memory
        mems = [json.loads(line) for f in longterm for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        mtimed = [m for m in mems if TIME_WORDS.search(m["content"])]
        n = 0
        for m in mtimed:
            tier, why = memory_types.durability(" ".join(m["content"].split()), confidence="high", had_ttl=False)
            if tier == "transient":
                n += 1
                if args.verbose:
                    print(f"  demoted {m['id']}: {why}")
        print(f"curated long-term memories (realnotes/longterm, all durable) with a time word made transient:"
              f" {n} of {len(mtimed)} ({len(mems)} memories)")
    if args.all_kept:
        n = sum(memory_types.durability(" ".join(r["content"].split()), confidence="high", had_ttl=False)[0]
                == "transient" for r in kept)
        print(f"kept notes made transient (any wording): {n} of {len(kept)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
