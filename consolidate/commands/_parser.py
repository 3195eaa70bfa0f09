"""What the command line does before a command runs: one-line usage errors, one session-id check.

- :class:`OneLineParser`: argparse prints the usage block and then the error (several lines) for a
  bad option; this parser prints one line, ``error: consolidate CMD: <what is wrong> (see consolidate
  CMD --help)``, and exits 2 like argparse (``--help`` prints the full help as before). Subparsers
  inherit the class (argparse's ``add_subparsers`` uses the parent's class).
- :func:`check_session_option`: every command's ``--session`` goes through
  ``consolidate.session.check_session_id`` (a newline or other control character is refused there,
  for the CLI, MCP, hook payloads and the Python API alike) before the command runs.
"""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2); see the module docstring."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        text = " ".join(str(message).split())
        self.exit(2, f"error: {self.prog}: {text} (see {self.prog} --help)\n")

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            sys.stderr.write(message if message.endswith("\n") else message + "\n")
        raise SystemExit(status)


def check_session_option(args) -> None:
    """Check (and strip) ``args.session`` with check_session_id when a command has one and it is not
    blank (``session start`` takes a blank one as: a new id). Raises BadInput (exit 2, one line). The
    hook refuses a bad id itself (``consolidate.commands.lifecycle``): it never exits 2."""
    value = getattr(args, "session", None)
    if not isinstance(value, str) or not value.strip() or getattr(args, "command", None) == "hook":
        return
    from ..session import check_session_id

    args.session = check_session_id(value)
