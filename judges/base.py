"""The judge contract: one method, a batch of notes in, verdicts out.

Every judge is a :class:`BaseJudge` (the built-in ones subclass it; a plug-in may, or may be any
object with a ``judge`` method, which :func:`as_judge` wraps). The contract, with the default of each
optional part (what the chain and the stages read; nothing else is probed)::

    name: str                          "judge"  the name in events, provenance and `consolidate judges`
    model: str | None                  None     the model id, stamped in provenance (judge:NAME:MODEL)
    prompt_version: str | None         None     the judge prompt version, stamped in provenance
    answers_notes: bool                True     False: answers nothing by design (the no-op judge);
                                                such a judge never counts as one that can answer
    api_base: str | None               None     an OpenAI-compatible server the judge calls; the
    api_key: str | None                None     availability check sends GET {api_base}/models there
    usage: dict | None                 None     cumulative {calls, prompt_tokens, completion_tokens,
                                                cost (USD)} across calls, when the judge counts them
    last_call: Mapping                 {}       what the last call spent and how it was parsed
                                                (seconds, prompt_tokens, completion_tokens, cost, ...):
                                                copied into the run's judge.call / judge.failed event

    judge(batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[Verdict | dict]
    compare(pairs: list[tuple[str, Pair]], context, timeout) -> list[dict]   (when can_compare)
    can_compare -> bool                          True when the class overrides compare()
    curate(members: list[CurateMember], context, timeout) -> list[dict]   (when can_curate)
    can_curate -> bool                           True when the class overrides curate()
    available() -> tuple[bool, str]              (usable now, why), without a model call
    missing_keys() -> list[str]                  provider key variables needed and not set

``timeout`` is the time box in seconds (None: no limit). A judge raises a
``consolidate.core.errors.JudgeError`` subclass when it cannot answer (JudgeUnavailable, JudgeTimeout,
JudgeOutputInvalid); it may answer only part of a batch. Its raw verdicts pass through
:func:`validate_verdicts`, the one place where verdicts are checked: verdicts for unknown ids are
ignored and logged, a second verdict for an id is ignored and logged, a missing id stays unjudged.

This module also holds the types the core hands to and gets back from the chain (:class:`Item`,
:class:`Pair`, :class:`Judged`, :class:`ChainResult`), so that the core imports the contract and the
registry, never a concrete judge or the chain's module. The shipped test double is
``consolidate.judges.scripted.ScriptedJudge`` (a judge that answers from a script or a callable, as httpx's
``MockTransport`` answers from a handler).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Optional, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationError, field_validator

from consolidate.core.vocab import VERDICTS

from .litellm_env import missing_provider_keys
from consolidate.core.errors import ConfigError


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
    ``entities`` (files, packages, tools named), ``relations`` (how those entities relate, as the
    judge gave them: checked and normalised by consolidate.store.relations.parse when the keep becomes a
    candidate, so a bad shape is dropped there, never here). For ``drop``: ``reason``."""

    id: str
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]  # Literal["keep", "drop"], from the one copy
    statement: Optional[str] = None
    type: Optional[str] = None
    fields: dict[str, str] = Field(default_factory=dict)
    evidence: Optional[str] = None
    confidence: Optional[str] = None
    reason: str = ""
    entities: list[str] = Field(default_factory=list)
    relations: list[Any] = Field(default_factory=list)

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

    @field_validator("relations", mode="before")
    @classmethod
    def _relations(cls, v: Any) -> Any:
        if v is None:
            return []
        return v if isinstance(v, list) else [v]  # any other shape: kept for parse() to count as dropped

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


@dataclass
class Item:
    """A note to judge, as the core hands it to the chain: ``key`` is the caller's id (the
    session-tier note id, or an index); ``section`` and ``kind`` are shown to the judge."""

    key: int
    content: str
    section: str | None = None
    kind: str | None = None


@dataclass
class Pair:
    """A new statement and an existing memory to compare (the contradiction check); ``key`` is the
    caller's id, ``type`` the memory type of the new statement."""

    key: str
    new: str
    old: str
    type: str


@dataclass
class CurateMember:
    """One stored memory as the curation judge sees it: ``id`` is a per-group id (``m1``, ...);
    ``evidence`` is the evidence the store credits it with (consolidate/model/credit.py);
    ``last_confirmed`` an ISO date or ''."""

    id: str
    statement: str
    type: str = "fact"
    evidence: str = ""
    last_confirmed: str = ""


