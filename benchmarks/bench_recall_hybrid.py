"""Hybrid recall (issue 29 item 4): recall@5 of identifier and paraphrase queries, vector only
(before) and hybrid (after: vector + lexical FTS5 fused by reciprocal rank fusion), side by side
in one run, on a store of the curated long-term memories of ../shared/data/realnotes (MiniLM).

The store: every ``longterm/*.jsonl`` memory (field ``content``, 20 to 1,200 characters, each text
once), plus the ``old`` statement of every same-fact pair of tests/support/labels/contradiction-realnotes.jsonl
(the project's own short restatements of realnotes facts), written through the long-term tier.

The queries, made at run time from the memories (a seeded RNG, ``--seed``):

- **identifier**: a version (``v1.9``, ``3.12``), a flag (``--no-verify``), a file name
  (``main.py``, ``src/app/main.py``), an error code (``E0308``, ``ECONNREFUSED``) or a ticket
  (``PROJ-1234``) picked out of a memory's text by a regex; identifiers named by more than 5
  memories are left out (not specific). Each gives two queries: the identifier alone
  (``recall "v1.9"``) and the word before it with it (``recall "release v1.8"``). Relevant: every
  memory whose text holds the identifier; recall@5 = relevant ones in the top 5 / min(5, relevant).
- **paraphrase (labelled)**: the ``new`` statement of each same-fact pair (a restatement in other
  words), its ``old`` statement the one relevant memory.
- **paraphrase (word drop)**: a memory's words without identifiers, stop words and markdown,
  half of them dropped at random and the rest shuffled; the memory the one relevant.

recall@5 is averaged over the queries of each kind. Before = the same recall with the lexical
ranking empty (``consolidate.pipeline.recall.lexical_matches`` answering []): the vector ranking alone,
as recall was. Latency: median per query of each, in the same process (the model loaded).

    python benchmarks/bench_recall_hybrid.py [--runs 5] [--max-queries 150] [--seed 29]
"""

from __future__ import annotations

import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import REALNOTES, REPO, check_venv, parser  # noqa: E402

PAIRS = REPO / "tests" / "support" / "labels" / "contradiction-realnotes.jsonl"
#: Identifier shapes coding agents look up (the regex picks them out of a memory's text).
IDENTIFIERS = {
    "version": re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.]*\w)"),
    "flag": re.compile(r"(?<![\w-])--?[a-z][a-z0-9]*(?:-[a-z0-9]+)+|(?<![\w-])--[a-z][a-z0-9]+"),
    "file": re.compile(r"(?<![\w/.-])[\w./-]*\w\.(?:py|ts|tsx|js|jsx|mjs|md|json|toml|ya?ml|dart|rs|go|sh|kt|swift|sql|css|html|lock|env|txt)\b"),
    "error code": re.compile(r"\b(?:[A-Z]{1,3}\d{3,5}|E[A-Z]{5,}|HTTP [45]\d\d)\b"),
    "ticket": re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),
}
STOP = set("""a an and are as at be been but by can do does for from has have how if in into is it its
not of on or should so than that the their then there these they this to was we were what when
where which while who why will with you your must use""".split())


