"""What the graph adds to a recall (issue 29 item 8): reading the relation edges of a store of
100,000 memories, side by side with a store whose graph holds none.

A graph file like a run's appends (a ``derived_from`` and three ``mentions`` lines per memory, one
relation edge per ten memories: 10,000) is written to a temporary folder; timed, interleaved,
median of ``--runs``:

- ``cold``: ``graph.relation_edges`` with its cache emptied (the file read, the relation lines found
  by a byte search and parsed): the first recall of a process, every CLI recall;
- ``warm``: the same call with the file unchanged (the MCP server's later recalls);
- ``no relations``: cold, on the same graph without its relation lines (a store whose judge gives none).

Run: ``nice python benchmarks/bench_relations.py [--runs 9] [--memories 100000]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _bench import interleaved, parser, spread  # noqa: E402


def write_graph(folder: Path, memories: int, relations: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "edges.jsonl", "w", encoding="utf-8") as out:
        for i in range(memories):
            mid = f"mem-{i:016x}"
            out.write(json.dumps({"source": mid, "target": f"session:s{i % 500}", "key": "derived_from",
                                  "kind": "derived_from", "run_id": "run-bench"}) + "\n")
            for e in ("entity:pnpm", "entity:src/app.py", "entity:postgres"):
                out.write(json.dumps({"source": mid, "target": e, "key": "mentions", "kind": "mentions"}) + "\n")
            if relations and i % 10 == 0:
                out.write(json.dumps({"source": f"entity:svc{i}", "target": f"entity:lib{i % 300}",
                                      "key": f"depends_on:{mid}", "kind": "depends_on", "memory_id": mid,
                                      "run_id": "run-bench"}) + "\n")


def main() -> None:
    ap = parser(__doc__, 9)
    ap.add_argument("--memories", type=int, default=100_000)
    args = ap.parse_args()
    from consolidate.store import graph

    with tempfile.TemporaryDirectory() as tmp:
        with_rel, without = Path(tmp, "with"), Path(tmp, "without")
        write_graph(with_rel, args.memories, True)
        write_graph(without, args.memories, False)

        def cold(folder):
            def run():
                graph._RELATION_CACHE.pop(str(folder / "edges.jsonl"), None)
                graph.relation_edges(folder)
            return run

        def warm():
            graph.relation_edges(with_rel)

        times = interleaved({"cold": cold(with_rel), "warm": warm, "no relations": cold(without)}, args.runs)
        size = (with_rel / "edges.jsonl").stat().st_size / 1e6
        print(f"{args.memories:,} memories, edges.jsonl {size:.1f} MB, {len(graph.relation_edges(with_rel)):,} relations")
        for name, xs in times.items():
            print(f"  {name:13s} {spread(xs)}")


if __name__ == "__main__":
    main()
