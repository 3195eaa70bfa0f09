"""The check of an answer to the curation prompt (``prompts/curate-v1.md``): a judge reads a group of
related stored memories and answers, per memory, keep, drop (junk), merge (into another member) or
conflict (with another member).

Used by ``consolidate curate`` (consolidate/pipeline/curate/) through the chain
(``JudgeChain.curate``, consolidate/judges/chain.py). The members as a judge sees them
(``CurateMember``, short ids ``m1``, ``m2``, ... so a model cannot name a real memory) and the
group's result (``Curated``) are in consolidate/judges/base.py; the prompt and its answer schema
(``render_curate_prompt``, ``CurateAnswer``) in consolidate/judges/prompting.py with every prompt;
here is the one check of an answer (:func:`validate_curation`).

An answer is taken whole or not at all: an answer naming an id outside the group, a merge into a
non-member (or into itself, or into a member that is itself dropped or merged), a conflict with a
non-member, a second answer for an id, a drop with no reason (a drop is junk, with the reason: the
prompt asks for one; checked here, after parsing, so the schema sent to the model is unchanged) or an
entry that does not validate rejects the whole answer (the group is deferred: nothing changes). A member the answer leaves out is kept.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from consolidate.core.vocab import CONFLICT, CURATE_ACTIONS, DROP, MERGE

class CurateAction(BaseModel):
    """One checked action: ``action`` one of CURATE_ACTIONS; ``into`` (merge) and ``with_``
    (conflict, ``with`` in the answer) name another member; ``reason`` is free text."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    action: Literal[CURATE_ACTIONS]  # type: ignore[valid-type]
    into: Optional[str] = None
    with_: Optional[str] = Field(None, validation_alias=AliasChoices("with", "with_"))
    reason: str = ""

    @field_validator("action", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        return "" if v is None else str(v)[:400]


_ID_WRAPPING = " \t\r\n[](){}<>\"'`#,.;:"


def _member_id(rid: Any, known: set[str]) -> str | None:
    """The group id ``rid`` names (``m2``, ``[m2]``, ``2``), or None."""
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        return None
    core = str(rid).strip(_ID_WRAPPING).lower()
    if core in known:
        return core
    if core.isdigit() and f"m{int(core)}" in known:
        return f"m{int(core)}"
    return None


def validate_curation(ids: list[str], raw: Any) -> tuple[dict[str, CurateAction] | None, list[str]]:
    """Check a judge's raw answer for the group of ``ids``: ``({id: action}, [])`` when it holds
    (members it leaves out are absent: kept), ``(None, problems)`` when anything in it is wrong (see
    the module docstring: the whole answer is rejected). Never raises."""
    known = set(ids)
    if not isinstance(raw, list):
        return None, [f"answer is not a list of actions ({type(raw).__name__})"]
    out: dict[str, CurateAction] = {}
    problems: list[str] = []
    for item in raw:
        try:
            a = CurateAction.model_validate(item)
        except ValidationError as exc:
            rid = item.get("id") if isinstance(item, dict) else None
            problems.append(f"invalid action for id {str(rid)[:40]!r}: {exc.errors()[0]['msg']}")
            continue
        mid = _member_id(a.id, known)
        if mid is None:
            problems.append(f"action for unknown id {a.id[:40]!r}")
        elif mid in out:
            problems.append(f"second action for id {mid!r}")
        else:
            out[mid] = a.model_copy(update={"id": mid, "into": _member_id(a.into, known) if a.into else None,
                                            "with_": _member_id(a.with_, known) if a.with_ else None})
            problems += _target_problem(a, out[mid], mid)
    for mid, a in out.items():
        target = a.into if a.action == MERGE else a.with_ if a.action == CONFLICT else None
        if target is not None and target in out and out[target].action in (DROP, MERGE):
            problems.append(f"{mid} ({a.action}) names {target}, which is itself answered {out[target].action}")
    return (None, problems) if problems else (out, [])


def _target_problem(raw: CurateAction, a: CurateAction, mid: str) -> list[str]:
    """What is wrong with the target of one action (a merge's ``into``, a conflict's ``with``), or
    with a drop that names no reason."""
    if a.action == MERGE:
        if a.into is None:
            return [f"merge of {mid} into {str(raw.into)[:40]!r}: not a member of the group"]
        if a.into == mid:
            return [f"merge of {mid} into itself"]
    if a.action == DROP and not a.reason.strip():
        return [f"drop of {mid} without a reason (a drop is junk, with the reason)"]
    if a.action == CONFLICT:
        if a.with_ is None:
            return [f"conflict of {mid} with {str(raw.with_)[:40]!r}: not a member of the group"]
        if a.with_ == mid:
            return [f"conflict of {mid} with itself"]
    return []
