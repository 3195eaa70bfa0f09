"""The secret gate at write: a note is stored with its secrets redacted (CLI ``note``/``import``,
MCP ``note``, the hook's harvest, the Python API), and a text in which the gate can find nothing is
not scanned, so that an ordinary note costs no import of the gate (consolidate.rules.secrets).

The session tier (consolidate/store/sessions/tier.py) calls :func:`secret_gate_at_write` on each
note it writes and :func:`redaction_notice` for the line it tells the writer; the hook's harvest
uses :func:`worth_scanning` as its prefilter (consolidate.rules.persisted's, the one prefilter of
the gate of persisted text, which also scans a text's NFC form). The consolidation's gate
(consolidate/pipeline/stages/secret_gate.py) scans every note again and blocks one marked
:data:`REDACTED_KEY`. Standard library only at import, and consolidate.rules.persisted (the hook imports this module).
"""

from __future__ import annotations

from typing import Any

from consolidate.rules import persisted  # the gate of persisted text: the secret gate loads on first use
# the one write-time prefilter (consolidate/rules/persisted.py); harvest and tests import it from here too
from consolidate.rules.persisted import worth_scanning
from consolidate.rules.private_spans import strip

#: Note metadata key set when the secret gate redacted the note at write time: ``{"kinds": [...],
#: "previews": [...]}``. The consolidation's secret gate blocks such a note (consolidate/pipeline/stages/secret_gate.py).
REDACTED_KEY = "secret_redacted"


def secret_gate_at_write(content: str, metadata: dict[str, Any] | None) -> tuple[str, dict[str, Any], dict | None]:
    """The secret gate, run when a note is written (CLI ``note``/``import``, MCP ``note``, hook harvest,
    Python API): returns ``(content, metadata, redaction)`` with every secret in the content and in the
    metadata's strings replaced by its preview (``consolidate.rules.secrets.redact``), and ``redaction`` =
    ``{"kinds": [...], "previews": [...]}`` (also stored under :data:`REDACTED_KEY` in the metadata),
    or None when the note is clean. Text that cannot hold a secret (:func:`worth_scanning`) is not
    scanned, so a plain note costs no import of the gate."""
    metadata = dict(metadata or {})
    texts = [(None, content), *_strings(metadata)]
    if not any(worth_scanning(t) for _, t in texts):
        return content, metadata, None
    # as written, or in NFC; a metadata value read with its field's name (consolidate/rules/persisted.py)
    found = [f for key, t in texts for f in persisted.findings(t, key=key)]
    if not found:
        return content, metadata, None
    redaction = {"kinds": sorted({f.kind for f in found}), "previews": [f.preview for f in found][:5]}
    metadata = _redact_strings(metadata, persisted.redact)
    metadata[REDACTED_KEY] = redaction
    return persisted.redact(content), metadata, redaction


def redaction_notice(note_id: int | None, content: str, redaction: dict) -> str:
    """The one line that tells a writer its note held a secret and what was stored instead (its
    private spans replaced: consolidate/rules/private_spans.py; the line may be logged)."""
    kept = " ".join(strip(content).split())
    if len(kept) > 160:
        kept = kept[:159] + "…"
    which = f"note {note_id}" if note_id is not None else "the note"
    return (f"{which} held secret material ({', '.join(redaction['kinds'])}): stored redacted, as {kept!r};"
            f" it will not be consolidated")


def _strings(value, key: str | None = None) -> list[tuple[str | None, str]]:
    """``(field name, string)`` of every string in ``value``, the name the nearest enclosing key."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, k if isinstance(k, str) else None)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, key)]
    return []


def _redact_strings(value, redact, key: str | None = None):
    if isinstance(value, str):
        return redact(value, key=key)
    if isinstance(value, dict):
        return {k: _redact_strings(v, redact, k if isinstance(k, str) else None) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_strings(v, redact, key) for v in value]
    return value
