"""Read-side commands: ``recall`` and ``graph`` (``status`` is consolidate.cli.commands.status_cmd's)."""

from __future__ import annotations

import json
import sys
from typing import Any

from consolidate.cli.commands import open_store
from consolidate.store.layout import GRAPH
from consolidate.core.errors import BadInput
from consolidate.store.views import shown as agent_view
from consolidate.model.report import memory_json, terminal_safe
from consolidate.pipeline.recall import check_options, recall
from consolidate.store.views.shown import line
from consolidate.pipeline.recall import as_of_day
from consolidate.store.graph import load, relations_of
from consolidate.store.relations import entity_name


def cmd_recall(args) -> int:
    check_options(args.query, args.k, args.min_similarity)  # bad input before the store is opened
    day = as_of_day(args.as_of)
    store = open_store(args, create=False)
    replica = store.replica()
    team_line = replica.recall_line() if replica is not None else ""  # a team: pull first, as MCP recall and SessionStart do
    result = recall(store, args.query, k=args.k, min_similarity=args.min_similarity, include_quarantined=args.all,
                    as_of=day)
    hits = result.memories
    if team_line:
        print("team: " + terminal_safe(team_line), file=sys.stderr)
    if args.json:
        print(json.dumps(agent_view.json_answer([memory_json(h) for h in hits]), ensure_ascii=False))
        return 0
    if not hits and result.below_floor:
        print(f"no memory at similarity {args.min_similarity:g} or more ({result.below_floor} less similar:"
              f" --min-similarity 0 shows them)")
    elif not hits and not result.held_back:
        print("no memories" + (f" valid on {day}" if day else "") + ("" if store.exists else f" (no store at {store.path})"))
    for h in hits:
        print(terminal_safe(line(h["document"], h["metadata"], "cli-recall")
                            + (f"  ({h['via']})" if h.get("via") else "")))
    if result.note:
        print("note: " + terminal_safe(result.note))
    if result.held_back:  # the agent view's guard (consolidate/store/views/shown.py): named, not printed
        print(f"held back: {result.held_line}")
    return 0


def cmd_graph(args) -> int:
    """``consolidate graph ENTITY [--depth N] [--json]``: the entity's relations (consolidate.store.graph.relations_of)."""

    store = open_store(args, create=False)

    name = entity_name(args.entity)
    if not name:
        raise BadInput("empty entity name: give the name of a package, module, service or file")
    g = load(store.sub(GRAPH)) if store.exists else None
    res: dict[str, Any] = (relations_of(g, name, args.depth) if g is not None
                           else {"entity": name, "found": False, "relations": [], "memories": {}})
    if g is not None:
        agent_view.graph_view(res, store, "cli-graph")  # as the agent view shows them (consolidate/store/views/shown.py)
    if args.json:
        print(json.dumps(agent_view.json_answer(res), ensure_ascii=False))
        return 0
    if not res["found"]:
        print(terminal_safe(f"no entity {name!r} in the graph" + ("" if store.exists else f" (no store at {store.path})")))
        return 0
    if not res["relations"]:
        print(terminal_safe(f"{name}: no relations (named by memories, related to nothing)"))
        return 0
    for r in res["relations"]:
        print(terminal_safe(f"{r['source']} {r['relation']} {r['target']}" + (f"  (depth {r['depth']})" if r["depth"] > 1
                                                                                 else "")))
        for mid in r["memory_ids"]:
            m = res["memories"][mid]
            print(terminal_safe(f"  {mid} [{m['status']}] {m['statement']}"))
    return 0


