"""The judge contract: one method, a batch of notes in, verdicts out.

A judge is any object with ``name`` (str), ``model`` (str or None), ``prompt_version`` (str or None)
and::

    judge(batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[Verdict]

``timeout`` is the time box in seconds (None: no limit). A judge raises a
``consolidate.errors.JudgeError`` subclass when it cannot answer (JudgeUnavailable, JudgeTimeout,
JudgeOutputInvalid); it may answer only part of a batch. Its raw verdicts pass through
:func:`validate_verdicts`, the one place where verdicts are checked: verdicts for unknown ids are
ignored and logged, a second verdict for an id is ignored and logged, a missing id stays unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Protocol

from pydantic import BaseModel, Field, ValidationError, field_validator

MEMORY_TYPES = ("decision", "constraint", "preference", "recipe", "failure", "fact")
EVIDENCE_KINDS = ("user-stated", "observed-success", "observed-failure", "inferred")


@dataclass
class JudgeNote:
    """One note as a judge sees it. ``id`` is a short per-batch id (``n1``, ``n2``, ...), so a model
    cannot invent a real one; ``truncated_from`` is the original length in characters when the
    content was cut for the judge; ``isolated`` says why the note was judged in a batch of its own
    (it looks like an instruction to the judge: judges/injection.py)."""

    id: str
    content: str
    section: str | None = None
    kind: str | None = None
    truncated_from: int | None = None
    isolated: str | None = None


@dataclass
class JudgeContext:
    """What a judge knows besides the batch: the store's ``memory/core.md`` and the project name."""

    core: str = ""
    project: str = "default"


class Verdict(BaseModel):
    """A judge's answer for one note.

    For ``keep``: ``statement`` (a standalone rewrite, readable cold), ``type`` (one of
    MEMORY_TYPES), ``fields`` (the type's required fields besides the statement: decision ``reason``,
    preference ``who``, recipe ``command`` and ``context``, failure ``symptom`` and ``cause``),
    ``evidence``, ``confidence`` (low|medium|high), ``reason`` (why it is worth keeping),
    ``entities`` (files, packages, tools named). For ``drop``: ``reason``."""

    id: str
    verdict: Literal["keep", "drop"]
    statement: Optional[str] = None
    type: Optional[str] = None
    fields: dict[str, str] = Field(default_factory=dict)
    evidence: Optional[str] = None
    confidence: Optional[str] = None
    reason: str = ""
    entities: list[str] = Field(default_factory=list)

    @field_validator("verdict", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("fields", mode="before")
    @classmethod
    def _fields(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, dict):
            return {str(k): str(x) for k, x in v.items() if x not in (None, "")}
        return v

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        return "" if v is None else v


@dataclass
class ValidationReport:
    """What :func:`validate_verdicts` kept and why it ignored the rest."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def missing(self, batch: list[JudgeNote]) -> list[str]:
        """Ids of the batch with no valid verdict."""
        return [n.id for n in batch if n.id not in self.verdicts]


_ID_WRAPPING = " \t\r\n[](){}<>\"'`#,.;:"


def _normalise_id(rid: str, known: set[str]) -> str | None:
    """The batch id a model meant, or None. Small models drop the letter ("1" for "n1"), copy the
    prompt's brackets ("[n1]") or leave punctuation in the string ("2,"): with the wrapping
    characters stripped, an exact known id or a bare number still names one note. Nothing else is
    guessed ("n12" never becomes "n1")."""
    core = rid.strip(_ID_WRAPPING).lower()
    if core in known:
        return core
    if core.isdigit() and f"n{int(core)}" in known:
        return f"n{int(core)}"
    return None


def validate_verdicts(batch: list[JudgeNote], raw: list[Any]) -> ValidationReport:
    """Check a judge's raw verdicts (dicts or Verdicts) against its batch.

    A bare number is read as the batch id it numbers (``"1"`` -> ``"n1"``), and brackets, quotes and
    trailing punctuation around an id are ignored (``"[n2]"``, ``"2,"`` -> ``"n2"``). Unknown ids and second
    verdicts for an id are ignored and reported in ``problems``; a verdict
    that does not validate is ignored (its note stays unjudged by this judge); a keep without a
    statement is ignored the same way. Never raises."""
    report = ValidationReport()
    known = {n.id for n in batch}
    for item in raw or []:
        try:
            v = item if isinstance(item, Verdict) else Verdict.model_validate(item)
        except ValidationError as exc:
            rid = item.get("id") if isinstance(item, dict) else None
            report.problems.append(f"invalid verdict for id {rid!r}: {exc.errors()[0]['msg']}")
            continue
        if v.id not in known:
            rid = _normalise_id(v.id, known)
            if rid is not None:
                v = v.model_copy(update={"id": rid})
        if v.id not in known:
            report.problems.append(f"verdict for unknown id {v.id!r} ignored")
            continue
        if v.id in report.verdicts:
            report.problems.append(f"second verdict for id {v.id!r} ignored")
            continue
        if v.verdict == "keep" and not (v.statement and v.statement.strip()):
            report.problems.append(f"keep without a statement for id {v.id!r} ignored")
            continue
        report.verdicts[v.id] = v
    return report


class Judge(Protocol):
    """What the pipeline calls. See the module docstring for the contract."""

    name: str
    model: str | None
    prompt_version: str | None

    def judge(self, batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[Verdict]:
        ...

    def available(self) -> tuple[bool, str]:
        """(usable now, why) without a model call."""
        ...