@dataclass
class Curated:
    """The curation answer for one group: ``actions`` (``{member id:
    consolidate.judges.curating.CurateAction}``, members kept left out)
    and the ``judge`` that gave it, or ``actions`` None (no judge gave a valid answer: the group is
    deferred, ``reasons`` say why); ``events`` are judge-level events for the log."""

    actions: dict[str, Any] | None = None
    judge: str | None = None
    prompt_version: str | None = None
    reasons: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Judged:
    """A valid verdict and who gave it: the judge's ``name``, ``model`` and ``prompt_version``;
    ``truncated_from`` (characters) when the note was cut for the judge; ``isolated`` (why) when it
    was judged apart as instruction-like (judges/injection.py)."""

    verdict: Verdict
    judge: str
    model: str | None
    prompt_version: str | None
    truncated_from: int | None = None
    isolated: str | None = None


@dataclass
class ChainResult:
    """``judged``: key -> Judged; ``unjudged``: key -> reasons (one per judge that failed it, or
    the time box); ``events``: judge-level events for the log (failures, ignored verdicts, calls)."""

    judged: dict[int, Judged] = field(default_factory=dict)
    unjudged: dict[int, list[str]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    judges_used: list[str] = field(default_factory=list)


@runtime_checkable
class Judge(Protocol):
    """The least a judge is: a ``name`` and a ``judge`` method (see the module docstring). Anything
    that has them can be put in a chain; :func:`as_judge` gives it the rest of :class:`BaseJudge`."""

    name: str

    def judge(self, batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[Any]:
        ...


class BaseJudge(ABC):
    """The judge contract with a default for every optional part (the module docstring lists them).

    Subclass it and implement :meth:`judge`; override :meth:`compare` to take part in the
    contradiction check, :meth:`available` to say when the judge cannot run, :meth:`missing_keys`
    when it needs provider keys (as llm's ``Model.needs_key`` / ``key_env_var``). The chain and the
    stages read these attributes and call these methods directly; they probe nothing else."""

    #: the judge's name in events, provenance (``judge:NAME:MODEL``) and ``consolidate judges``
    name: str = "judge"
    #: the model id (None: no model, or not known)
    model: str | None = None
    #: the judge prompt version (``prompts/<version>.md``), stamped in each keeper's provenance
    prompt_version: str | None = None
    #: False for a judge that answers nothing by design (the no-op judge): it never counts as a
    #: judge that can answer (consolidate/pipeline/deferral.py)
    answers_notes: bool = True
    #: base URL of an OpenAI-compatible server the judge calls (``registry.availability`` sends
    #: ``GET {api_base}/models`` there, with ``api_key`` as the bearer token)
    api_base: str | None = None
    api_key: str | None = None
    #: cumulative ``{"calls", "prompt_tokens", "completion_tokens", "cost" (USD)}``, or None when
    #: the judge does not count them
    usage: dict[str, Any] | None = None
    #: what the last call spent and how its answer was read (``seconds``, ``prompt_tokens``,
    #: ``completion_tokens``, ``cost``, ``parsed_from``, ...): copied into the judge.call event
    last_call: Mapping[str, Any] = MappingProxyType({})

    @abstractmethod
    def judge(self, batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[Any]:
        """Verdicts for ``batch`` (Verdicts or dicts with the Verdict fields; checked by
        :func:`validate_verdicts`), within ``timeout`` seconds (None: no limit). May answer part of
        the batch. Raises JudgeUnavailable, JudgeTimeout or JudgeOutputInvalid when it cannot."""

    def compare(self, pairs: list[tuple[str, Pair]], context: JudgeContext, timeout: float | None) -> list[dict]:
        """How each pair ``(pid, Pair)`` relates: ``[{"id": pid, "relation": "duplicate" | "updates"
        | "contradicts" | "unrelated", "reason": str}]``, within ``timeout`` seconds. Raises the same
        errors as :meth:`judge`. The default raises NotImplementedError: a judge that does not
        override it is not asked (``can_compare`` is False)."""
        raise NotImplementedError(f"{self.name} does not compare statements")

    @property
    def can_compare(self) -> bool:
        """Whether the contradiction check may ask this judge (its class overrides :meth:`compare`)."""
        return type(self).compare is not BaseJudge.compare

    def curate(self, members: list, context: JudgeContext, timeout: float | None) -> list[dict]:
        """The curation pass (``consolidate curate``): for a group of stored memories
        (:class:`CurateMember`, ids ``m1``...), raw ``[{"id", "action": "keep" |
        "drop" | "merge" | "conflict", "into", "with", "reason"}]`` (checked by
        ``consolidate.judges.curating.validate_curation``), within ``timeout`` seconds. Raises the same
        errors as :meth:`judge`. The default raises NotImplementedError: a judge that does not override
        it is not asked (``can_curate`` is False)."""
        raise NotImplementedError(f"{self.name} does not curate memories")

    @property
    def can_curate(self) -> bool:
        """Whether the curation pass may ask this judge (its class overrides :meth:`curate`)."""
        return type(self).curate is not BaseJudge.curate

    def available(self) -> tuple[bool, str]:
        """(usable now, why), without a model call. Default: always available."""
        return True, "no availability check (assumed available)"

    def missing_keys(self) -> list[str]:
        """Names of the environment variables holding provider keys this judge needs and cannot
        find (no network). Default: none."""
        return []


def _read_through(attr: str, default: Any) -> property:
    """A property of :class:`_Adapted` that reads ``attr`` from the adapted object when asked."""
    return property(lambda self: getattr(self._inner, attr, default),
                    doc=f"the object's ``{attr}`` (default {default!r})")


class _Adapted(BaseJudge):
    """A judge that does not subclass :class:`BaseJudge` (any object with a ``judge`` method), seen
    through the contract: each optional part is read from the object when asked (so a later change
    of the object shows), with the contract's default when the object lacks it. This is the one
    place where a judge's attributes are probed."""

    def __init__(self, inner: Any, name: str | None = None):
        self._inner = inner
        self._fallback_name = name or type(inner).__name__

    def __getattr__(self, attr: str) -> Any:  # anything else the object has (counters, settings)
        if attr == "_inner":
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    @property
    def name(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "name", None) or self._fallback_name

    model = _read_through("model", None)
    prompt_version = _read_through("prompt_version", None)
    api_base = _read_through("api_base", None)
    api_key = _read_through("api_key", None)

    @property
    def answers_notes(self) -> bool:  # type: ignore[override]
        return bool(getattr(self._inner, "answers_notes", True))

    @property
    def usage(self) -> dict[str, Any] | None:  # type: ignore[override]
        usage = getattr(self._inner, "usage", None)
        return usage if isinstance(usage, dict) else None

    @property
    def last_call(self) -> Mapping[str, Any]:  # type: ignore[override]
        return getattr(self._inner, "last_call", None) or {}

    def judge(self, batch, context, timeout):
        return self._inner.judge(batch, context, timeout)

    def compare(self, pairs, context, timeout):
        return self._inner.compare(pairs, context, timeout)

    @property
    def can_compare(self) -> bool:
        return hasattr(self._inner, "compare")

    def curate(self, members, context, timeout):
        return self._inner.curate(members, context, timeout)

    @property
    def can_curate(self) -> bool:
        return callable(getattr(self._inner, "curate", None))

    def available(self) -> tuple[bool, str]:
        check = getattr(self._inner, "available", None)
        return BaseJudge.available(self) if check is None else check()

    def missing_keys(self) -> list[str]:
        # a plug-in that keeps an ``api_key`` (none given) and a model: litellm's keys for that model
        if hasattr(self._inner, "api_key") and not self.api_key and not self.api_base and self.model:
            return missing_provider_keys(self.model)
        return []


def as_judge(obj: Any, name: str | None = None, *, strict: bool = True) -> BaseJudge:
    """``obj`` itself when it is a :class:`BaseJudge`, else ``obj`` seen through the contract (any
    object with a callable ``judge`` method; ``name`` is its name when it has none). Raises
    ConfigError for anything else when ``strict``; with ``strict=False`` (the chain) any object is
    taken, and a call it cannot answer fails like any judge's bug (a ``judge-error`` event), so an
    object that only compares can still serve the contradiction check."""
    if isinstance(obj, BaseJudge):
        return obj
    if strict and not callable(getattr(obj, "judge", None)):

        raise ConfigError(f"not a judge spec or a judge: {obj!r}", judge=repr(obj)[:80])
    return _Adapted(obj, name)
