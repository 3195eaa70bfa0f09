"""Judge plug-ins for consolidate: the contract (``consolidate.judges.base``: :class:`BaseJudge` and the types it
takes and gives), the registry and the fail-soft chain (``consolidate.judges.chain``), the prompts every judge
kind sends (``consolidate.judges.prompting``), and the built-in judges: ``noop``, ``scripted`` (the shipped test
double, :class:`ScriptedJudge`), ``rules`` (opt-in heuristics), ``api`` (litellm + instructor) and
``cli`` (a local CLI, live or from a cassette). Importing this package imports no model library."""

from .base import BaseJudge, Judge, JudgeContext, JudgeNote, Verdict, as_judge, validate_verdicts
from .scripted import ScriptedJudge

__all__ = ["BaseJudge", "Judge", "JudgeContext", "JudgeNote", "ScriptedJudge", "Verdict", "as_judge",
           "validate_verdicts"]
