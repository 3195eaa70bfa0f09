"""What the command line does before a command runs: one-line usage errors, one session-id check.

- :class:`OneLineParser`: argparse prints the usage block and then the error (several lines) for a
  bad option; this parser prints one line, ``error: consolidate CMD: <what is wrong> (see consolidate
  CMD --help)``, and exits 2 like argparse (``--help`` prints the full help as before). Subparsers
  inherit the class (argparse's ``add_subparsers`` uses the parent's class).
- :func:`join_dash_values`: a value beginning with a dash given to an option of a number, duration
  or date (``--ttl -5m``, ``--time-box -1e3``) reaches the option's type, which names the allowed
  form, instead of argparse's ``expected one argument``.
- :func:`check_session_option`: every command's ``--session`` goes through
  ``consolidate.store.sessions.tier.check_session_id`` (a newline or other control character is refused there,
  for the CLI, MCP, hook payloads and the Python API alike) before the command runs.
"""

from __future__ import annotations

import argparse
import sys

from consolidate.rules.redaction import redacted
from consolidate.cli.options import VALUE_TYPES
from consolidate.store.sessions.tier import check_session_id


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2); see the module docstring."""

    def parse_known_args(self, args=None, namespace=None):  # noqa: D401 - argparse's entry (subparsers too)
        argv = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(join_dash_values(self, argv), namespace)

    def error(self, message: str):  # noqa: D401 - argparse's hook
        text = redacted(" ".join(str(message).split()))  # argparse echoes the value it refused
        self.exit(2, f"error: {self.prog}: {text} (see {self.prog} --help)\n")

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            sys.stderr.write(message if message.endswith("\n") else message + "\n")
        raise SystemExit(status)


def join_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with ``OPTION VALUE`` written ``OPTION=VALUE`` where OPTION is one of ``parser``'s
    options of a number, duration or date (its type in consolidate.cli.options.VALUE_TYPES) and
    VALUE begins with a dash and is none of its options: ``--ttl -5m`` reaches the type, which refuses
    it in one line naming the allowed form, instead of argparse's ``expected one argument`` (argparse
    takes ``-5m`` for an option). Tokens after ``--`` are left as they are."""

    actions = parser._option_string_actions  # argparse keeps no public map of option strings
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        action = actions.get(arg) or _abbreviated(parser, actions, arg)
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (action is not None and action.type in VALUE_TYPES and nxt is not None and nxt.startswith("-")
                and nxt != "--" and nxt.split("=", 1)[0] not in actions):
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _abbreviated(parser: argparse.ArgumentParser, actions: dict, arg: str):
    """The action a unique abbreviation ``arg`` of a long option names (``--time`` for
    ``--time-box``), as argparse resolves it when ``allow_abbrev`` is on; None otherwise."""
    if not parser.allow_abbrev or not arg.startswith("--") or "=" in arg:
        return None
    found = {a for name, a in actions.items() if name.startswith(arg)}
    return found.pop() if len(found) == 1 else None


def check_session_option(args) -> None:
    """Check (and strip) ``args.session`` with check_session_id when a command has one and it is not
    blank (``session start`` takes a blank one as: a new id). Raises BadInput (exit 2, one line). The
    hook refuses a bad id itself (``consolidate.cli.commands.lifecycle``): it never exits 2."""
    value = getattr(args, "session", None)
    if not isinstance(value, str) or not value.strip() or getattr(args, "command", None) == "hook":
        return

    args.session = check_session_id(value)
