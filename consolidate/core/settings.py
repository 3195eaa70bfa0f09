"""Every ``CONSOLIDATE_*`` environment variable, declared once: name, type (its parser), default,
unit and meaning. Code reads a variable only through its :class:`Setting` here
(``settings.TIME_BOX.get()``); the README's table of variables is :func:`markdown_table` (checked
by tests/docs/test_docs_consistency.py).

A value that cannot be parsed raises :class:`consolidate.core.errors.ConfigError` (exit 2 on the command
line) in one line that names the variable and the value, e.g. ``CONSOLIDATE_WAIT_DAYS='abc': not a
number (days)``; it is never replaced by the default in silence. The value of a ``secret`` setting
(an API key, a team token) never appears (:func:`shown_value`); any other value passes the secret
gate where the error is written (consolidate/rules/redaction.py): a secret in it appears only as its
redacted preview. The command line checks every
variable once before a command runs (:func:`check_all`), so a bad value is reported whatever the
command, except by ``hook``, which never fails an agent: it queues the session end and the worker
reports the bad value in ``logs/worker.log``.

An unset variable, or one set to the empty string, gives the default. Values are read from the
environment on each ``get`` (tests and ``--env-file`` change it at run time); parsing is cheap.

Standard library only, and only ``os``: the session-end hook's fast path (consolidate/agents/hooks/fast.py)
reads its variables here before anything else of the package is imported.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: importing typing would cost the hook's fast path a few ms
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Generic, TypeVar

    T = TypeVar("T")

    class _Generic(Generic[T]):
        pass
else:
    T = "T"

    class _Generic:
        def __class_getitem__(cls, item):
            return cls

#: Every setting, in declaration order (the README table's order).
ALL: list[Setting] = []


class Setting(_Generic[T]):
    """One environment variable: ``name`` (``CONSOLIDATE_...``), ``parse`` (text -> value; raises
    ValueError with the reason), ``default`` (the value when unset or empty; None: the code decides,
    as ``default_text`` says), ``unit`` and ``doc`` (one sentence each, for the README table),
    ``audience`` (``"user"``; ``"test"`` for the variables of the tests and the cassette recorder;
    ``"internal"`` for what consolidate sets for its own child processes)."""

    __slots__ = ("name", "parse", "default", "default_text", "unit", "doc", "audience")

    def __init__(self, name: str, parse: Callable[[str], T], default: T, doc: str, *, unit: str = "",
                 default_text: str | None = None, audience: str = "user") -> None:
        self.name = name
        self.parse = parse
        self.default = default
        self.default_text = default_text if default_text is not None else (
            "unset" if default is None else _show(default))
        self.unit = unit
        self.doc = doc
        self.audience = audience
        ALL.append(self)

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable's text, or None when it is unset or empty."""
        value = (os.environ if environ is None else environ).get(self.name)
        return value if value else None

    def get(self, environ: Mapping[str, str] | None = None) -> T:
        """The parsed value (``environ`` default ``os.environ``), else ``default``. Raises
        ConfigError naming the variable and the value when it cannot be parsed."""
        text = self.raw(environ)
        if text is None:
            return self.default
        try:
            return self.parse(text)
        except ValueError as exc:
            from consolidate.core.errors import ConfigError  # noqa: PLC0415 - this module imports only os (tests/unit/core/test_settings.py)

            shown = self.shown(text)
            raise ConfigError(f"{self.name}={shown!r}: {exc}", variable=self.name, value=shown) from None

    def shown(self, text: str) -> str:
        """How ``text``, a value of this variable, may appear in an error message or a log line:
        :func:`shown_value` of it, hidden whole when the setting's ``unit`` is ``"secret"``."""
        return shown_value(text, secret=self.unit == "secret")

    def __repr__(self) -> str:
        return f"Setting({self.name})"


def shown_value(text: str, *, secret: bool = False, limit: int = 80) -> str:
    """``text`` (a setting's value, a line of an env file) as an error message may echo it: with
    ``secret`` none of it (``<secret, N chars>``); else the text, cut to ``limit`` characters
    (``...`` ending a cut one). A cut never splits a run of non-space characters: the word it would
    split is left out whole, so a secret in the text is either whole or gone. The secret gate is not
    applied here (it is a layer above the foundations): every sink that writes an error's text
    applies it (consolidate/rules/redaction.py ``error_text``), so a secret in the value still
    appears only as its redacted preview."""
    if secret:
        return f"<secret, {len(text)} chars>"
    if len(text) <= limit:
        return text
    head = text[:limit - 3]
    if not text[limit - 3].isspace():  # the cut falls inside a word: leave the word out
        end = len(head)
        while end and not head[end - 1].isspace():
            end -= 1
        head = head[:end]
    return head.rstrip() + "..."


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- parsers ---------------------------------------------------------------------------------------

