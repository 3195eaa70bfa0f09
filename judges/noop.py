"""The no-op judge: answers nothing, so every maybe is unjudged. The last link of the default chain."""

from __future__ import annotations

from .base import BaseJudge


class NoopJudge(BaseJudge):
    """Answers no note. ``judge()`` returns ``[]`` at once."""

    name = "noop"
    #: answers nothing by design: never counts as a judge that can answer (consolidate/pipeline/deferral.py)
    answers_notes = False
    model = None
    prompt_version = None

    def __init__(self, arg: str | None = None):
        pass

    def judge(self, batch, context, timeout):
        return []

    def available(self):
        return True, "always available (answers nothing: every maybe stays unjudged)"
