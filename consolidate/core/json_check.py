"""Field types of the JSON files a store reads back (``manifest.json``, a workspace's
``workspace.json``, ...): a file edited by hand or by another tool may hold a field of the wrong
type. Checked where the file is read, before anything uses it, so that the answer is one line naming
the file and the field (:class:`~consolidate.core.errors.StoreCorrupt`, exit 4), never a traceback, and
nothing is written on top of the file. Only the standard library (the hook's path reads some).

A spec maps a field (``"embedding.id"`` for a nested one) to ``(kinds, required)``; ``kinds`` is a
tuple of JSON kinds: ``"object"``, ``"array"``, ``"string"``, ``"integer"``, ``"number"``,
``"boolean"``, ``"null"``, or a tuple of allowed string values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consolidate.core.errors import StoreCorrupt

_KINDS = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, kind) -> bool:
    if isinstance(kind, tuple):  # allowed values
        return isinstance(value, str) and value in kind
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _KINDS[kind])


def _describe(kinds) -> str:
    words = []
    for kind in kinds:
        words.append("one of " + ", ".join(kind) if isinstance(kind, tuple) else ("an " if kind[0] in "aeiou" else "a ") + kind)
    return " or ".join(words)


def _found(value: Any) -> str:
    name = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
    shown = repr(value) if isinstance(value, (str, int, float, bool)) else ""
    return name + (f" {shown[:40]}" if shown else "")


def check_fields(data: Any, path: str | Path, spec: dict[str, tuple[tuple, bool]], *, fix: str) -> dict[str, Any]:
    """Return ``data`` when it is a JSON object whose fields match ``spec`` (see the module
    docstring); else raise StoreCorrupt naming ``path`` and the first wrong field, with ``fix``
    (what the user can do) at the end."""
    if not isinstance(data, dict):
        raise StoreCorrupt(f"{path} is corrupt (not a JSON object but {_found(data)}); {fix}", path=str(path))
    for name, (kinds, required) in spec.items():
        parent: Any = data
        *outer, last = name.split(".")
        for part in outer:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue  # the enclosing object is absent (its own spec entry says whether that is allowed)
        if last not in parent:
            if required:
                raise StoreCorrupt(f"{path}: field {name!r} is missing; {fix}", path=str(path), field=name)
            continue
        if not any(_is(parent[last], k) for k in kinds):
            raise StoreCorrupt(f"{path}: field {name!r} should be {_describe(kinds)}, found {_found(parent[last])};"
                               f" {fix}", path=str(path), field=name)
    return data
