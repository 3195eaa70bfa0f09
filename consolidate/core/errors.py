"""The error tree of consolidate.

Every error the library raises on purpose is a :class:`ConsolidateError`. Subclasses carry their
context as attributes (a blocked value only ever appears as a redacted preview). A message may echo
what its raiser saw (a setting's value, a line of a file): every place that writes an error's text
(the CLI's stderr line, the MCP ToolError, the logs: ``consolidate.rules.redaction.SINKS``) passes
it through the secret gate, so no secret reaches a terminal, a log or a file. The CLI maps each
class to an exit code in one place (``consolidate.cli.main.EXIT_CODES``) and prints ``error:
<message>`` on one line, never a traceback. Every class below is exported:
``from consolidate import JudgeTimeout`` (tests/unit/judges/test_provider_errors.py checks this drawing against
the classes).

    ConsolidateError
    ├── BadInput                 invalid note, import file or argument       (exit 2)
    │   ├── EmptyNote
    │   ├── InvalidImportLine
    │   ├── SecretBlocked        a write through the API held secret material
    │   ├── PathRefused          a workspace path escapes the workspace or its writable folders
    │   ├── ConfigError          a setting names something that does not exist
    │   └── StaleForm            a ui form about a memory or run that changed since it was shown
    ├── UnknownSession           no note and no session end for the id       (exit 3)
    ├── StoreError               the store folder cannot be used              (exit 4)
    │   ├── StorePathError       the path is a file, or cannot be created
    │   ├── StoreCorrupt         a store file cannot be read
    │   ├── EmbeddingMismatch    the store was built with another embedding function
    │   ├── EmbeddingUnavailable the embedding model cannot be downloaded, its API not reached
    │   ├── StoreLocked          another process holds the store lock past the timeout
    │   ├── StoreReadOnly        a write to a store on a read-only folder or mount
    │   └── TeamError            the team store cannot be used (unreachable, token refused)
    │       └── TeamTimeout      a team store call past its time bound
    └── JudgeError               a judge could not answer                     (exit 5)
        ├── JudgeUnavailable     not installed, not reachable, no key, failed before
        ├── JudgeTimeout         past its time box
        ├── JudgeOutputInvalid   answered, but not with valid verdicts
        └── CassetteMiss         a replayed CLI judge has no recorded answer for the prompt

A judge's provider errors (litellm, openai, httpx, instructor) are mapped onto the JudgeError
branch by their class in ``consolidate.judges.api.provider_errors``: a timeout -> JudgeTimeout, a failed
connection or an API error (authentication, permission, not found, bad request, rate limit, 5xx)
-> JudgeUnavailable, anything else (an answer that does not validate) -> JudgeOutputInvalid.
"""

from __future__ import annotations

__all__ = ["ConsolidateError", "BadInput", "EmptyNote", "InvalidImportLine", "SecretBlocked", "PathRefused",
           "ConfigError", "StaleForm", "UnknownSession", "StoreError", "StorePathError", "StoreCorrupt", "EmbeddingMismatch", "EmbeddingUnavailable",
           "StoreLocked", "StoreReadOnly", "TeamError", "TeamTimeout", "JudgeError", "JudgeUnavailable",
           "JudgeTimeout", "JudgeOutputInvalid", "CassetteMiss"]


class ConsolidateError(Exception):
    """Base class of every error consolidate raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, **context):
        super().__init__(message)
        self.message = message
        for key, value in context.items():
            setattr(self, key, value)

    def __str__(self) -> str:  # one line, always
        return " ".join(str(self.message).split())


class BadInput(ConsolidateError):
    """The caller gave input the tool cannot take; nothing was written."""

    exit_code = 2


class EmptyNote(BadInput):
    """A note whose content is empty or whitespace only. Attribute: ``session_id``."""


class InvalidImportLine(BadInput):
    """A line of an import file that cannot be taken. Attributes: ``path``, ``line`` (1-based)."""


class SecretBlocked(BadInput):
    """A text written through the API held secret material. Attributes: ``kinds`` (rule names),
    ``previews`` (redacted: kind and length, see ``consolidate.rules.secrets.redact_preview``)."""


class PathRefused(BadInput):
    """A workspace path refused: absolute, holding ``..``, leading outside the workspace through a
    symlink, or a write outside ``working/`` and ``output/``. Attribute: ``path`` (as given, cut to
    120 characters; None when it was not text)."""


class ConfigError(BadInput):
    """A setting names something that does not exist (a judge, an embedding function), or a value of
    a setting or a line of an ``--env-file`` cannot be parsed. A value echoed in it may hold a secret:
    like every error's text, it passes the secret gate where it is written (the sinks of
    consolidate/rules/redaction.py), so it never shows a secret, only the redacted preview
    (consolidate/core/settings.py ``shown_value`` hides the whole value of a ``secret`` setting)."""


class StaleForm(BadInput):
    """A form of ``consolidate ui`` posted about a memory or a run that changed since the page showed
    it (another process wrote to the store); nothing was written. Attribute: ``subject`` (the id)."""


class UnknownSession(ConsolidateError):
    """No note and no session end exist for ``session_id``."""

    exit_code = 3


class StoreError(ConsolidateError):
    """The store folder cannot be used. Attribute: ``path``."""

    exit_code = 4


class StorePathError(StoreError):
    """The store path is a file, or its folder cannot be created."""


class StoreCorrupt(StoreError):
    """A store file cannot be read (bad JSON, not a SQLite database). Attribute: ``path``."""


class EmbeddingMismatch(StoreError):
    """The store was built with another embedding function. Attributes: ``expected``, ``found``."""


class EmbeddingUnavailable(StoreError):
    """The store's embedding function cannot embed now: its model cannot be downloaded or its API
    cannot be reached. Attribute: ``name``."""


class StoreLocked(StoreError):
    """Another process held the store lock past ``timeout`` seconds."""


class StoreReadOnly(StoreError):
    """A write was asked of a store whose folder cannot be written (read-only mount or folder);
    read commands still work. Attribute: ``path``."""


class JudgeError(ConsolidateError):
    """A judge could not answer a batch. Attribute: ``judge`` (its name)."""

    exit_code = 5
    kind = "judge-error"


class JudgeUnavailable(JudgeError):
    """The judge cannot be used now: not installed, unreachable, no key, or failed before."""

    kind = "judge-unavailable"


class JudgeTimeout(JudgeError):
    """The judge did not answer within its time box. Attribute: ``seconds``."""

    kind = "judge-timeout"


class JudgeOutputInvalid(JudgeError):
    """The judge answered, but not with valid verdicts."""

    kind = "judge-output-invalid"


class TeamError(StoreError):
    """The team store could not be used (unreachable, refused the token, timed out)."""


class TeamTimeout(TeamError):
    """A team store call did not finish within its time bound."""


class CassetteMiss(JudgeError):
    """A CLI judge replaying a cassette (``consolidate.judges.cli_cassette``) met a prompt it holds no answer for:
    the prompt changed since it was recorded. The judge chain does not fail soft over it: it reaches
    the caller. Attributes: ``prompt_version``, ``cassette`` (its path)."""

    kind = "cassette-miss"
