"""The pipeline's stages, one module each, in the order of docs/design.md#the-pipeline, and the two lists
the pipeline runs.

Every stage is ``stage(plan, ctx) -> plan``: it reads (the session tier, the long-term tier, the
judges), decides, and adds decisions to the plan. Only ``apply`` writes.

A :class:`Stage` names one step of a run: its ``name`` (the key of ``plan.stage_seconds``), its
function, whether it runs under the store lock (``locked``) and whether it writes (``writes``: left
out of a dry run). :data:`SESSION` is the run of a successful session, :data:`FAILURE` the run of a
failed one; ``consolidate.pipeline.run`` runs a list in order, the unlocked stages first, then the
locked ones under one hold of the store lock. Each stage's function looks its module's ``run`` up
when the stage runs, so a wrapped or patched ``run`` is what runs; the stages that load the judges
(pydantic) import their module then, so an empty session imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from consolidate.pipeline.stages import apply, count, flag_promote, provenance, purge, secret_gate, withdrawn, write_policy


@dataclass(frozen=True)
class Stage:
    """One step of a run: ``run(plan, ctx)`` adds decisions to the plan (``ctx`` is
    ``consolidate.pipeline.run.RunContext``). ``locked``: runs under the store lock, after every
    unlocked stage of its list (the read-check-write section). ``writes``: the stage writes the
    store, so a dry run leaves it out."""

    name: str
    run: Callable[[Any, Any], Any]
    locked: bool = False
    writes: bool = False


def _count(plan, ctx):
    """How many notes the session has (``plan.note_count``); an empty session stops here."""
    return count.run(plan, ctx)


def _purge(plan, ctx):
    """Expired notes leave the plan (quarantine past its time to live: ``expire``, after ``embed``)."""
    return purge.run(plan, ctx)


def _secret_gate(plan, ctx):
    """Notes holding a secret are blocked (kept redacted); nothing holding one is judged or written."""
    return secret_gate.run(plan, ctx)


def _flag_promote(plan, ctx):
    """Notes the agent flagged become candidates without a judge."""
    return flag_promote.run(plan, ctx)


def _judge(plan, ctx):
    """The judge chain decides the other notes within the run's time box."""
    from consolidate.pipeline.stages.judge import run  # noqa: PLC0415 - pydantic (the judges): an empty session imports nothing heavy

    return run(plan, ctx)


def _write_policy(plan, ctx):
    """Which candidates may be written, and to which tier and status."""
    return write_policy.run(plan, ctx)


def _embed(plan, ctx):
    """The durable keepers are embedded, outside the store lock (concurrent runs embed in parallel)."""
    from consolidate.pipeline.stages.contradiction import embed_keepers  # noqa: PLC0415 - pydantic (the judges): an empty session imports nothing heavy

    return embed_keepers(plan, ctx)


def _release_model(plan, ctx):
    """The worker's run frees the embedding model before the index is first read (one process never
    holds both: Store.release_embedder); other runs keep it."""
    if ctx.release_model:
        ctx.store.release_embedder()
    return plan


def _expire(plan, ctx):
    """Quarantine past its time to live expires (purge's read of the index, the run's first)."""
    return purge.expire(plan, ctx)


def _contradiction(plan, ctx):
    """Keepers compared with the store: duplicates re-confirm, contradictions quarantine or supersede."""
    from consolidate.pipeline.stages.contradiction import run  # noqa: PLC0415 - pydantic (the judges): an empty session imports nothing heavy

    return run(plan, ctx)


def _provenance(plan, ctx):
    """Each write gets its provenance stamp and its deterministic memory id."""
    return provenance.run(plan, ctx)


def _withdrawn(plan, ctx):
    """Memories whose notes their notes file no longer holds are withdrawn (archived, ``expired``)."""
    return withdrawn.run(plan, ctx)


def _failure_link(plan, ctx):
    """A failed session weakens the memories its notes link to; it promotes nothing."""
    from consolidate.pipeline.stages.failure_link import run  # noqa: PLC0415 - pydantic (the judges): an empty session imports nothing heavy

    return run(plan, ctx)


def _apply(plan, ctx):
    """The only writer: journal first, then index, graph, event log, files and session rows."""
    return apply.run(plan, ctx)


COUNT = Stage("count", _count)
APPLY = Stage("apply", _apply, locked=True, writes=True)
#: The stages of a successful session after ``count``, in order.
SESSION: tuple[Stage, ...] = (
    Stage("purge", _purge),
    Stage("secret_gate", _secret_gate),
    Stage("flag_promote", _flag_promote),
    Stage("judge", _judge),
    Stage("write_policy", _write_policy),
    Stage("embed", _embed),
    Stage("release_model", _release_model),
    Stage("expire", _expire),
    Stage("contradiction", _contradiction, locked=True),
    Stage("provenance", _provenance, locked=True),
    Stage("withdrawn", _withdrawn, locked=True),
    APPLY,
)
#: The stages of a failed session that has notes (one without notes runs ``APPLY`` alone): its
#: kept notes are redacted in place by apply; it promotes nothing.
FAILURE: tuple[Stage, ...] = (
    Stage("secret_gate", _secret_gate),
    Stage("failure_link", _failure_link),
    APPLY,
)
#: The names of the stages that are a module of this package with a ``run`` function, in order
#: (benchmarks wrap them by name).
ORDER = ("count", "purge", "secret_gate", "flag_promote", "judge", "write_policy", "contradiction",
         "provenance", "withdrawn", "apply")
