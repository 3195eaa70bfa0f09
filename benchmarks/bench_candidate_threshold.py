"""The contradiction stage's candidate similarity, measured on the compare regression set (issue 12).

A new keeper's neighbours at or above CANDIDATE_SIMILARITY (consolidate/pipeline/stages/contradiction.py) go to
the judge's compare prompt (duplicate | updates | contradicts | unrelated). Too high, and a reworded
duplicate or an update never reaches the judge (both stay active); too low, and unrelated neighbours
cost prompt tokens. This script embeds the 60 labelled pairs of tests/support/labels/compare-regression.jsonl
with the store's default embedding (MiniLM-L6-v2, int8 ONNX), prints the cosine similarity of each
kind (min / median / max), and for each threshold the share of related pairs (duplicate, updates,
contradicts) that reach the judge beside the share of unrelated pairs that do; then the highest
threshold that sends every related pair, and the one in use.

    python benchmarks/bench_candidate_threshold.py [--runs 5]

The similarities are deterministic; --runs repeats the embedding to report its median time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import REPO, parser  # noqa: E402

LABELS = REPO / "tests" / "support" / "labels" / "compare-regression.jsonl"
RELATED = ("duplicate", "updates", "contradicts")


def similarities(rows: list[dict], ef) -> list[float]:
    """Cosine similarity of each pair's NEW and OLD statement (the embeddings are L2-normalised)."""
    import numpy as np

    new = np.asarray(ef.embed([r["new"] for r in rows]), dtype=np.float32)
    old = np.asarray(ef.embed([r["old"] for r in rows]), dtype=np.float32)
    return [float(x) for x in (new * old).sum(axis=1)]


def main() -> None:
    args = parser(__doc__, runs=5, what="embedding passes (for the time only)").parse_args()
    from consolidate.store.index.embeddings import get_embedding_function
    from consolidate.pipeline.stages.contradiction import CANDIDATE_SIMILARITY

    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    ef = get_embedding_function("minilm")
    times, sims = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        sims = similarities(rows, ef)
        times.append(time.perf_counter() - t)
    print(f"{len(rows)} labelled pairs ({LABELS.relative_to(REPO)}), MiniLM-L6-v2; embedding both sides:"
          f" median {statistics.median(times) * 1000:.0f} ms over {args.runs} runs")
    by: dict[str, list[float]] = {}
    for r, s in zip(rows, sims):
        by.setdefault(r["relation"], []).append(s)
    print(f"{'relation':<12} {'pairs':>5} {'min':>6} {'median':>7} {'max':>6}")
    for rel in (*RELATED, "unrelated"):
        v = by.get(rel, [])
        print(f"{rel:<12} {len(v):>5} {min(v):>6.3f} {statistics.median(v):>7.3f} {max(v):>6.3f}")
    related = [s for r, s in zip(rows, sims) if r["relation"] in RELATED]
    unrelated = by["unrelated"]
    print(f"\n{'threshold':>9} {'related sent':>13} {'duplicates':>11} {'updates':>8} {'conflicts':>10} {'unrelated sent':>15}")
    for t in [x / 100 for x in range(20, 75, 5)]:
        share = lambda v, t=t: sum(1 for s in v if s >= t) / len(v)  # noqa: E731
        print(f"{t:>9.2f} {share(related):>13.0%} {share(by['duplicate']):>11.0%} {share(by['updates']):>8.0%}"
              f" {share(by['contradicts']):>10.0%} {share(unrelated):>15.0%}")
    lowest_related = min(related)
    worst = min((r for r in rows if r["relation"] in RELATED), key=lambda r: sims[rows.index(r)])
    print(f"\nlowest related pair: {lowest_related:.3f} ({worst['id']}, {worst['relation']})")
    print(f"highest threshold (2 decimals, rounded down) that sends every related pair: "
          f"{int(lowest_related * 100) / 100:.2f}")
    sent = sum(1 for s in related if s >= CANDIDATE_SIMILARITY) / len(related)
    print(f"in use: CANDIDATE_SIMILARITY = {CANDIDATE_SIMILARITY:.2f}: related pairs sent {sent:.0%},"
          f" unrelated pairs sent {sum(1 for s in unrelated if s >= CANDIDATE_SIMILARITY) / len(unrelated):.0%}")


if __name__ == "__main__":
    main()