def memories() -> list[str]:
    texts: list[str] = []
    seen = set()
    for path in sorted((REALNOTES / "longterm").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = (json.loads(line).get("content") or "").strip()
            if 20 <= len(text) <= 1200 and text not in seen:
                seen.add(text)
                texts.append(text)
    return texts


def labelled_pairs() -> list[tuple[str, str]]:
    out = []
    for line in PAIRS.read_text(encoding="utf-8").splitlines():
        p = json.loads(line)
        if p.get("category") == "same-fact":
            out.append((p["old"], p["new"]))
    return out


def identifier_queries(texts: list[str], rng: random.Random, limit: int) -> list[tuple[str, str, set[int]]]:
    """``[(kind, query, relevant indexes)]``: each identifier alone and with the word before it."""
    found: dict[str, tuple[str, int, str]] = {}
    for i, text in enumerate(texts):
        for kind, rx in IDENTIFIERS.items():
            for m in rx.finditer(text):
                ident = m.group(0).strip()
                if len(ident) < 3 or ident.lower() in found:
                    continue
                before = re.findall(r"[A-Za-z]{3,}", text[:m.start()])
                word = before[-1] if before and before[-1].lower() not in STOP else ""
                found[ident.lower()] = (kind, i, word)
    rows = []
    for ident_l, (kind, i, word) in found.items():
        ident = next(m.group(0).strip() for m in IDENTIFIERS[kind].finditer(texts[i]) if m.group(0).strip().lower() == ident_l)
        pat = re.compile(r"(?<![\w.-])" + re.escape(ident) + r"(?![\w-]|\.\w)", re.IGNORECASE)
        relevant = {j for j, t in enumerate(texts) if pat.search(t)}
        if not relevant or len(relevant) > 5:
            continue
        rows.append((kind, ident, relevant))
        if word:
            rows.append((kind, f"{word} {ident}", relevant))
    rng.shuffle(rows)
    return rows[:limit]


def word_drop_queries(texts: list[str], rng: random.Random, limit: int) -> list[tuple[str, str, set[int]]]:
    rows = []
    for i in rng.sample(range(len(texts)), len(texts)):
        text = texts[i]
        for rx in IDENTIFIERS.values():
            text = rx.sub(" ", text)
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z']+", text) if w.lower() not in STOP]
        if len(words) < 6:
            continue
        kept = rng.sample(words, max(3, len(words) // 2))
        rng.shuffle(kept)
        rows.append(("word drop", " ".join(kept[:12]), {i}))
        if len(rows) >= limit:
            break
    return rows


def recall_at(hits: list[str], relevant: set[str], k: int = 5) -> float:
    return len(set(hits[:k]) & relevant) / min(k, len(relevant))


def main() -> int:
    ap = parser(__doc__, 5, "timing rounds")
    ap.add_argument("--max-queries", type=int, default=150, help="identifier and word-drop queries each (default 150)")
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    check_venv()
    if not (REALNOTES / "longterm").is_dir():
        print(f"no real notes at {REALNOTES}: nothing measured")
        return 0
    from consolidate import Store
    from consolidate.pipeline import recall as retrieval

    rng = random.Random(args.seed)
    texts = memories()
    pairs = labelled_pairs()
    olds = [o for o, _ in pairs]
    docs = texts + [o for o in olds if o not in texts]
    store = Store(Path(tempfile.mkdtemp(prefix="bench-hybrid-")) / ".memofs", project="bench")
    lt = store.longterm()
    t0 = time.perf_counter()
    vectors = lt.embed(docs)
    lt.upsert([{"id": f"m{i:05d}", "document": d, "embedding": list(v), "metadata": {
        "type": "fact", "status": "active", "tier": "durable", "evidence": "user-stated", "confidence": "high",
        "last_confirmed": "2026-12-01", "scope": "bench", "session_id": "bench", "run_id": "bench",
        "source": "import", "prompt_version": "", "provenance": "{}", "fields": "{}"}}
        for i, (d, v) in enumerate(zip(docs, vectors))])
    print(f"store: {len(docs)} memories ({len(texts)} realnotes long-term memories, {len(docs) - len(texts)}"
          f" same-fact restatements), embedded and written in {time.perf_counter() - t0:.1f} s")

    queries = identifier_queries(texts, rng, args.max_queries)
    queries += [("labelled paraphrase", new, {docs.index(old)}) for old, new in pairs]
    queries += word_drop_queries(texts, rng, args.max_queries)

    real_lexical = retrieval.lexical_matches

    def run(query: str, hybrid: bool) -> list[str]:
        retrieval.lexical_matches = real_lexical if hybrid else (lambda *a, **k: [])  # type: ignore[assignment]
        try:
            return [h["id"] for h in retrieval.recall(store, query, k=5, record=False).memories]
        finally:
            retrieval.lexical_matches = real_lexical  # type: ignore[assignment]

    run(queries[0][1], True)  # the lexical index built, the model warm: not counted
    scores: dict[str, dict[str, list[float]]] = {}
    misses: list[str] = []
    for kind, query, relevant in queries:
        group = "identifier" if kind in IDENTIFIERS else kind
        rel = {f"m{j:05d}" for j in relevant}
        before, after = run(query, False), run(query, True)
        row = scores.setdefault(group, {"before": [], "after": []})
        row["before"].append(recall_at(before, rel))
        row["after"].append(recall_at(after, rel))
        if group == "identifier":
            sub = scores.setdefault(f"  {kind}", {"before": [], "after": []})
            sub["before"].append(recall_at(before, rel))
            sub["after"].append(recall_at(after, rel))
        if recall_at(after, rel) < recall_at(before, rel):
            misses.append(f"  worse after: {group}: {query[:70]!r}")

    print(f"\nrecall@5 (mean over queries), vector only (before) vs hybrid (after), seed {args.seed}:")
    print(f"  {'queries':<22} {'n':>4} {'before':>8} {'after':>8}")
    for group in ["identifier", *[f"  {k}" for k in IDENTIFIERS], "labelled paraphrase", "word drop"]:
        row = scores.get(group)
        if row:
            print(f"  {group:<22} {len(row['before']):>4} {statistics.mean(row['before']):>8.3f}"
                  f" {statistics.mean(row['after']):>8.3f}")
    print(f"queries worse after: {len(misses)}")
    for line in misses[:10]:
        print(line)

    # latency, interleaved rounds over a sample of the queries
    sample = [q for _, q, _ in queries[:: max(1, len(queries) // 40)]]
    lat: dict[str, list[float]] = {"before": [], "after": []}
    for r in range(args.runs):
        for mode in (("before", "after") if r % 2 == 0 else ("after", "before")):
            t = time.perf_counter()
            for q in sample:
                run(q, mode == "after")
            lat[mode].append((time.perf_counter() - t) / len(sample))
    b, a = statistics.median(lat["before"]), statistics.median(lat["after"])
    print(f"\nlatency per recall (in process, median of {args.runs} rounds of {len(sample)} queries):"
          f" before {b * 1000:.1f} ms, after {a * 1000:.1f} ms ({a / b:.2f}x)")
    ident, para = scores["identifier"], scores["labelled paraphrase"]
    drop = scores.get("word drop", {"before": [0.0], "after": [0.0]})
    print(f"\nsummary: identifier recall@5 {statistics.mean(ident['before']):.3f} -> {statistics.mean(ident['after']):.3f};"
          f" labelled paraphrase {statistics.mean(para['before']):.3f} -> {statistics.mean(para['after']):.3f};"
          f" word drop {statistics.mean(drop['before']):.3f} -> {statistics.mean(drop['after']):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
