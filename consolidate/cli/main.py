"""The ``consolidate`` command line's entry point (the console script and ``python -m consolidate``).

It answers the invocations users pay for every session (the session-end hook, a SessionStart, the
idle run) on the light path, consolidate/agents/hooks/fast.py, before argparse and the command
modules are imported; anything else goes to the full command line, consolidate.cli.parser (every
command's parser, then the command), imported by name only then. Its names (``build_parser``,
``parse_hook_argv``, ``exit_codes``, ``report_error``, ``MODULES`` ...) are reachable here too.

Errors: every ConsolidateError is printed as ``error: <one line>`` on stderr and exits with the
error's ``exit_code`` (see ``consolidate.core.errors``): 2 bad input, 3 unknown session, 4 store, 5 judge;
``run`` exits 75 after a partial run (notes left waiting for a judge: consolidate/pipeline/deferral.py).
Ctrl-C exits 130. Heavy modules (chromadb, litellm, instructor) are imported only by the commands
that need them, never by ``note`` or ``end``.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from consolidate.agents.hooks.fast import close_left_open, exit_now
from consolidate.agents.hooks.fast import main as fast_path
from consolidate.agents.plugin_env import apply

if TYPE_CHECKING:
    from consolidate.cli import parser  # noqa: F401 - imported by name in main(): the edge for grimp and import-linter

#: The full command line, imported by name when the light path leaves a call to it.
APP = "consolidate.cli.parser"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    apply()  # the options of the Claude Code plugin (consolidate/agents/plugin_env.py)
    code = fast_path(sys.argv[1:] if argv is None else list(argv))  # the session-end hook and the idle run
    if code is not None:
        if argv is None:  # the process's own command line: a fast SessionStart's connection goes with it
            exit_now(code)
        close_left_open()
        return code
    return importlib.import_module(APP).run(argv)


def __getattr__(name: str) -> Any:
    """The full command line's names (``build_parser``, ``MODULES`` ...), imported on first use (PEP 562)."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(importlib.import_module(APP), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


if __name__ == "__main__":
    sys.exit(main())
