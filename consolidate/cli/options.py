"""The options several commands declare, and the argparse types of their values (parser declarations:
light, loaded by ``--help``; what the commands share at run time is consolidate.cli.commands.open_store)."""

from __future__ import annotations

import functools

from consolidate.core.vocab import SESSION_OUTCOMES
import argparse
from consolidate.core.errors import BadInput
from consolidate.store.sessions.tier import parse_ttl
import sys

#: The default judge chain in words: the same in every --help and in the README (consolidate.judges.registry
#: builds it; tests/docs/test_docs_consistency.py keeps the three in step).
DEFAULT_CHAIN_TEXT = "the first agent CLI on PATH (claude, llm, ollama, codex), then api, then noop"
#: Where the chain comes from when --judge is not given.
CHAIN_SOURCES = ("$CONSOLIDATE_JUDGES, then judges in consolidate.toml in the store, then [tool.consolidate]"
                 " judges in pyproject.toml, else " + DEFAULT_CHAIN_TEXT)


def judge_help(what: str = "judge spec") -> str:
    """The help of a --judge option: ``what``, repeatable, in chain order, and the default chain."""
    return f"{what}, repeatable, in chain order (default: {CHAIN_SOURCES})"


# -- types of the options that take a number, a duration or a date ----------------------------------

#: The argparse types of the options whose value is a number, a duration or a date. Such a value may
#: begin with a dash (``--ttl -5m``, ``--time-box -1e3``, ``--min-similarity -inf``, ``--since -3d``):
#: argparse takes it for an option (only ``-5`` and ``-.5`` pass as negative numbers) and says
#: ``expected one argument``; consolidate.cli.parser hands it to the type instead, whose one
#: line names the option and the allowed form. Every type below is registered here.
VALUE_TYPES: set = set()


def value_type(fn):
    """Register ``fn`` in :data:`VALUE_TYPES` (an argparse type of a number, duration or date)."""
    VALUE_TYPES.add(fn)
    return fn


def _positive(text: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of {unit} (such as 30 or 2.5), got {text!r}")
    return value


@value_type
def positive_float(text: str, unit: str = "seconds") -> float:
    """argparse type: a number (of ``unit``) greater than 0."""
    return _positive(text, unit)


@value_type
def positive_hours(text: str) -> float:
    """argparse type: a number of hours greater than 0."""
    return _positive(text, "hours")


@value_type
def positive_days(text: str) -> float:
    """argparse type: a number of days greater than 0."""
    return _positive(text, "days")


@functools.cache
def count_1_to(limit: int):
    """argparse type: an integer from 1 to ``limit`` (one function per limit)."""
    return count_from_to(1, limit)


def count_from_to(low: int, limit: int):
    """argparse type: an integer from ``low`` to ``limit``; a clear error naming both otherwise."""

    @value_type
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {limit}, got {text!r}") from None
        if not low <= value <= limit:
            raise argparse.ArgumentTypeError(f"must be from {low} to {limit}, got {value}")
        return value

    return parse


@value_type
def duration(text: str) -> str:
    """argparse type of ``--ttl``: a positive duration, a number with ``s``, ``m``, ``h``, ``d`` or ``w``
    (``20m``, ``2h``, ``1d``; a bare number is seconds), at most 10 years; returns the text (the
    session tier parses it again, as it does the MCP ``ttl`` and a JSONL import's)."""

    try:
        parse_ttl(text)
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


@value_type
def similarity(text: str) -> float:
    """argparse type of ``--min-similarity``: a cosine similarity, a number from -1 to 1
    (consolidate.pipeline.recall.check_options, shared with MCP ``recall``)."""

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number from -1 to 1 (such as 0.2 or -0.1), got {text!r}")
    return value


@value_type
def port(text: str) -> int:
    """argparse type of a TCP port (``ui --port``): an integer from 0 (the system picks a free one)
    to 65535."""

    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 (a free one) to 65535, got {text!r}")
    return value


def read_text_arg(text: str) -> str:
    """``-`` means: read the text from standard input (for notes too long for a command line)."""

    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"standard input is not valid UTF-8 (byte {exc.start})") from None


# -- options shared by several commands: declared here once, each with one type ----------------------

#: Session outcomes (docs/design.md#session-outcomes).


def add_judge(parser, what: str = "judge spec") -> None:
    """``--judge SPEC``, repeatable, in chain order (consolidate.judges.registry)."""
    parser.add_argument("--judge", action="append", metavar="SPEC", help=judge_help(what))


def add_time_box(parser, default: float | None, what: str = "seconds for the whole run") -> None:
    """``--time-box SECONDS``: a positive number of seconds; ``default`` None: no limit, or what
    ``what`` says."""
    shown = "" if "default" in what else f" (default {default:g})" if default is not None else " (default: no limit)"
    parser.add_argument("--time-box", type=positive_float, default=default, metavar="SECONDS", help=what + shown)


def add_json(parser, what: str = "print the result as one JSON object") -> None:
    """``--json``: machine-readable output."""
    parser.add_argument("--json", action="store_true", help=what)


def add_limit(parser, most: int, default: int | None, what: str) -> None:
    """``--limit N``: an integer from 1 to ``most``."""
    shown = f" (default {default})" if default is not None else ""
    parser.add_argument("--limit", type=count_1_to(most), default=default, metavar="N", help=what + shown)


def add_dry_run(parser, what: str = "print what would change, write nothing") -> None:
    """``--dry-run``."""
    parser.add_argument("--dry-run", action="store_true", help=what)


def add_session(parser, what: str = "session id", *, required: bool = False, repeat: bool = False) -> None:
    """``--session ID`` (``repeat``: repeatable)."""
    parser.add_argument("--session", required=required, action="append" if repeat else "store", metavar="ID",
                        help=what)


def add_outcome(parser, what: str = "how the session ended", *, default: str | None = None) -> None:
    """``--outcome success|failure|aborted`` (required unless ``default``)."""
    parser.add_argument("--outcome", choices=SESSION_OUTCOMES, default=default, required=default is None,
                        help=what + (f" (default {default})" if default else ""))