def text(value: str) -> str:
    """Any text, as given."""
    return value


def positive_number(unit: str) -> Callable[[str], float]:
    """A parser of a finite number greater than 0 (of ``unit``), surrounding spaces allowed."""

    def parse(value: str) -> float:
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError(f"not a number ({unit})") from None
        if not number > 0 or number == float("inf"):
            raise ValueError(f"must be a positive number of {unit}")
        return number

    return parse


def comma_list(value: str) -> list[str]:
    """Comma-separated items, each stripped, empty ones left out."""
    return [p.strip() for p in value.split(",") if p.strip()]


def zero_or_one(value: str) -> bool:
    """``1`` (on) or ``0`` (off)."""
    if value.strip() not in ("0", "1"):
        raise ValueError("must be 0 or 1")
    return value.strip() == "1"


def any_text_is_on(value: str) -> bool:
    """On when set to anything (unset or empty: off)."""
    return True


# -- the settings ------------------------------------------------------------------------------------
# Where each is read: the module named in its doc. Options of the command line win over them.

STORE: Setting[str | None] = Setting(
    "CONSOLIDATE_STORE", text, None, "The store folder (`--store`); a relative path is taken from the project folder.",
    unit="path", default_text="`.memofs` in the project (the agent's project folder, else the nearest enclosing store,"
    " else the git root, else the working folder)")
CHROMA_URL: Setting[str | None] = Setting(
    "CONSOLIDATE_CHROMA_URL", text, None, "A Chroma server for the long-term tier (`--chroma-url`).", unit="URL",
    default_text="unset: an embedded Chroma in the store folder")
PROJECT: Setting[str | None] = Setting(
    "CONSOLIDATE_PROJECT", text, None, "The scope of new memories (`--project`).",
    default_text="the team's project, else the name of the folder holding the store")
EMBEDDING: Setting[str | None] = Setting(
    "CONSOLIDATE_EMBEDDING", text, None,
    "The embedding function: `minilm`, `hash`, `chroma:NAME` (`--embedding`).",
    default_text="the one in the store's manifest, else `minilm`")
JUDGES: Setting[list[str] | None] = Setting(
    "CONSOLIDATE_JUDGES", comma_list, None, "The judge chain, comma-separated, in order (`--judge`).", unit="comma list",
    default_text="consolidate.toml, pyproject.toml, else the first agent CLI on PATH, then api, then noop")
PROJECT_ROOT: Setting[str | None] = Setting(
    "CONSOLIDATE_PROJECT_ROOT", text, None,
    "The project folder that memories' file anchors are relative to.", unit="path",
    default_text="the folder holding the store")
TIME_BOX: Setting[float] = Setting(
    "CONSOLIDATE_TIME_BOX", positive_number("seconds"), 120.0,
    "Time box of one session in the worker the hook starts (`worker --time-box`).", unit="seconds")
WAIT_DAYS: Setting[float] = Setting(
    "CONSOLIDATE_WAIT_DAYS", positive_number("days"), 7.0,
    "How long a note no judge answered waits for one before it is dropped (`run --wait-days`).", unit="days")
QUARANTINE_TTL_DAYS: Setting[float] = Setting(
    "CONSOLIDATE_QUARANTINE_TTL_DAYS", positive_number("days"), 14.0,
    "How long a quarantined memory may stay unconfirmed before it expires.", unit="days")
TEAM_PULL_SECONDS: Setting[float | None] = Setting(
    "CONSOLIDATE_TEAM_PULL_SECONDS", positive_number("seconds"), None,
    "How long a session start or a run waits for the team's changes.", unit="seconds",
    default_text="3 at a session start, 10 in a run")
TEAM_PUSH_SECONDS: Setting[float | None] = Setting(
    "CONSOLIDATE_TEAM_PUSH_SECONDS", positive_number("seconds"), None,
    "How long a run's push to the team may take before it is left in the outbox.", unit="seconds",
    default_text="30")
TEAM_TOKEN: Setting[str | None] = Setting(
    "CONSOLIDATE_TEAM_TOKEN", text, None,
    "The team server's token (`team init --token-env` names another variable).", unit="secret")
API_MODEL: Setting[str | None] = Setting(
    "CONSOLIDATE_API_MODEL", text, None, "The `api` judge's litellm model string, e.g. `openai/gpt-4o-mini`.",
    default_text="chosen from the provider key that is set")
API_BASE: Setting[str | None] = Setting(
    "CONSOLIDATE_API_BASE", text, None, "The `api` judge's server base URL (a local server).", unit="URL")
API_KEY: Setting[str | None] = Setting(
    "CONSOLIDATE_API_KEY", text, None, "The key for `CONSOLIDATE_API_BASE`'s server.", unit="secret",
    default_text="unset: the provider's own variable (`OPENAI_API_KEY`, ...)")
