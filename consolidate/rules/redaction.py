"""Redaction where text leaves the process: the one net between what the code knows and what a
user, a log or a file is shown.

An error (consolidate.core.errors) carries the text its raiser saw, a setting's bad value or a line
of an env file included: the foundations cannot see the secret gate (a layer above them), and an
error's message is not the place to decide what a terminal may show. So the gate runs where the
text leaves. :func:`error_text` renders an error for a sink, on one line, every secret replaced by
its redacted preview (consolidate.rules.secrets ``redact``: kind, length, at most a provider
prefix); :func:`redacted` does the same for a line already composed. Every function that writes an
error's text somewhere (the CLI's stderr line, the MCP ``ToolError``, the hook's and the team's
logs, the worker's health file, the JSON a command prints, ...) is listed in :data:`SINKS`;
tests/unit/core/test_error_sinks.py drives each one with a secret inside an error and checks that no part of
the secret survives, and checks over the source that every ``except`` clause that writes its
exception's text does so through :func:`error_text` inside a registered sink.

:func:`redact_value` is the last net on every event a plan records (consolidate.model.plan
``Plan.decide``).

The gate is consolidate.rules.persisted's (private spans, then secrets, as for every persisted
text); the secret gate is imported on first use, not with this module: it compiles ~200 rules
(~85 ms), and the hooks import this module on their fast paths where an error is rare.
"""

from __future__ import annotations

from consolidate.rules.persisted import gate, gate_value  # the one gate: the secret gate loads on first use

TYPE_CHECKING = False  # typing is not imported at run time: the SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SINKS", "error_text", "redacted", "redact_value"]

#: Every function that writes an error's text where a person or a file sees it, as ``(where, what
#: it writes)``: ``where`` is ``"module:function"`` (tests/unit/core/test_error_sinks.py drives each one).
SINKS: tuple[tuple[str, str], ...] = (
    ("consolidate.cli.main:report_error", "the CLI's `error: ...` line on stderr (logs/worker.log for a worker)"),
    ("consolidate.cli.main:report_hook_refused", "the `consolidate hook: refused: ...` line on stderr"),
    ("consolidate.cli.parser:OneLineParser.error", "an argument error's line on stderr"),
    ("consolidate.agents.hooks.full:cmd_hook", "logs/hook.log: a hook that failed"),
    ("consolidate.agents.hooks.full:_session_for_start", "logs/hook.log: a SessionStart that could not open its session"),
    ("consolidate.store.worker_health:record", "logs/worker.status.json: a worker's last error"),
    ("consolidate.mcp.server:tool_error", "the MCP ToolError a client is sent, and the server's stderr log"),
    ("consolidate.mcp.stdio:reply_for_bad_line", "the JSON-RPC error reply to a line the transport cannot read"),
    ("consolidate.pipeline.doctor:check", "doctor's findings (printed, --json)"),
    ("consolidate.judges.registry:availability", "`consolidate judges`: why a judge is not available"),
    ("consolidate.ui.pages:error_line", "the error line of a page of `consolidate ui` (a refused form, a damaged store)"),
)


def redacted(text: str) -> str:
    """``text`` with every secret the gate finds replaced by its redacted preview; ``text`` itself
    when there is none; its private spans replaced too (consolidate.rules.persisted ``gate``, the
    one gate of text on its way to a file or a terminal). For a line a sink composed around an error
    (use :func:`error_text` for the error itself). Raises nothing of its own."""
    return gate(text, prefilter=False)


def error_text(exc: BaseException, *, typed: bool = False, limit: int | None = None) -> str:
    """``exc``'s message as a sink may write it: on one line (whitespace folded), every secret
    replaced by its redacted preview, then cut to ``limit`` characters when given (after the
    redaction, so a cut never leaves part of a secret the gate could no longer see). ``typed``
    prefixes the class name (``OSError: ...``, as ``f"{type(exc).__name__}: {exc}"`` did); an empty
    message gives ``""`` untyped."""
    text = redacted(" ".join(str(exc).split()))
    if typed:
        text = f"{type(exc).__name__}: {text}"
    return text if limit is None else text[:limit]


def redact_value(value: Any) -> Any:
    """``value`` (str, list, dict, nested) with every string passed through the gate
    (consolidate.rules.persisted ``gate_value``: private spans and secrets); any other value as it
    is. Raises nothing of its own."""
    return gate_value(value)
