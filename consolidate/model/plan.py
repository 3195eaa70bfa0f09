"""The plan: what one consolidation run has decided, before anything is written.

Every stage before ``apply`` receives the plan, reads what it needs, and adds decisions to it; only
``consolidate.pipeline.stages.apply`` writes. A plan is plain data (dataclasses of str/int/float/list/dict), so
it serialises to the journal as JSON and a replay rebuilds it exactly.

Shapes:
- ``Note``: one session-tier row.
- ``Candidate``: a keeper on its way to the long-term store (from a flagged note or a judge's keep).
- ``Reconfirmation``: an existing memory seen again (duplicate) whose ``last_confirmed`` and
  ``confidence`` move up.
- ``Plan.events``: every decision with its reason, in order; ``apply`` appends them to
  ``events/memory-events.jsonl``.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from consolidate.core.dates import iso
from consolidate.core.vocab import CONFIDENCE_LEVELS
from consolidate.rules.persisted import gate_value  # the one gate of persisted text


def initial_confidence(evidence: str) -> str:
    """Starting confidence of a memory from its evidence (docs/design.md#evidence-and-confidence: user-stated and observed
    start ``high``, inferred starts ``low``)."""
    return "low" if evidence == "inferred" else "high"


def inferred_confidence(evidence: str, confidence: str) -> str:
    """A judged keep's confidence after its evidence: ``inferred`` costs one step (a judge's ``high``
    becomes ``medium``, written active; its ``medium`` or ``low`` becomes ``low``, quarantined by the
    write policy until another session confirms it); other evidence keeps the judge's confidence.

    The design first started every inferred memory at ``low`` (docs/design.md, evidence and
    confidence). Measured with capable-model answers over
    eight answer sets of issue 19 (evals of judge-v1..v5 on ../shared/data/labels, three end-to-end
    runs): of the inferred keeps the judge called ``high`` that carry a label, 8 of 8 were labeled
    keep, against 15 of 23 of those it called ``medium``; quarantining the high ones left 2 of the 20
    gold keepers of the judge-v5 end-to-end run out of recall. A hedged note (the only kind the
    prompts let a judge call ``low``) and a note worded as an instruction to the judge (quarantined by
    the write policy whatever its confidence) stay quarantined."""
    return step_confidence(confidence, -1) if evidence == "inferred" else confidence


def step_confidence(confidence: str, steps: int) -> str:
    """Move ``confidence`` ``steps`` levels up (positive) or down (negative), clamped to low..high."""
    i = CONFIDENCE_LEVELS.index(confidence) if confidence in CONFIDENCE_LEVELS else 0
    return CONFIDENCE_LEVELS[max(0, min(len(CONFIDENCE_LEVELS) - 1, i + steps))]


@dataclass
class Note:
    """One row of the session tier. ``created_at`` and ``expires_at`` are Unix seconds."""

    id: int
    session_id: str
    content: str
    flag: bool = False
    kind: str | None = None
    created_at: float = 0.0
    expires_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Candidate:
    """A keeper on its way to the long-term store.

    ``fields`` holds the type's required fields besides the statement (``reason`` for a decision,
    ``who`` for a preference, ``command``/``context`` for a recipe, ``symptom``/``cause`` for a
    failure). ``status`` is ``active``, ``quarantined`` or ``disputed``; ``tier`` is ``durable`` or
    ``transient``. ``outcome`` is filled by the later stages: ``write``, ``rejected``,
    ``duplicate`` (re-confirms ``duplicate_of``); only ``write`` reaches the store. ``isolated``
    says why the judge saw the note apart (worded as an instruction to the judge,
    judges/injection.py): such a keeper is quarantined and confirms nothing. ``anchors`` are the
    files and symbols of the project it names, with their content hashes (consolidate.store.anchors).
    ``relations`` are how its entities relate, ``[[source, kind, target]]`` with kind from
    consolidate.core.vocab.ENTITY_RELATIONS (written as entity -> entity graph edges).
    """

    note_ids: list[int]
    statement: str
    type: str
    source: str
    evidence: str
    confidence: str
    reason: str
    fields: dict[str, str] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    relations: list[list[str]] = field(default_factory=list)
    status: str = "active"
    tier: str = "durable"
    outcome: str = "write"
    outcome_reason: str = ""
    duplicate_of: str | None = None
    memory_id: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    last_confirmed: str | None = None
    embedding: list[float] | None = None
    isolated: str | None = None
    anchors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        """True while no later stage has taken the candidate out of the write set."""
        return self.outcome == "write"


@dataclass
class Reconfirmation:
    """An existing memory observed again: ``confidence`` and ``last_confirmed`` (ISO date) to set,
    ``status`` to set (a quarantined entry seen in another session is promoted to ``active``)."""

    memory_id: str
    confidence: str
    last_confirmed: str
    status: str
    session_id: str
    note_ids: list[int]


@dataclass
class MemoryUpdate:
    """A change to an existing memory decided by a stage or by batch maintenance.

    ``action``: ``update`` (merge ``changes`` into its metadata), ``archive`` (copy to
    ``archive/<id>.json``, then remove from the recall index and mark the graph node), or
    ``tombstone`` (archive, and never let a later write bring the id back). ``event`` and ``reason``
    go to the event log."""

    memory_id: str
    action: str
    changes: dict[str, Any] = field(default_factory=dict)
    event: str = "memory.updated"
    reason: str = ""
    edges: list[list[str]] = field(default_factory=list)


@dataclass
class Plan:
    """Everything one run decided. Times are Unix seconds; ``deadline`` is absolute."""

    session_id: str
    outcome: str = "success"
    reason: str | None = None
    run_id: str = field(default_factory=lambda: "run-" + uuid.uuid4().hex[:12])
    started_at: float = field(default_factory=time.time)
    deadline: float | None = None
    scope: str = "default"
    note_count: int = 0
    notes: list[Note] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    reconfirmations: list[Reconfirmation] = field(default_factory=list)
    updates: list[MemoryUpdate] = field(default_factory=list)
    delete_note_ids: list[int] = field(default_factory=list)
    note_status: dict[int, str] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    judges_used: list[str] = field(default_factory=list)
    finished: bool = False
    #: notes left waiting for a judge: ``{"note_id", "since", "until", "reasons", "attempts"}``
    #: (Unix seconds; consolidate/pipeline/deferral.py)
    waiting: list[dict[str, Any]] = field(default_factory=list)
    #: the notes files the session recorded: ``{source_file: [note digest, ...]}`` (consolidate/model/notes_files.py)
    notes_files: dict[str, list[str]] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """True when the run left notes waiting for a judge."""
        return bool(self.waiting)

    def decide(self, event: str, *, note_ids: list[int] | None = None, reason: str = "", **detail) -> dict:
        """Add one decision (an event with its reason) to the plan and return it."""
        detail = gate_value(detail)  # the last net: no event carries a secret or a private span
        reason = gate_value(reason)
        record: dict[str, Any] = {"event": event, "run_id": self.run_id, "session_id": self.session_id}
        if note_ids is not None:
            record["note_ids"] = list(note_ids)
        if reason:
            record["reason"] = reason
        record.update({k: v for k, v in detail.items() if v is not None})
        record["seq"] = len(self.events)
        self.events.append(record)
        return record

    def live_notes(self, *statuses: str) -> list[Note]:
        """Notes whose status is one of ``statuses`` (a note without a status is ``"live"``)."""
        return [n for n in self.notes if self.note_status.get(n.id, "live") in statuses]

    def note(self, note_id: int) -> Note:
        """The note with ``note_id``; KeyError if the plan does not hold it."""
        for n in self.notes:
            if n.id == note_id:
                return n
        raise KeyError(note_id)

    def time_left(self, now: float | None = None) -> float | None:
        """Seconds until the deadline (never negative), or None when the run has no deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - (time.time() if now is None else now))

    def writes(self) -> list[Candidate]:
        """Candidates that will be written (durable or transient)."""
        return [c for c in self.candidates if c.pending]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (for the journal and ``--dry-run --json``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Plan":
        """Rebuild a plan written by :meth:`to_dict`."""
        data = dict(data)
        data["notes"] = [Note(**n) for n in data.get("notes", [])]
        data["candidates"] = [Candidate(**c) for c in data.get("candidates", [])]
        data["reconfirmations"] = [Reconfirmation(**r) for r in data.get("reconfirmations", [])]
        data["updates"] = [MemoryUpdate(**u) for u in data.get("updates", [])]
        data["note_status"] = {int(k): v for k, v in data.get("note_status", {}).items()}
        return cls(**data)

    def summary(self) -> dict[str, int]:
        """Counts of what the run decided, by event type."""
        counts: dict[str, int] = {}
        for e in self.events:
            counts[e["event"]] = counts.get(e["event"], 0) + len(e.get("note_ids") or [None])
        return counts


def run_summary(plan) -> dict:
    """What a run did, as counts: notes in, and each outcome (the queue row's result, the event log's
    ``run.applied`` summary, the CLI's and the worker's lines)."""
    status_counts: dict[str, int] = {}
    for s in plan.note_status.values():
        status_counts[s] = status_counts.get(s, 0) + 1
    writes = plan.writes()
    return {
        "notes": plan.note_count,
        **{f"notes_{k}": v for k, v in sorted(status_counts.items())},
        "written_durable": sum(1 for c in writes if c.tier == "durable" and c.status == "active"),
        "written_quarantined": sum(1 for c in writes if c.tier == "durable" and c.status == "quarantined"),
        "written_transient": sum(1 for c in writes if c.tier == "transient"),
        "written_disputed": sum(1 for c in writes if c.tier == "durable" and c.status == "disputed"),
        "rejected": sum(1 for c in plan.candidates if c.outcome == "rejected"),
        "reconfirmed": len(plan.reconfirmations),
        **({"withdrawn": n} if (n := sum(u.event == "memory.withdrawn" for u in plan.updates)) else {}),
        "judges": plan.judges_used,
        **_partial_summary(plan),
        **_judge_problems(plan),
    }


def _judge_problems(plan) -> dict:
    """``judge_problems``: the answers the judge chain ignored (``judge.output_problems`` events:
    verdicts for ids not in the batch, second or invalid answers), ``"judge: problem"``, at most 20;
    ``judge_problems_total`` their count. Empty for a run without any."""
    problems = [f"{e.get('judge')}: {p}" for e in plan.events if e["event"] == "judge.output_problems"
                for p in e.get("problems") or []]
    return {"judge_problems": problems[:20], "judge_problems_total": len(problems)} if problems else {}


def _partial_summary(plan) -> dict:
    """``partial`` (notes were left waiting for a judge), ``waiting`` (how many) and, when partial,
    ``waiting_until`` (the earliest bound, ISO UTC)."""
    out: dict = {"partial": bool(plan.waiting), "waiting": len(plan.waiting)}
    if plan.waiting:
        out["waiting_until"] = iso(min(w["until"] for w in plan.waiting))
    return out
