"""Judge plug-ins for consolidate: the contract (``judges.base``), the registry and the fail-soft
chain (``judges.chain``), and the built-in judges: ``noop``, ``scripted`` (test double), ``rules``
(opt-in heuristics) and ``api`` (litellm + instructor)."""

from .base import JudgeContext, JudgeNote, Verdict, validate_verdicts

__all__ = ["JudgeContext", "JudgeNote", "Verdict", "validate_verdicts"]