CLI_MODEL: Setting[str | None] = Setting(
    "CONSOLIDATE_CLI_MODEL", text, None, "The model of a CLI judge given without one (`ollama`, `llm`).",
    default_text="the CLI's own default")
PROMPT_VERSION: Setting[str | None] = Setting(
    "CONSOLIDATE_PROMPT_VERSION", lambda v: v.strip(), None, "The judge prompt version (`eval --prompt-version`).",
    default_text="judge-v1")
CURATE_PROMPT_VERSION: Setting[str | None] = Setting(
    "CONSOLIDATE_CURATE_PROMPT_VERSION", lambda v: v.strip() or None, None,
    "The curation prompt version (`curate --prompt-version`; also `batch --curate`).", default_text="curate-v5")
REASK: Setting[bool] = Setting(
    "CONSOLIDATE_REASK", zero_or_one, True,
    "`0`: the judge chain does not ask again for notes a judge left out (replaying old cassettes).",
    unit="0 or 1")
DEBUG: Setting[bool] = Setting(
    "CONSOLIDATE_DEBUG", any_text_is_on, False, "Set: litellm's and httpx's own log lines are shown.",
    unit="set or unset")
RECORD: Setting[bool] = Setting(
    "CONSOLIDATE_RECORD", lambda v: v == "1", False,
    "`1`: CLI judges record each exchange into the cassette (anything else: replay).", unit="1",
    audience="test")
CASSETTE: Setting[str | None] = Setting(
    "CONSOLIDATE_CASSETTE", lambda v: v.strip(), None,
    "A CLI judge cassette (a path, or a name in `CONSOLIDATE_CASSETTE_DIR`) to replay or record.",
    audience="test")
CASSETTE_DIR: Setting[str | None] = Setting(
    "CONSOLIDATE_CASSETTE_DIR", text, None, "Where named cassettes live.", unit="path",
    default_text="`./cassettes`", audience="test")
CASSETTE_MODEL: Setting[str | None] = Setting(
    "CONSOLIDATE_CASSETTE_MODEL", text, None, "The model recorded in a cassette when the CLI does not say.",
    audience="test")
CASSETTE_HOW: Setting[str | None] = Setting(
    "CONSOLIDATE_CASSETTE_HOW", text, None, "How a cassette was recorded (free text kept in it).",
    audience="test")
CASSETTE_SCRUB: Setting[str | None] = Setting(
    "CONSOLIDATE_CASSETTE_SCRUB", lambda v: v.strip(), None,
    "Files or folders (`os.pathsep`-separated) whose text a recording must not copy.", audience="test")
CRASH_AT: Setting[str | None] = Setting(
    "CONSOLIDATE_CRASH_AT", text, None, "Crash injection: the process kills itself at this named point.",
    audience="test")
PAUSE_AT: Setting[str | None] = Setting(
    "CONSOLIDATE_PAUSE_AT", text, None, "Race tests: the process waits at this named point.", audience="test")
PAUSE_DIR: Setting[str | None] = Setting(
    "CONSOLIDATE_PAUSE_DIR", text, None, "Race tests: the folder of the pause point's files.", unit="path",
    audience="test")
JUDGE_CHILD: Setting[bool] = Setting(
    "CONSOLIDATE_JUDGE_CHILD", any_text_is_on, False,
    "Set by consolidate in a CLI judge's process: hooks there do nothing (no recursion).", unit="set or unset",
    audience="internal")
WORKER_AFTER: Setting[str | None] = Setting(
    "CONSOLIDATE_WORKER_AFTER", text, None,
    "Set by a session-end hook in the worker it starts: the worker waits (at most 15 s) until that hook's"
    " process has exited.", unit="pid", audience="internal")


def by_name(name: str) -> Setting:
    """The setting called ``name``; KeyError for another name."""
    for s in ALL:
        if s.name == name:
            return s
    raise KeyError(name)


def check_all(environ: Mapping[str, str] | None = None) -> None:
    """Parse every setting once; raises ConfigError for the first that cannot be parsed."""
    for s in ALL:
        s.get(environ)


def markdown_table() -> str:
    """The README's table of variables (one row per setting, in declaration order)."""
    rows = ["| variable | unit | default | meaning |", "| --- | --- | --- | --- |"]
    for s in ALL:
        doc = s.doc + {"user": "", "test": " (tests and recording)", "internal": " (set by consolidate)"}[s.audience]
        rows.append(f"| `{s.name}` | {s.unit or 'text'} | {s.default_text} | {doc} |")
    return "\n".join(rows)


if __name__ == "__main__":  # `python -m consolidate.core.settings`: the README's table
    print(markdown_table())
