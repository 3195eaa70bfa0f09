"""The ``consolidate`` command line (argparse, standard library).

Errors: every ConsolidateError is printed as ``error: <one line>`` on stderr and exits with the
error's ``exit_code`` (see ``consolidate.core.errors``): 2 bad input, 3 unknown session, 4 store, 5 judge;
``run`` exits 75 after a partial run (notes left waiting for a judge: consolidate/pipeline/deferral.py).
Ctrl-C exits 130. Heavy modules (chromadb, litellm, instructor) are imported only by the commands
that need them, never by ``note`` or ``end``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING
from consolidate.cli.commands import COMMANDS

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

from consolidate.cli.commands import MODULES
from consolidate import __version__
from consolidate.rules.redaction import error_text

# argparse, the command modules and the error classes are imported inside the functions: the
# session-end hook and the idle run (consolidate/agents/hooks/fast.py) are answered before any of them.


COMMON_OPTIONS = ("store", "chroma_url", "project", "embedding")


def build_parser(modules: tuple[str, ...] = MODULES) -> argparse.ArgumentParser:
    """The parser of every command in ``modules`` (default ``consolidate.cli.commands.MODULES``). The store
    options work before or after the command (``consolidate --store X status`` and ``consolidate
    status --store X``)."""
    import argparse
    import importlib

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS,
                        help="store folder (default $CONSOLIDATE_STORE, else .memofs in the project: the agent's project folder,"
                        " the nearest enclosing store, the git root, else ./.memofs)")
    common.add_argument("--chroma-url", default=argparse.SUPPRESS,
                        help="use a Chroma server (default $CONSOLIDATE_CHROMA_URL)")
    common.add_argument("--project", default=argparse.SUPPRESS,
                        help="scope of new memories (default $CONSOLIDATE_PROJECT, else the project the store"
                        " recorded when it was created, else the folder holding the store)")
    common.add_argument("--embedding", default=argparse.SUPPRESS,
                        help="embedding function: minilm (default), hash, chroma:NAME")

    common.add_argument("--env-file", metavar="FILE", default=argparse.SUPPRESS,
                        help="read CONSOLIDATE_* settings (store, Chroma URL, project, embedding, judges, ...) from a"
                        " .env file; a missing or unreadable FILE, a line that is not KEY=VALUE or a bad value is an"
                        " error naming the line (exit 2)")
    common.add_argument("--env-file-if-exists", metavar="FILE", default=argparse.SUPPRESS,
                        help="the same, but a missing FILE sets nothing (the Gemini CLI extension's .env, written"
                        " once a setting is saved)")

    from consolidate.cli.parser import OneLineParser

    p = OneLineParser(prog="consolidate", parents=[common],
                                description="Decide what an agent's working notes graduate into long-term memory.",
                                epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"consolidate {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
        importlib.import_module(f"consolidate.cli.commands.{name}").register(sub, common)
    add_examples(sub.choices)
    return p


def parse_hook_argv(argv: list[str]) -> argparse.Namespace:
    """``argv`` (``["hook", OPTION ...]``) parsed by the ``consolidate hook`` command's own parser, as
    the installed hook will parse it. Arguments it refuses: one line on stderr and SystemExit(2)
    (consolidate.cli.parser.OneLineParser). ``install-hook`` gives it to
    consolidate.agents.install.install, which checks the hook command before writing it."""
    return build_parser(("lifecycle",)).parse_args(argv)


def add_examples(parsers: Mapping[str, argparse.ArgumentParser]) -> None:
    """End each command's ``--help`` with its example from ``consolidate.cli.commands.COMMANDS``."""
    import argparse


    for name, parser in parsers.items():
        example = COMMANDS[name][1]
        parser.epilog = (parser.epilog + "\n\n" if parser.epilog else "") + "example:\n  " + example
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


#: Exit codes besides the error classes' (consolidate.core.errors): the README lists the same ones.
EXTRA_EXIT_CODES = ((0, "success"), (1, "batch: a session's run failed with an error; doctor: findings left to repair"),
                    (75, "run: a partial run, notes wait for a judge"), (130, "interrupted (Ctrl-C)"))


