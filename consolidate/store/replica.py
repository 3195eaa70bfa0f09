"""The store's replica: a second copy of its memories somewhere else (a team store on a Chroma server).

The store defines what a replica does for the layers below the team code; ``consolidate.team``
implements it. A caller never checks for ``team.json`` nor imports the team code: it asks
:meth:`consolidate.store.store.Store.replica` (through :func:`load`) and gets an object with these
methods, or None for a store that is not in a team (nothing to pull, push or write)::

    replica = store.replica()
    if replica is not None:
        replica.pull()

The implementation is named by a string in :data:`IMPLEMENTATIONS` and imported only when the store
has a team configuration, as ``consolidate.judges.registry`` loads judges: the one reference from the store to
a layer above it, and a string, so the layers contract (pyproject.toml ``[tool.importlinter]``) holds.
Standard library only (the hook imports this module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol
from consolidate.store.layout import TEAM_JSON

if TYPE_CHECKING:  # typing only: nothing more is imported at hook time
    from consolidate.model.plan import Plan

#: The team configuration in the store folder (written by ``consolidate team init``).
TEAM_FILE = TEAM_JSON.name
#: The one implementation: ``{kind: "module:Class"}``; ``Class(store)`` builds the replica.
IMPLEMENTATIONS = {"team": "consolidate.team.replica:TeamReplica"}


class Replica(Protocol):
    """What the pipeline, undo, maintenance, the hook, MCP and the CLI ask of a store's replica.

    Every method is bounded in time and never raises: a replica that cannot be reached is logged
    and reported in the result, and the local run goes on (what was not pushed waits in the outbox)."""

    def pull(self) -> dict[str, Any] | None:
        """The bounded pull a run does before its contradiction check: the replica's result dict
        (``{"ok": False, "error": str}`` on a failure), None when nothing was pulled."""
        ...

    def push(self) -> dict[str, Any] | None:
        """Push what waits in the outbox (after a run, an undo or a maintenance change): the result
        dict (``{"ok": False, "error": str, "pending": int}`` on a failure), None when nothing waits."""
        ...

    def outbox(self, plan: Plan, writes: list) -> None:
        """Apply's ``outbox`` step: record what the applied ``plan`` (its ``writes``: the candidates
        written) pushes. Idempotent: a replayed step writes the same entry again."""
        ...

    def undo_outbox(self, run_id: str, record: dict, lines: list[dict], removed_edges: list) -> None:
        """``consolidate undo`` of ``run_id``: record what the undo pushes (``record``: the run's undo
        record; ``lines``: the undo's event lines; ``removed_edges``: ``[(source, target, key)]`` of
        the graph edges the undo removed). Written once."""
        ...

    def start_header(self) -> str:
        """SessionStart: a bounded fresh pull (the context rewritten), then one line saying where
        the memories come from ('' when there is nothing to say)."""
        ...

    def recall_line(self) -> str:
        """``recall`` (CLI and MCP): a bounded fresh pull, then where the memories come from ('' for
        a store read from a Chroma server, where there is nothing to pull)."""
        ...


def configured(path: Any) -> bool:
    """Whether the store folder ``path`` (a :class:`pathlib.Path`) has a team configuration."""
    return bool((path / TEAM_FILE).exists())


def load(store: Any) -> Replica | None:
    """The replica of ``store`` (a :class:`consolidate.store.store.Store`): the team implementation
    when the store folder holds ``team.json``, else None (and nothing of the team code is imported).

    Raises ImportError or AttributeError only when the named implementation is not installed (a
    broken installation, never a user's input)."""
    if not configured(store.path):
        return None
    module_name, _, attr = IMPLEMENTATIONS["team"].partition(":")
    replica: Replica = getattr(importlib.import_module(module_name), attr)(store)
    return replica
