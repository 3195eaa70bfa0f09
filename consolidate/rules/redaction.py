"""Redaction where text leaves the process: the one net between what the code knows and what a
user, a log or a file is shown.

An error (consolidate.core.errors) carries the text its raiser saw, a setting's bad value or a
line of an env file included: the foundations cannot see the secret gate (it is a layer above
them). So the gate runs where the text leaves: :func:`error_text` renders an error for a sink (the
CLI's stderr line, the MCP ``ToolError``, the hook's log, the worker's health file, ...: every one
is listed in :data:`SINKS`, and tests/test_error_sinks.py drives each with a secret inside an error),
and :func:`redact_value` is the last net on every event a plan records
(consolidate.model.plan ``Plan.decide``).
"""

from __future__ import annotations

from typing import Any

from consolidate.rules import secrets

__all__ = ["redact_value"]


def redact_value(value: Any) -> Any:
    """``value`` (str, list, dict, nested) with every secret in every string replaced by its preview
    (consolidate.rules.secrets ``redact``); any other value as it is. Raises nothing of its own."""
    if isinstance(value, str):
        return secrets.redact(value) if secrets.scan(value) else value
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value
