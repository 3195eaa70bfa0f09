"""Relations between entities: the closed vocabulary and the one parser of a judge's ``relations``.

A judge's keep may say how the entities it names relate (prompt ``judge-v9``):
``relations: [{"source": "analytics", "relation": "depends_on", "target": "ledgerkit"}]``. The judge
does the understanding, in any wording or language; this module only checks and normalises what it
gets, and apply writes each relation as a graph edge ``entity:SOURCE -> entity:TARGET`` (key
``RELATION:MEMORY_ID``, with the memory and run as provenance: consolidate/store/graph.py).

The vocabulary (``consolidate.core.vocab.ENTITY_RELATIONS``, other spellings in ``RELATION_ALIASES``) is small and closed, so that ``consolidate graph`` and recall can
follow edges without guessing what a kind means:

- ``depends_on``: SOURCE needs TARGET to build or run (a package, a service, a module);
- ``uses``: SOURCE uses TARGET as a tool or library, without needing it to exist;
- ``part_of``: SOURCE is a component, module or file of TARGET;
- ``replaces``: SOURCE replaces TARGET (a migration: TARGET is the old one);
- ``conflicts_with``: SOURCE and TARGET cannot be used together.

Memory -> memory ``supersedes`` edges are not relations of this vocabulary: the contradiction stage,
review and maintenance write them with the status change (consolidate/pipeline/stages/provenance.py).

Parsing is lenient (:func:`parse`): a relation may be a dict (``source``/``relation``/``target``,
also ``from``/``type``/``to``) or a list ``[source, relation, target]``; a relation kind is read
case- and separator-blind (``Depends-On``, ``depends on`` -> ``depends_on``) with a few aliases
(``requires`` -> ``depends_on``); anything else is dropped with a counted reason, never raised.
"""

from __future__ import annotations

import re
from typing import Any

from consolidate.core.normal import fold, name_key, nfc
from consolidate.core.vocab import ENTITY_RELATIONS, RELATION_ALIASES

#: The most relations kept per memory (a judge listing more is cut, the rest counted as dropped).
MAX_PER_MEMORY = 10
#: The longest entity name kept (characters), as consolidate.store.graph.extract_entities cuts a judge's entities.
MAX_NAME = 100


def entity_name(value: Any) -> str:
    """An entity name as the graph keeps it: NFC, whitespace runs collapsed to one space, at most
    MAX_NAME characters ('' for a value that is no string or holds nothing)."""
    if not isinstance(value, str):
        return ""
    return " ".join(nfc(value).split())[:MAX_NAME]


def match_key(name: str) -> str:
    """The form two entity names are compared in (``consolidate graph NAME``, recall's query match):
    consolidate.core.normal.name_key (invisible characters removed, fullwidth forms and ligatures folded, case-folded, whitespace
    collapsed)."""
    return name_key(name)


def _kind_key(value: str) -> str:
    return re.sub(r"[\s\-]+", "_", fold(value).strip())


def relation_kind(value: Any) -> str | None:
    """The vocabulary kind ``value`` names, or None."""
    if not isinstance(value, str):
        return None
    key = _kind_key(value)
    key = RELATION_ALIASES.get(key, key)
    return key if key in ENTITY_RELATIONS else None


def parse(raw: Any) -> tuple[list[list[str]], dict[str, int]]:
    """The relations of one keep: ``([[source, kind, target], ...], {reason: count dropped})``.

    ``raw`` is what the judge gave (None, a list of dicts or of 3-item lists, or anything else);
    names are normalised by :func:`entity_name`, repeats and self-relations dropped. Never raises."""
    dropped: dict[str, int] = {}

    def drop(reason: str) -> None:
        dropped[reason] = dropped.get(reason, 0) + 1

    if raw is None:
        return [], dropped
    if isinstance(raw, dict) and any(k in raw for k in ("source", "from", "relation")):
        raw = [raw]  # one relation given bare
    if not isinstance(raw, list):
        drop("not a list")
        return [], dropped
    out: list[list[str]] = []
    for item in raw:
        if isinstance(item, dict):
            src = item.get("source", item.get("from", item.get("subject")))
            kind = item.get("relation", item.get("type", item.get("kind", item.get("predicate"))))
            dst = item.get("target", item.get("to", item.get("object")))
        elif isinstance(item, (list, tuple)) and len(item) == 3:
            src, kind, dst = item
        else:
            drop("bad shape")
            continue
        rel = relation_kind(kind)
        if rel is None:
            drop("unknown relation")
            continue
        s, t = entity_name(src), entity_name(dst)
        if not s or not t:
            drop("missing entity")
            continue
        if match_key(s) == match_key(t):
            drop("self relation")
            continue
        triple = [s, rel, t]
        if triple in out:
            drop("repeated")
            continue
        if len(out) >= MAX_PER_MEMORY:
            drop("too many")
            continue
        out.append(triple)
    return out, dropped
