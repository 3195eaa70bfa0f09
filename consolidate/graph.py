"""The memory graph: a networkx MultiDiGraph persisted as ``graph/nodes.jsonl`` and
``graph/edges.jsonl``.

Nodes carry ``kind``: ``memory`` (id = memory id), ``session`` (id ``session:<id>``), ``entity``
(id ``entity:<name>``, with ``entity_kind`` file|package|tool). Edges carry ``kind``:
``derived_from`` (memory -> session), ``mentions`` (memory -> entity); later also ``supersedes``,
``disputes``, ``depends_on``. Saving writes each file to a temporary file and renames it, so a
crash leaves the old graph or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .errors import StoreCorrupt

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


def load(folder: Path):
    """The graph stored in ``folder`` (empty when absent). Raises StoreCorrupt for a bad line."""
    import networkx as nx

    g = nx.MultiDiGraph()
    for name in ("nodes.jsonl", "edges.jsonl"):
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
                    raise StoreCorrupt(f"{path}:{lineno} is not JSON; the graph file is corrupt"
                                       " (`consolidate doctor --repair` moves bad lines aside)",
                                       path=str(path), line=lineno) from None
                if name == "nodes.jsonl":
                    node = obj.pop("id")
                    g.add_node(node, **obj)
                else:
                    g.add_edge(obj.pop("source"), obj.pop("target"), key=obj.pop("key", None), **obj)
    return g


def save(g, folder: Path) -> None:
    """Write the graph to ``folder`` atomically per file (temporary file, fsync, rename)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_lines(folder / "nodes.jsonl", ({"id": n, **attrs} for n, attrs in g.nodes(data=True)))
    _write_lines(folder / "edges.jsonl", ({"source": u, "target": v, "key": k, **attrs}
                                          for u, v, k, attrs in g.edges(keys=True, data=True)))


def _write_lines(path: Path, rows) -> None:
    from .private import private_file

    tmp = path.with_name(path.name + ".tmp")
    with private_file(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def add_memory(g, candidate, scope: str) -> None:
    """Add a memory node, its session node, ``derived_from`` and ``mentions`` edges (idempotent:
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
