"""The scripted judge: a test double that answers from a script, with no model.

Shipped with the package beside the judge contract (judges/base.py), as httpx ships ``MockTransport``
beside ``BaseTransport``, so that users can test their own hooks, configurations and judge plug-ins
offline::

    from consolidate.judges import ScriptedJudge
    from consolidate import run_queue

    keep = {"verdict": "keep", "statement": "Use pnpm", "type": "decision", "reason": "stated"}
    run_queue(store, judges=[ScriptedJudge({"pnpm": keep}, default={"verdict": "drop"})])
    run_queue(store, judges=[ScriptedJudge(handler=lambda batch, context: [])])  # answers nothing
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from consolidate.core.errors import ConfigError, JudgeOutputInvalid, JudgeTimeout, JudgeUnavailable

from .base import BaseJudge


class ScriptedJudge(BaseJudge):
    """Answers each note from a rule.

    ``script`` is one of:
    - a callable ``(JudgeNote) -> dict | None`` (a verdict dict without ``id``, or None for no answer);
    - a dict ``{content substring: verdict dict}`` (the first substring found in the note wins);
    - a path to a JSON file holding such a dict (the ``scripted:PATH`` judge spec).
    Notes the script does not answer get ``default`` (a verdict dict, or None: no answer).

    ``handler``, when given, answers whole batches instead: ``(batch: list[JudgeNote], context:
    JudgeContext) -> list`` of raw verdicts (dicts with ``id``, as a model's answer; they are
    checked by the chain like any judge's), or it raises (a JudgeError, or anything: a plug-in's
    bug). It sees the time box only through ``latency``.

    ``fail`` makes every call raise: ``"unavailable"``, ``"timeout"`` or ``"invalid"``; ``latency``
    sleeps that many seconds per call (bounded by the time box, then JudgeTimeout). ``calls`` counts
    calls and ``batches`` records the ids of each batch. ``relations`` answers the contradiction
    check (see :meth:`compare`), ``curations`` the curation pass (see :meth:`curate`)."""

    prompt_version = "scripted"

    def __init__(self, script: Any = None, *, default: dict | None = None, name: str = "scripted",
                 model: str | None = "script", fail: str | None = None, latency: float = 0.0,
                 relations: Any = None, handler: Any = None, curations: Any = None):
        if isinstance(script, (str, Path)):
            try:
                script = json.loads(Path(script).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"scripted judge: cannot read script {script}: {exc}") from None
        self.script = script or {}
        self.default = default
        self.name = name
        self.model = model
        self.fail = fail
        self.latency = latency
        self.relations = relations or {}
        self.handler = handler
        self.curations = curations
        self.calls = 0
        self.batches: list[list[str]] = []

    def _answer(self, note) -> dict | None:
        if callable(self.script):
            return self.script(note)
        for needle, verdict in self.script.items():
            if needle in note.content:
                return verdict
        return self.default

    def judge(self, batch, context, timeout):
        self.calls += 1
        self.batches.append([n.id for n in batch])
        if self.latency:
            if timeout is not None and self.latency > timeout:
                time.sleep(max(0.0, timeout))
                raise JudgeTimeout(f"{self.name}: no answer within {timeout:.1f} s", judge=self.name, seconds=timeout)
            time.sleep(self.latency)
        if self.fail == "unavailable":
            raise JudgeUnavailable(f"{self.name}: scripted outage", judge=self.name)
        if self.fail == "timeout":
            raise JudgeTimeout(f"{self.name}: scripted timeout", judge=self.name, seconds=timeout)
        if self.fail == "invalid":
            raise JudgeOutputInvalid(f"{self.name}: scripted garbage", judge=self.name)
        if self.handler is not None:
            return self.handler(batch, context)
        out = []
        for note in batch:
            answer = self._answer(note)
            if answer is not None:
                out.append({"id": note.id, **answer})
        return out

    def compare(self, pairs, context, timeout):
        """Answer contradiction pairs ``[(pid, Pair)]`` from ``relations``: a callable ``(Pair) ->
        relation | None`` or a dict ``{substring of the new statement: relation}``."""
        self.calls += 1
        if self.fail:
            return self.judge([], context, timeout)
        out = []
        for pid, pair in pairs:
            rel = None
            if callable(self.relations):
                rel = self.relations(pair)
            else:
                rel = next((r for needle, r in self.relations.items() if needle in pair.new), None)
            if rel is not None:
                out.append({"id": pid, "relation": rel})
        return out

    def curate(self, members, context, timeout):
        """Answer a curation group (``[CurateMember]``) from ``curations``: a callable ``(members) ->
        list`` of raw actions (dicts with ``id``, as a model's answer), or a dict ``{substring of a
        statement: action dict}`` (the first substring found wins; an ``into`` or ``with`` that is no
        member id names the first other member whose statement holds it). A member no entry
        matches is not answered (kept). ``fail`` makes the call raise as :meth:`judge` does."""
        if self.fail:
            return self.judge([], context, timeout)  # counts the call
        self.calls += 1
        self.batches.append([m.id for m in members])
        if callable(self.curations):
            return self.curations(members)
        out = []
        for m in members:
            answer = next((dict(a) for needle, a in (self.curations or {}).items() if needle in m.statement), None)
            if answer is None:
                continue
            for key in ("into", "with"):
                if key in answer and answer[key] not in {x.id for x in members}:
                    answer[key] = next((x.id for x in members if x.id != m.id and answer[key] in x.statement),
                                       answer[key])
            out.append({"id": m.id, **answer})
        return out

    def available(self) -> tuple[bool, str]:
        return True, "test double"
