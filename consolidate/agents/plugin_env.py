"""The store options an agent CLI's plugin or extension settings give ``consolidate``.

Installed as a **Claude Code plugin** (``plugins/consolidate``), our hooks and MCP server are started
by Claude Code with the options the user chose in the plugin's ``userConfig`` dialog: a hook process
gets each as ``CLAUDE_PLUGIN_OPTION_<KEY>`` (Claude Code's plugin manifest reference, "User
configuration"), and the MCP server gets the same variables from the ``env`` of its declaration
(``${user_config.KEY}`` substituted there). Installed as a **Gemini CLI extension** (the repository
root), the extension's settings are saved by Gemini CLI as ``CONSOLIDATE_*`` variables in the
extension's ``.env`` file (Gemini CLI's extension reference, "Settings"); its hooks and MCP server run
``consolidate --env-file ${extensionPath}/.env ...``.

:func:`apply` turns both into the ``CONSOLIDATE_STORE``, ``CONSOLIDATE_CHROMA_URL``,
``CONSOLIDATE_PROJECT``, ``CONSOLIDATE_EMBEDDING`` and ``CONSOLIDATE_JUDGES`` variables every command
already reads (and the worker a hook starts inherits). An empty value, or one still holding an
unsubstituted ``${...}``, means "not set". Only the standard library and, for a ``.env`` file,
python-dotenv.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import MutableMapping  # not typing: this runs before every command, the hook included
from consolidate.core.errors import ConfigError
from consolidate.core.settings import ALL, shown_value

#: The options, as the plugin's userConfig keys; each is ``CONSOLIDATE_<KEY upper-cased>``.
KEYS = ("store", "chroma_url", "project", "embedding", "judges")
PLUGIN_PREFIX = "CLAUDE_PLUGIN_OPTION_"


def _value(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    if not text or "${" in text:  # an option left empty, or a placeholder Claude Code did not fill
        return None
    return text


def apply(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set ``CONSOLIDATE_<KEY>`` from ``CLAUDE_PLUGIN_OPTION_<KEY>`` (upper-cased or as written) where
    the plugin option is set and ``CONSOLIDATE_<KEY>`` is not; returns what it set."""
    env = os.environ if environ is None else environ
    done = {}
    for key in KEYS:
        target = "CONSOLIDATE_" + key.upper()
        if _value(env.get(target)):
            continue
        value = _value(env.get(PLUGIN_PREFIX + key.upper())) or _value(env.get(PLUGIN_PREFIX + key))
        if value:
            env[target] = done[target] = value
    return done


def load_env_file(path: str | os.PathLike, environ: MutableMapping[str, str] | None = None, *,
                  missing_ok: bool = False, check: bool = True) -> dict[str, str]:
    """Set the ``CONSOLIDATE_*`` variables of a ``.env`` file (the Gemini CLI extension's settings)
    that hold a value: every variable declared in consolidate/core/settings.py but the ones consolidate
    sets for its own child processes; other variables in it are ignored (as the environment's). Returns
    what it set. Raises ConfigError (one line) when the file is missing (unless ``missing_ok``: the
    extension's file exists only once a setting was saved), is not a file, or cannot be read as UTF-8
    text; with ``check`` also, naming the file and the line (1-based), for a line that is not
    ``KEY=VALUE`` (a comment or a blank line is fine) and for a value its setting cannot parse, as a
    bad value in the environment is refused (``--env-file F line 3: CONSOLIDATE_TIME_BOX='abc': not a
    number (seconds)``), and for a value holding a ``${...}`` placeholder (values are taken as
    written: python-dotenv's expansion is off, so ``${UNSET}/x`` never becomes ``/x``); nothing is
    set then. Without ``check`` (the hook, which never fails an agent
    over a setting) such a line is skipped and a bad value set as it is, for the worker to report."""

    env = os.environ if environ is None else environ
    if missing_ok and not os.path.lexists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()  # readable, UTF-8, and a file (a folder raises IsADirectoryError)
        lines = _key_lines(path, text, check)  # before python-dotenv logs a line it cannot parse
        from dotenv import dotenv_values  # noqa: PLC0415 - third-party python-dotenv: loaded only when an env file is read

        values = dotenv_values(path, interpolate=False)  # as written: the environment expands nothing either
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"--env-file {os.fspath(path)}: {why}", path=os.fspath(path)) from None
    known = {s.name: s for s in ALL if s.audience != "internal"}
    done = {}
    for name, raw in values.items():
        setting = known.get(name)
        if check and setting is not None and raw and "${" in raw:
            raise ConfigError(f"--env-file {os.fspath(path)} line {lines.get(name, '?')}: {name} holds a ${{...}}"
                              " placeholder; values are taken as written, write the value itself",
                              path=os.fspath(path), line=lines.get(name), variable=name)
        value = _value(raw)
        if setting is None or value is None:
            continue
        if check:
            try:
                setting.get({name: value})
            except ConfigError as exc:
                raise ConfigError(f"--env-file {os.fspath(path)} line {lines.get(name, '?')}: {exc}",
                                  path=os.fspath(path), line=lines.get(name), variable=name) from None
        done[name] = value
    env.update(done)
    return done


def _key_lines(path: str | os.PathLike, text: str, check: bool) -> dict[str, int]:
    """``{variable: the 1-based line setting it last}`` of the env file's ``text``. With ``check``,
    ConfigError naming the line for one that is not ``KEY=VALUE`` (python-dotenv's parser)."""
    from dotenv.parser import parse_stream  # noqa: PLC0415 - third-party python-dotenv: loaded only when an env file is read

    lines: dict[str, int] = {}
    for binding in parse_stream(io.StringIO(text)):
        original = binding.original.string
        # the statement's own line: the parser counts the blank lines before it as its start
        line = binding.original.line + original[:len(original) - len(original.lstrip())].count("\n")
        if binding.key is not None and binding.value is not None:
            lines[binding.key] = line
        elif check and (binding.error or binding.key is not None):
            first = original.strip().splitlines()[0] if original.strip() else original
            raise ConfigError(f"--env-file {os.fspath(path)} line {line}: not a KEY=VALUE line: {_shown_line(first)}",
                              path=os.fspath(path), line=line)
    return lines


#: A name whose value is a secret however it is written (an API key, a token, a password): a malformed
#: line starting with it shows the name only. Words of the names providers and tools use for them.
SECRET_NAME_WORDS = r"(?i)key|token|secret|passw|pwd|credential|auth|cookie|session"


def _shown_line(first: str) -> str:
    """How a malformed env-file line is echoed: quoted and passed through the secret gate
    (consolidate/core/settings.py ``shown_value``); a line starting with the name of a ``secret`` setting or
    a secret-like name (``OPENAI_API_KEY: sk-...``, an unterminated ``CONSOLIDATE_TEAM_TOKEN="...``)
    shows that name and the length of the rest, none of its characters."""
    m = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)", first)
    name = m.group(1) if m else ""
    secret_names = {s.name for s in ALL if s.unit == "secret"}
    if name and (name in secret_names or re.search(SECRET_NAME_WORDS, name)):
        rest = first[m.end():] if m else ""
        return f"{name!r} and a value hidden ({shown_value(rest, secret=True)})"
    return repr(shown_value(first))
