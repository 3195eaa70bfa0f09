"""The memory graph: a networkx MultiDiGraph persisted as ``graph/nodes.jsonl`` and
``graph/edges.jsonl``.

Nodes carry ``kind``: ``memory`` (id = memory id), ``session`` (id ``session:<id>``), ``entity``
(id ``entity:<name>``, with ``entity_kind`` file|package|tool). Edges carry ``kind``:
``derived_from`` (memory -> session), ``mentions`` (memory -> entity), ``supersedes`` and ``disputes``
(memory -> memory, with the status change that made them), and the relations a judge gave between
entities (entity -> entity, kind one of consolidate.core.vocab.ENTITY_RELATIONS, key ``KIND:MEMORY_ID``, with
``memory_id`` and ``run_id`` as provenance: one edge per memory that states it, so forgetting,
superseding or undoing that memory takes its edge out of what :func:`relations_of` follows). Saving writes each file to a temporary file and renames it, so a
crash leaves the old graph or the new one, never half of one.

A run does not load and save the whole graph (at 100,000 memories that took 5-7 s a run,
benchmarks/bench_scale.py): it appends its nodes and edges (:func:`append`). Loading reads the lines
in order, a later line of the same node or edge updating the earlier one, so a line appended twice
(a replayed run) changes nothing; a node line with ``"_keep": true`` adds the node only when it is
not there yet (an entity keeps the kind it was first seen with), a line with ``"_if": NODE`` counts
only when NODE is there (a status change of a memory the graph may not hold). A line cut by a crash is removed
before the next append (:func:`cut_torn_tail`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from consolidate.core.errors import StoreCorrupt
from consolidate.core.json_check import check_fields
from consolidate.core.normal import nfc, strip_invisible
from consolidate.core.jsonl import append_lines, cut_torn_tail  # the store's JSONL appends (consolidate/core/jsonl.py)
from consolidate.core.vocab import LIVE_STATUSES
from consolidate.store.layout import GRAPH_EDGES, GRAPH_NODES
from consolidate.core.atomic import write_atomic
from consolidate.rules.persisted import gate_fields
from consolidate.store.relations import match_key

_PATH = re.compile(r"(?<![\w/.-])((?:\.{0,2}/)?(?:[\w@.-]+/)+[\w@.-]+\.[A-Za-z0-9]{1,6}|[\w-]+\.(?:py|js|ts|tsx|jsx|json|toml|ya?ml|md|sh|rs|go|java|sql|css|html|lock|cfg|ini|env))(?![\w/])")
_INSTALL = re.compile(r"\b(?:pip|pip3|npm|pnpm|yarn|uv|cargo|gem|go|poetry|bun)\s+(?:install|add|i|get)\s+((?:[@\w./-]+(?:==[\w.]+)?\s*){1,4})", re.IGNORECASE)
#: Tools recognised by name when they appear as words (a short, common list; judges add their own entities).
TOOLS = frozenset("""
npm pnpm yarn bun pip uv poetry cargo go git docker kubectl terraform make cmake pytest jest vitest
mocha webpack vite eslint prettier ruff mypy black node deno python bash zsh curl wget ssh rsync
postgres postgresql mysql sqlite redis mongodb chromadb supabase firebase vercel netlify nginx
react nextjs next.js vue svelte django flask fastapi express tailwind prisma drizzle graphql
hardhat foundry anchor solana ethers web3 playwright puppeteer selenium ollama litellm openai
""".split())


def extract_entities(text: str, extra: list[str] | None = None) -> list[tuple[str, str]]:
    """Entities named in ``text``: ``[(name, entity_kind)]`` with kind file|package|tool, in order
    of first appearance, without repeats. ``extra`` (a judge's entities) are added as kind ``named``."""
    found: dict[str, str] = {}
    text = nfc(strip_invisible(text))  # file names as compared (consolidate/core/normal.py): NFD names whole
    for m in _PATH.finditer(text):
        found.setdefault(m.group(1).strip("./") if m.group(1).startswith("./") else m.group(1), "file")
    for m in _INSTALL.finditer(text):
        for pkg in m.group(1).split():
            if not pkg.startswith("-"):
                found.setdefault(pkg.split("==")[0].lower(), "package")
    for word in re.findall(r"[A-Za-z][\w.+-]*", text):
        w = word.lower().rstrip(".")
        if w in TOOLS:
            found.setdefault(w, "tool")
    for e in extra or []:
        e = " ".join(str(e).split())[:100]
        if e:
            found.setdefault(e, "named")
    return list(found.items())


#: Node-line flag: add the node only when absent (see the module docstring).
KEEP = "_keep"
#: Line field: the line counts only when this node is in the graph (a status change or an edge of
#: a memory the graph may not hold).
IF = "_if"
#: The fields of a graph line and their JSON kinds (consolidate/core/json_check.py).
#: The file of each kind of graph line.
_FILES = {"nodes": GRAPH_NODES.name, "edges": GRAPH_EDGES.name}
LINE_FIELDS: dict[str, dict[str, tuple[tuple, bool]]] = {GRAPH_NODES.name: {"id": (("string",), True)},
               GRAPH_EDGES.name: {"source": (("string",), True), "target": (("string",), True),
                               "key": (("string", "integer", "null"), False)}}


def load(folder: Path, strict: bool = True):
    """The graph stored in ``folder`` (empty when absent). Raises StoreCorrupt for a bad line;
    with ``strict`` False a bad line is skipped instead (doctor compares what the files hold with
    the event log before their bad lines are moved aside)."""
    import networkx as nx  # noqa: PLC0415 - heavy (networkx): loaded only when used

    g = nx.MultiDiGraph()
    for name in (GRAPH_NODES.name, GRAPH_EDGES.name):
        path = folder / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    if not line.endswith("\n") and not f.read(1):
                        break  # the last line, cut by a crash during an append: the next append removes it
                    if not strict:
                        continue
                    raise StoreCorrupt(f"{path}:{lineno} is not JSON; the graph file is corrupt"
                                       " (`consolidate doctor --repair` moves bad lines aside)",
                                       path=str(path), line=lineno) from None

                try:
                    check_fields(obj, f"{path}:{lineno}", LINE_FIELDS[name],
                                 fix="`consolidate doctor --repair` moves bad lines aside")
                except StoreCorrupt:
                    if strict:
                        raise
                    continue
                only_if = obj.pop(IF, None)
                if only_if is not None and only_if not in g:
                    continue
                if name == GRAPH_NODES.name:
                    node = obj.pop("id")
                    if obj.pop(KEEP, False) and node in g:
                        continue
                    g.add_node(node, **obj)
                else:
                    g.add_edge(obj.pop("source"), obj.pop("target"), key=obj.pop("key", None), **obj)
    return g


def save(g, folder: Path) -> None:
    """Write the graph to ``folder`` atomically per file (temporary file, fsync, rename)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_lines(folder / GRAPH_NODES.name, ({"id": n, **attrs} for n, attrs in g.nodes(data=True)))
    _write_lines(folder / GRAPH_EDGES.name, ({"source": u, "target": v, "key": k, **attrs}
                                          for u, v, k, attrs in g.edges(keys=True, data=True)))


def _write_lines(path: Path, rows) -> None:

    write_atomic(path, (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows))


def positions(folder: Path) -> dict[str, list[int]]:
    """``{"nodes": [inode, size], "edges": [inode, size]}`` of the graph files ([0, 0] for a file not
    there yet), torn tails cut first: where the next append starts."""
    out = {}
    for kind in ("nodes", "edges"):
        path = folder / _FILES[kind]
        cut_torn_tail(path)
        try:
            st = path.stat()
            out[kind] = [st.st_ino, st.st_size]
        except FileNotFoundError:
            out[kind] = [0, 0]
    return out


#: The free-text fields of a graph line (entity names; a relation's kind is this package's vocabulary).
_FREE_TEXT = ("id", "source", "target", "name", "label", "statement")


#: A graph line's reference to a session or memory node (``session:<id>``, ``mem-<16 hex>``): an
#: identifier, not free text (a session id such as ``mcp-20261202T095135Z-13775`` or ``<uuid>+r1`` is
#: random-looking to the secret gate, which redacted it and left an edge to no node).
_REFERENCE = re.compile(r"session:.*|mem-[0-9a-f]{16}", re.S)


def _free_text_of(row: dict) -> list[str]:
    """The free-text fields of ``row`` (:data:`_FREE_TEXT`), less those holding a node reference."""
    return [f for f in _FREE_TEXT if not (isinstance(row.get(f), str) and _REFERENCE.fullmatch(row[f]))]


def append(folder: Path, nodes: list[dict], edges: list[dict]) -> dict[str, list[int]]:
    """Append node lines (``{"id", ...attrs}``) and edge lines (``{"source", "target", "key",
    ...attrs}``) to the graph files, each file flushed and fsynced; returns :func:`positions` after."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for kind, rows in (("nodes", nodes), ("edges", edges)):
        path = folder / _FILES[kind]
        cut_torn_tail(path)
        if not rows:
            path.touch(exist_ok=True)
            continue
        rows = [gate_fields(row, _free_text_of(row)) for row in rows]  # entity names: consolidate/rules/persisted.py
        data = [json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows]
        # crash tests: the node lines in, the edge lines torn
        append_lines(path, data, "apply:graph:partial" if kind == "edges" else None)
    return positions(folder)


def truncate_to(folder: Path, starts: dict[str, list[int]]) -> None:
    """Cut each graph file back to its recorded start (``positions`` before an append), when it is
    still the same file (same inode) and at least that long: a failed run's appends removed."""
    for kind in ("nodes", "edges"):
        ino, size = (starts.get(kind) or [0, 0])[:2]
        path = folder / _FILES[kind]
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        if (ino == 0 and size == 0) or (st.st_ino == ino and st.st_size >= size):
            with open(path, "rb+") as f:
                f.truncate(size)
                f.flush()
                os.fsync(f.fileno())


def memory_lines(candidate, scope: str) -> tuple[list[dict], list[dict]]:
    """The node and edge lines :func:`add_memory` would add for ``candidate`` (entity nodes with
    ``_keep``, so an entity already there keeps its attributes)."""
    mid = candidate.memory_id
    session = "session:" + candidate.provenance["session_id"]
    nodes = [{"id": mid, "kind": "memory", "type": candidate.type, "status": candidate.status, "scope": scope,
              "statement": candidate.statement[:300],
              # written again after a forget (consolidate/store/views/shown.py: restated): the file
              # recall reads it from here, not from the index
              **({"restates": candidate.provenance["restates"]} if candidate.provenance.get("restates") else {})},
             {"id": session, "kind": "session"}]
    edges = [{"source": mid, "target": session, "key": "derived_from", "kind": "derived_from",
              "run_id": candidate.provenance["run_id"]}]
    for name, kind in extract_entities(candidate.statement + " " + " ".join(candidate.fields.values()),
                                       candidate.entities):
        node = "entity:" + name
        nodes.append({"id": node, "kind": "entity", "entity_kind": kind, "name": name, KEEP: True})
        edges.append({"source": mid, "target": node, "key": "mentions", "kind": "mentions"})
    for n, e in relation_lines(candidate):
        nodes += n
        edges += e
    return nodes, edges


#: The field only relation edges carry: the memory that states the relation.
MEMORY_ID = "memory_id"


def relation_lines(candidate) -> list[tuple[list[dict], list[dict]]]:
    """For each of ``candidate.relations`` (``[source, kind, target]``, consolidate.store.relations.parse),
    the node lines of both entities (``_keep``) and two ``mentions`` edges from the memory, and the
    relation edge ``entity:source -> entity:target`` keyed ``KIND:MEMORY_ID``."""
    mid = candidate.memory_id
    out = []
    for src, kind, dst in getattr(candidate, "relations", None) or []:
        a, b = "entity:" + src, "entity:" + dst
        nodes = [{"id": a, "kind": "entity", "entity_kind": "named", "name": src, KEEP: True},
                 {"id": b, "kind": "entity", "entity_kind": "named", "name": dst, KEEP: True}]
        edges = [{"source": mid, "target": a, "key": "mentions", "kind": "mentions"},
                 {"source": mid, "target": b, "key": "mentions", "kind": "mentions"},
                 {"source": a, "target": b, "key": f"{kind}:{mid}", "kind": kind, MEMORY_ID: mid,
                  "run_id": candidate.provenance.get("run_id")}]
        out.append((nodes, edges))
    return out


#: The relation edges last read, per graph file: ``{path: ((inode, size, mtime_ns), edges)}`` (a
#: long-lived process, the MCP server, reads the file again only when it changed).
_RELATION_CACHE: dict[str, tuple[tuple[int, int, int], list[tuple[str, str, str, str]]]] = {}


def relation_edges(folder: Path) -> list[tuple[str, str, str, str]]:
    """The relation edges of the graph files, ``[(source name, kind, target name, memory id)]``, read
    without building the graph (only the lines naming a ``memory_id`` are parsed, found by a byte
    search; bad lines skipped) and kept while the file is unchanged: what recall follows on every
    query. Whether each memory is still live is the caller's check."""
    path = folder / GRAPH_EDGES.name
    try:
        st = path.stat()
    except FileNotFoundError:
        return []
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _RELATION_CACHE.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    data = path.read_bytes()
    out: list[tuple[str, str, str, str]] = []
    needle = f'"{MEMORY_ID}"'.encode()
    at = data.find(needle)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        at = data.find(needle, end)
        try:
            obj = json.loads(data[start:end])
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        u, v, mid = obj.get("source"), obj.get("target"), obj.get(MEMORY_ID)
        if isinstance(u, str) and isinstance(v, str) and isinstance(mid, str) and u.startswith("entity:") \
                and v.startswith("entity:"):
            out.append((u[len("entity:"):], str(obj.get("kind", "")), v[len("entity:"):], mid))
    _RELATION_CACHE[str(path)] = (stamp, out)
    return out


def relations_of(g, name: str, depth: int = 1, statuses: tuple[str, ...] = LIVE_STATUSES
                 ) -> dict[str, Any]:
    """The relations around the entity ``name`` (compared by consolidate.store.relations.match_key, so
    case and Unicode form do not matter), following relation edges both ways up to ``depth`` hops
    (1..5). Only edges whose memory is in the graph with a status in ``statuses`` count (a forgotten,
    superseded or undone memory's relations are not followed, and an entity only such memories name
    is not found). Returns ``{"entity": name, "found": bool, "relations": [{"source", "relation", "target", "depth", "memory_ids": [...]}],
    "memories": {memory_id: {"statement", "status", "type"}}}``, relations in the order reached."""
    want = match_key(name)
    starts = [n for n, a in g.nodes(data=True) if a.get("kind") == "entity" and match_key(str(a.get("name", ""))) == want]
    # found: named by a memory of ``statuses`` (an entity only a forgotten or superseded memory named
    # is not shown as known)
    named = any(g.nodes[u].get("status", "active") in statuses
                for n in starts for u, _v, kind in g.in_edges(n, data="kind") if kind == "mentions")
    result: dict[str, Any] = {"entity": name, "found": named, "relations": [], "memories": {}}
    seen_nodes = set(starts)
    frontier = list(starts)
    found: dict[tuple[str, str, str], dict] = {}
    for hop in range(1, max(1, min(5, depth)) + 1):
        nxt = []
        for node in frontier:
            for u, v, _k, attrs in [*g.out_edges(node, keys=True, data=True), *g.in_edges(node, keys=True, data=True)]:
                mid = attrs.get(MEMORY_ID)
                if not mid or mid not in g or g.nodes[mid].get("status", "active") not in statuses:
                    continue
                key = (u, attrs.get("kind", ""), v)
                rel = found.get(key)
                if rel is None:
                    rel = found[key] = {"source": g.nodes[u].get("name", u), "relation": attrs.get("kind"),
                                        "target": g.nodes[v].get("name", v), "depth": hop, "memory_ids": []}
                    result["relations"].append(rel)
                if mid not in rel["memory_ids"]:
                    rel["memory_ids"].append(mid)
                    m = g.nodes[mid]
                    result["memories"][mid] = {"statement": m.get("statement", ""), "status": m.get("status"),
                                               "type": m.get("type")}
                other = v if u == node else u
                if other not in seen_nodes:
                    seen_nodes.add(other)
                    nxt.append(other)
        frontier = nxt
    return result


def segment_digest(folder: Path, kind: str, start: int, end: int) -> str:
    """SHA-256 (hex) of bytes ``start``..``end`` of graph file ``kind`` ("nodes" or "edges"): what a run
    appended, so its lines are found again in a copy of the store (another inode, the same bytes)."""
    try:
        with open(folder / _FILES[kind], "rb") as f:
            f.seek(start)
            return hashlib.sha256(f.read(max(0, end - start))).hexdigest()
    except FileNotFoundError:
        return ""


def _still_there(seg: list, ino: int, data: bytes) -> bool:
    """Whether an appended segment ``[inode, start, end(, digest)]`` is still in a file of inode
    ``ino`` and bytes ``data``: the same file, or the same bytes at the same place (a copy: ``cp -a``,
    a backup restored; a fresh tester: undo after a copy reverted the index and not the graph)."""
    seg_ino, start, end = seg[:3]
    if start == end:
        return True
    if len(data) < end:
        return False
    if seg_ino == ino:
        return True
    return len(seg) > 3 and bool(seg[3]) and hashlib.sha256(data[start:end]).hexdigest() == seg[3]


def appended_diffs(folder: Path, segments: dict[str, dict[str, list]]) -> dict[str, dict]:
    """The graph diff of each run from the lines it appended: ``segments`` maps a run id to
    ``{"nodes": [inode, start, end, digest], "edges": [...]}`` (``digest``: :func:`segment_digest`,
    absent in records of earlier versions); returns ``{run_id: {"added_nodes", "changed_nodes",
    "added_edges"}}`` (the shape consolidate.pipeline.undo reverses) for every run whose segments are
    still in the current files (same inode, or the same bytes: :func:`_still_there`), read in one pass
    per file."""
    out: dict[str, dict[str, Any]] = {rid: {"added_nodes": [], "changed_nodes": {}, "added_edges": []}
                                      for rid in segments}
    valid = set(segments)
    files = {}
    for kind in ("nodes", "edges"):
        path = folder / _FILES[kind]
        try:
            files[kind] = (path.stat().st_ino, path.read_bytes())
        except FileNotFoundError:
            files[kind] = (0, b"")
        for rid, seg in segments.items():
            if not _still_there(seg.get(kind) or [0, 0, 0], *files[kind]):
                valid.discard(rid)
    # nodes: state before each segment, then after it
    nodes: dict[str, dict] = {}
    edges: set[tuple] = set()
    for kind in ("nodes", "edges"):
        data = files[kind][1]
        spans = sorted(((seg[kind][1], seg[kind][2], rid) for rid, seg in segments.items()
                        if rid in valid and seg.get(kind) and seg[kind][1] != seg[kind][2]))
        pos, si = 0, 0
        before: dict[str, dict | None] = {}
        for raw in data.splitlines(keepends=True):
            at, pos = pos, pos + len(raw)
            while si < len(spans) and at >= spans[si][1]:
                _close(out[spans[si][2]], kind, before, nodes)
                before, si = {}, si + 1
            inside = si < len(spans) and spans[si][0] <= at < spans[si][1]
            try:
                obj = json.loads(raw)
                check_fields(obj, "", LINE_FIELDS[_FILES[kind]], fix="")
            except (ValueError, StoreCorrupt):
                continue  # a bad line (doctor reports it) is skipped here as one that is not JSON
            only_if = obj.pop(IF, None)
            if only_if is not None and only_if not in nodes:
                continue
            if kind == "nodes":
                node = obj.pop("id", None)
                keep = obj.pop(KEEP, False)
                if inside and node not in before:
                    before[node] = dict(nodes[node]) if node in nodes else None
                if keep and node in nodes:
                    continue
                nodes.setdefault(node, {}).update(obj)
            else:
                key = (obj.get("source"), obj.get("target"), obj.get("key"))
                if inside and key not in edges:
                    out[spans[si][2]]["added_edges"].append(list(key))
                edges.add(key)
        while si < len(spans):
            _close(out[spans[si][2]], kind, before, nodes)
            before, si = {}, si + 1
    return {rid: d for rid, d in out.items() if rid in valid}


def _close(diff: dict, kind: str, before: dict, nodes: dict) -> None:
    if kind != "nodes":
        return
    for node, attrs in before.items():
        if attrs is None:
            diff["added_nodes"].append(node)
        elif nodes.get(node) != attrs:
            diff["changed_nodes"][node] = attrs


def add_memory(g, candidate, scope: str) -> None:
    """Add a memory node, its session node, ``derived_from``, ``mentions`` and relation edges (idempotent:
    edges have deterministic keys, so adding the same memory twice changes nothing)."""
    mid = candidate.memory_id
    session = "session:" + candidate.provenance["session_id"]
    g.add_node(mid, kind="memory", type=candidate.type, status=candidate.status, scope=scope,
               statement=candidate.statement[:300])
    g.add_node(session, kind="session")
    g.add_edge(mid, session, key="derived_from", kind="derived_from", run_id=candidate.provenance["run_id"])
    for name, kind in extract_entities(candidate.statement + " " + " ".join(candidate.fields.values()),
                                       candidate.entities):
        node = "entity:" + name
        if node not in g:
            g.add_node(node, kind="entity", entity_kind=kind, name=name)
        g.add_edge(mid, node, key="mentions", kind="mentions")
    for nodes, edges in relation_lines(candidate):
        for n in nodes:
            n = dict(n)
            node = n.pop("id")
            if n.pop(KEEP, False) and node in g:
                continue
            g.add_node(node, **n)
        for e in edges:
            e = dict(e)
            g.add_edge(e.pop("source"), e.pop("target"), key=e.pop("key"), **e)