def exit_codes() -> list[tuple[int, str]]:
    """Every exit code and its meaning, in order: the error classes' (one per code) and the others."""
    from consolidate.core.errors import BadInput, JudgeError, StoreError, UnknownSession

    errors = [(c.exit_code, label) for c, label in ((BadInput, "bad input"), (UnknownSession, "unknown session"),
                                                    (StoreError, "store problem"), (JudgeError, "judge problem"))]
    return sorted(errors + list(EXTRA_EXIT_CODES))


def exit_codes_text() -> str:
    """The ``--help`` epilog: ``exit codes: 0 success, 1 ..., 2 bad input, ...``."""
    return "exit codes: " + ", ".join(f"{code} {label}" for code, label in exit_codes())


def report_error(exc: BaseException) -> None:
    """The one line a failed command leaves on stderr (``logs/worker.log`` for a detached worker):
    ``error: <message>``, through the secret gate (consolidate.rules.redaction.error_text)."""
    print(f"error: {error_text(exc)}", file=sys.stderr)


def report_hook_refused(exc: BaseException) -> None:
    """The line a hook refused before it wrote anything leaves on stderr (the agent shows it), through
    the secret gate: ``consolidate hook: refused: <message>; nothing was written``."""
    print(f"consolidate hook: refused: {error_text(exc)}; nothing was written", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    from consolidate.agents.plugin_env import apply, load_env_file

    apply()  # the options of the Claude Code plugin (consolidate/agents/plugin_env.py)
    from consolidate.agents.hooks.fast import main as fast_path  # the session-end hook and the idle run, before argparse

    code = fast_path(sys.argv[1:] if argv is None else list(argv))
    if code is not None:
        from consolidate.agents.hooks.fast import close_left_open, exit_now

        if argv is None:  # the process's own command line: a fast SessionStart's connection goes with it
            exit_now(code)
        close_left_open()
        return code
    from consolidate.core.errors import ConsolidateError, StoreError

    from consolidate.agents.hooks.fast import command_modules  # `hook` (SessionStart, ...): its own module's parser only

    args = build_parser(command_modules(sys.argv[1:] if argv is None else list(argv), MODULES)).parse_args(argv)
    for name in COMMON_OPTIONS:
        if not hasattr(args, name):
            setattr(args, name, None)
    try:
        try:
            if getattr(args, "env_file", None):
                if args.command == "hook" and not os.path.lexists(args.env_file):
                    # an extension installed before --env-file-if-exists: its .env may not exist yet, and
                    # the session end must not be lost for it (the settings it would hold are unset)
                    print(f"consolidate hook: --env-file {args.env_file}: No such file or directory;"
                          " going on without it", file=sys.stderr)
                else:
                    load_env_file(args.env_file, check=args.command != "hook")
            if getattr(args, "env_file_if_exists", None):
                load_env_file(args.env_file_if_exists, missing_ok=True, check=args.command != "hook")
        except ConsolidateError as exc:
            if args.command == "hook":  # refused as the hook refuses (exit 1: shown, the agent goes on)
                from consolidate.cli.commands.lifecycle import HOOK_REFUSED

                report_hook_refused(exc)
                return HOOK_REFUSED
            raise
        if args.command != "hook":  # the hook queues whatever the settings (its worker reports them)
            from consolidate.core.settings import check_all

            check_all()
        from consolidate.cli.parser import check_session_option

        check_session_option(args)
        return args.func(args)
    except ConsolidateError as exc:
        report_error(exc)
        if args.command == "worker":  # status and the next SessionStart say workers are failing
            from consolidate.cli.commands.lifecycle import worker_failed

            worker_failed(args, exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # disk full, permission denied, read-only store: one line, the store's exit code
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        if args.command == "worker":
            from consolidate.cli.commands.lifecycle import worker_failed

            worker_failed(args, exc)
        return StoreError.exit_code


if __name__ == "__main__":
    sys.exit(main())
