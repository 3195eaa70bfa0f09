"""Long notes: recall quality and cost of three ways to embed text past MiniLM's 256 word pieces (issue 13).

Strategies, side by side on the same real notes and the same MiniLM-L6-v2 int8 model:

* ``truncate``: the first 256 word pieces only (what the code did before issue 13);
* ``pooled``: the whole text in windows of 254 pieces (32 overlapping), each window embedded, the
  window vectors averaged weighted by their piece counts, then L2-normalised: one vector per memory
  (what ``MiniLMOnnx.embed`` does now);
* ``multi``: the same windows kept as several vectors per memory, a memory scored by its best window
  (max similarity), as a vector store with one record per chunk would.

Corpus: every note of ../shared/data/realnotes (sessions and curated long-term memories), deduplicated.
Queries: for each note longer than 256 pieces, a sentence from its tail (past the first 256 pieces:
what truncation never sees) and a sentence from its head; the query's own note must come back.
Reported: recall@1 and @5 for tail and head queries, the vectors stored, and the embedding time of the
long notes (median of --runs runs, strategies interleaved per run).

    python benchmarks/bench_long_notes.py [--runs 5] [--max-queries 120]
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

import numpy as np  # noqa: E402

WINDOW, OVERLAP = 254, 32


def load_corpus() -> list[str]:
    root = _bench.REALNOTES
    if not root.exists():
        root = Path("/work/shared/data/realnotes")
    seen, out = set(), []
    for f in sorted(root.glob("sessions/*.jsonl")) + sorted(root.glob("longterm/*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                text = " ".join(json.loads(line)["content"].split())
                if text and text not in seen:
                    seen.add(text)
                    out.append(text)
    return out


def windows(ids: list[int]) -> list[list[int]]:
    body, cls, sep = ids[1:-1], ids[0], ids[-1]
    if len(body) <= WINDOW:
        return [ids]
    out, start = [], 0
    while True:
        out.append([cls, *body[start:start + WINDOW], sep])
        if start + WINDOW >= len(body):
            return out
        start += WINDOW - OVERLAP


def run_rows(ef, rows):
    vecs = np.empty((len(rows), ef.dimension), dtype=np.float32)
    for group in ef._batches(rows):
        vecs[group] = ef._run([rows[i] for i in group])
    return vecs


def embed_strategy(ef, encs, strategy):
    """(vectors, owner index per vector)."""
    if strategy == "truncate":
        rows = [e[:255] + [e[-1]] if len(e) > 256 else e for e in encs]
        return run_rows(ef, rows), np.arange(len(encs))
    rows, owners, weights = [], [], []
    for i, e in enumerate(encs):
        for w in windows(e):
            rows.append(w)
            owners.append(i)
            weights.append(len(w) - 2)
    vecs = run_rows(ef, rows)
    owners = np.asarray(owners)
    if strategy == "multi":
        return vecs, owners
    out = np.zeros((len(encs), ef.dimension), dtype=np.float32)
    np.add.at(out, owners, vecs * np.asarray(weights, dtype=np.float32)[:, None])
    out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
    return out, np.arange(len(encs))


def sentence_at(text: str, ef, which: str) -> str | None:
    parts = [p for p in re.split(r"(?<=[.!?。！？])\s+|\s+[-*•]\s+|\s*/\s+", text) if len(p.split()) >= 6]
    if not parts:
        return None
    if which == "head":
        return parts[0]
    head_chars = len(ef._tokenizer.decode(ef._tokenizer.encode(text).ids[1:255]))
    tail = [p for p in parts if text.find(p) > head_chars + 20]
    return tail[len(tail) // 2] if tail else None


def main() -> int:
    ap = _bench.parser(__doc__, 5)
    ap.add_argument("--max-queries", type=int, default=150)
    args = ap.parse_args()
    from consolidate.store.index.embeddings import MiniLMOnnx

    ef = MiniLMOnnx()
    ef._load()
    ef._tokenizer.no_truncation()
    corpus = load_corpus()
    encs = [e.ids for e in ef._tokenizer.encode_batch(corpus, add_special_tokens=True)]
    long_ix = [i for i, e in enumerate(encs) if len(e) > 256]
    queries = []
    for i in long_ix:
        for which in ("tail", "head"):
            q = sentence_at(corpus[i], ef, which)
            if q:
                queries.append((i, which, q))
    tail_n = sum(w == "tail" for _, w, _ in queries)
    queries = [q for q in queries if q[1] == "tail"][: args.max_queries] + \
              [q for q in queries if q[1] == "head"][: args.max_queries]
    print(f"corpus: {len(corpus)} distinct real notes, {len(long_ix)} longer than 256 word pieces"
          f" (longest {max(len(e) for e in encs)} pieces); queries: {sum(w == 'tail' for _, w, _ in queries)}"
          f" tail sentences (of {tail_n}), {sum(w == 'head' for _, w, _ in queries)} head sentences")
    qv = ef.embed_array([q for _, _, q in queries])
    results, timings = {}, {s: [] for s in ("truncate", "pooled", "multi")}
    long_encs = [encs[i] for i in long_ix]
    for _ in range(args.runs):  # time the long notes only, interleaved
        for s in timings:
            t = time.perf_counter()
            embed_strategy(ef, long_encs, s)
            timings[s].append(time.perf_counter() - t)
    for s in timings:
        vecs, owners = embed_strategy(ef, encs, s)
        sims = qv @ vecs.T
        per_doc = np.full((len(queries), len(corpus)), -2.0, dtype=np.float32)
        np.maximum.at(per_doc.T, owners, sims.T) if s == "multi" else None
        scores = per_doc if s == "multi" else sims
        ranks = []
        for qi, (doc, _, _) in enumerate(queries):
            ranks.append(int((scores[qi] > scores[qi, doc]).sum()) + 1)
        results[s] = (ranks, len(vecs))
    print(f"\n{'strategy':10}{'tail R@1':>10}{'tail R@5':>10}{'head R@1':>10}{'head R@5':>10}{'vectors':>10}"
          f"{'embed long notes':>18}{'ratio':>8}")
    base = _bench.median(timings["truncate"])
    for s, (ranks, nvec) in results.items():
        def rate(which, k, ranks=ranks):
            r = [rk for rk, (_, w, _) in zip(ranks, queries) if w == which]
            return sum(x <= k for x in r) / len(r) if r else float("nan")
        med = _bench.median(timings[s])
        print(f"{s:10}{rate('tail', 1):>10.3f}{rate('tail', 5):>10.3f}{rate('head', 1):>10.3f}{rate('head', 5):>10.3f}"
              f"{nvec:>10}{med:>16.2f} s{med / base:>7.2f}x")
    print(f"(embedding time: median of {args.runs} runs over the {len(long_ix)} long notes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
