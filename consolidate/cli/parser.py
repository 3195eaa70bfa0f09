"""The full ``consolidate`` command line (argparse): every command's parser, then the command;
consolidate.cli.main.main imports it by name once the light path (consolidate/agents/hooks/fast.py)
leaves a call to it.

- :func:`build_parser`: the parser of every command (their declarations: consolidate.cli.parsers), and
  :func:`run`: parse, check the settings, run the command (its module imported then).
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

Errors: every ConsolidateError is printed as ``error: <one line>`` on stderr and exits with the
error's ``exit_code`` (see ``consolidate.core.errors``): 2 bad input, 3 unknown session, 4 store, 5 judge;
``run`` exits 75 after a partial run (notes left waiting for a judge: consolidate/pipeline/deferral.py).
Ctrl-C exits 130. Heavy modules (chromadb, litellm, instructor) are imported only by the commands
that need them, never by ``note`` or ``end``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Mapping

from consolidate import __version__
from consolidate.agents.hooks.fast import command_modules
from consolidate.agents.hooks.payload import HOOK_REFUSED
from consolidate.agents.plugin_env import load_env_file
from consolidate.cli.options import VALUE_TYPES
from consolidate.cli.parsers import COMMANDS, MODULES, command
from consolidate.core.errors import BadInput, ConsolidateError, JudgeError, StoreError, UnknownSession
from consolidate.core.settings import check_all
from consolidate.rules.redaction import error_text, redacted
from consolidate.store.sessions.tier import check_session_id


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2); see the module docstring. No
    option may be abbreviated (``--rejudg`` once ran a whole re-judging batch as ``--rejudge``): a
    mistyped option is refused, naming the closest one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):  # noqa: D401 - argparse's entry (subparsers too)
        argv = sys.argv[1:] if args is None else list(args)
        self._argv = join_dash_values(self, argv)
        ns, extras = super().parse_known_args(self._argv, namespace)
        if extras and " " in self.prog:  # a command's own parser: its unknown words, with its help
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    def error(self, message: str):  # noqa: D401 - argparse's hook
        message = str(message)
        unknown = self._unknown_options()
        if "argument COMMAND: invalid choice" in message and not self._option_first():
            message = self._unknown_command(message)
        elif unknown and ("required" in message or "invalid choice" in message):
            message = f"unrecognized arguments: {' '.join(unknown)}"  # the typo, not what it left missing
        if message.startswith("unrecognized arguments"):
            message += self._did_you_mean(unknown or message.split(":", 1)[1].split())
        text = redacted(" ".join(message.split()))  # argparse echoes the value it refused
        self.exit(2, f"error: {self.prog}: {text} (see {self.prog} --help)\n")

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            sys.stderr.write(message if message.endswith("\n") else message + "\n")
        raise SystemExit(status)

    def _commands(self) -> dict[str, argparse.ArgumentParser]:
        """The command parsers of this parser (the top-level one's subcommands), by name."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):  # argparse keeps no public accessor
                return dict(action.choices)
        return {}

    def _unknown_options(self) -> list[str]:
        """The words of the last parsed command line that look like options this parser lacks (on the
        top-level parser: those before the command's name, which are the command's own after it)."""
        out, commands = [], self._commands()
        for arg in getattr(self, "_argv", []):
            if arg == "--" or arg in commands:
                break
            name = arg.split("=", 1)[0]
            if arg.startswith("-") and not _number(arg) and name not in self._option_string_actions:
                out.append(name)
        return out

    def _words(self) -> list[str]:
        """The last parsed command line without the values of this parser's own options (``--store X``)."""
        out, skip = [], False
        for arg in getattr(self, "_argv", []):
            if skip:
                skip = False
                continue
            action = self._option_string_actions.get(arg)
            skip = action is not None and action.nargs != 0 and "=" not in arg
            out.append(arg)
        return out

    def _unknown_command(self, message: str) -> str:
        """argparse's ``invalid choice: 'X' (choose from ...every command...)`` as ``unknown command 'X'``
        with the closest command's name."""
        commands = self._commands()
        word = next((a for a in self._words() if not a.startswith("-") and a not in commands), "")
        close = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.6)
        return f"unknown command {word!r}" + (f" (did you mean {close[0]}?)" if close else "") if word else message

    def _option_first(self) -> bool:
        """Whether an option this parser lacks comes before the first word that is no command (``--stroe x
        status``: the typo made ``x`` read as the command)."""
        commands = self._commands()
        for arg in self._words():
            if arg.startswith("-") and not _number(arg):
                if arg.split("=", 1)[0] not in self._option_string_actions:
                    return True
            elif arg not in commands:
                return False
        return False

    def _did_you_mean(self, words: list[str]) -> str:
        """`` (did you mean --session?)`` for the first of ``words`` close to an option of this parser
        or, on the top-level parser, of the command given (difflib ratio >= 0.75), or the hint that the
        command takes it; else ""."""
        argv = getattr(self, "_argv", [])
        name_of, command = next(((n, c) for n, c in self._commands().items() if n in argv), ("", None))
        theirs = list(command._option_string_actions) if command is not None else []
        for word in words:
            name = word.split("=", 1)[0]
            if not name.startswith("-"):
                continue
            if name in theirs:
                return f" ({name} is an option of {name_of!r}: give it after the command)"
            close = difflib.get_close_matches(name, list(self._option_string_actions) + theirs, n=1, cutoff=0.75)
            if close and close[0] in theirs and close[0] not in self._option_string_actions:
                return f" (did you mean {close[0]}, an option of {name_of!r}? give it after the command)"
            if close:
                return f" (did you mean {close[0]}?)"
        return ""


def _number(arg: str) -> bool:
    """Whether ``arg`` reads as a number (``-5``, ``-1e3``): a value, not an option."""
    try:
        float(arg)
    except ValueError:
        return False
    return True


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
        action = actions.get(arg)  # no abbreviation: OneLineParser allows none
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (action is not None and action.type in VALUE_TYPES and nxt is not None and nxt.startswith("-")
                and nxt != "--" and nxt.split("=", 1)[0] not in actions):
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def check_session_option(args) -> None:
    """Check (and strip) ``args.session`` with check_session_id when a command has one and it is not
    blank (``session start`` takes a blank one as: a new id). Raises BadInput (exit 2, one line). The
    hook refuses a bad id itself (``consolidate.agents.hooks.full.hook_refusal``): it never exits 2."""
    value = getattr(args, "session", None)
    if not isinstance(value, str) or not value.strip() or getattr(args, "command", None) == "hook":
        return

    args.session = check_session_id(value)


COMMON_OPTIONS = ("store", "chroma_url", "project", "embedding")


def build_parser(modules: tuple[str, ...] = MODULES) -> argparse.ArgumentParser:
    """The parser of every command in ``modules`` (default ``consolidate.cli.commands.MODULES``). The store
    options work before or after the command (``consolidate --store X status`` and ``consolidate
    status --store X``)."""

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

    p = OneLineParser(prog="consolidate", parents=[common],
                                description="Decide what an agent's working notes graduate into long-term memory.",
                                epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"consolidate {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
        importlib.import_module(f"consolidate.cli.parsers.{name}").register(sub, common)
    add_examples(sub.choices)
    return p


def parse_hook_argv(argv: list[str]) -> argparse.Namespace:
    """``argv`` (``["hook", OPTION ...]``) parsed by the ``consolidate hook`` command's own parser, as
    the installed hook will parse it. Arguments it refuses: one line on stderr and SystemExit(2)
    (consolidate.cli.parser.OneLineParser). ``install-hook`` gives it to
    consolidate.agents.install.install, which checks the hook command before writing it."""
    return build_parser(("hook",)).parse_args(argv)


def add_examples(parsers: Mapping[str, argparse.ArgumentParser]) -> None:
    """End each command's ``--help`` with its example from ``consolidate.cli.commands.COMMANDS``."""

    for name, parser in parsers.items():
        example = COMMANDS[name][1]
        parser.epilog = (parser.epilog + "\n\n" if parser.epilog else "") + "example:\n  " + example
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


#: Exit codes besides the error classes' (consolidate.core.errors): the README lists the same ones.
EXTRA_EXIT_CODES = ((0, "success"), (1, "batch: a session's run failed with an error; doctor: findings left to repair"),
                    (75, "run: a partial run, notes wait for a judge; curate, batch --curate: no group answered"), (130, "interrupted (Ctrl-C)"))


def exit_codes() -> list[tuple[int, str]]:
    """Every exit code and its meaning, in order: the error classes' (one per code) and the others."""

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


def run(argv: list[str] | None = None) -> int:
    """The full command line (consolidate.cli.main.main, once the light path has left ``argv`` to it):
    parse, check the settings, run the command; returns the exit code."""

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
                report_hook_refused(exc)
                return HOOK_REFUSED
            raise
        if args.command != "hook":  # the hook queues whatever the settings (its worker reports them)

            check_all()

        check_session_option(args)
        return args.func(args)
    except ConsolidateError as exc:
        report_error(exc)
        if args.command == "worker":  # status and the next SessionStart say workers are failing
            command("worker_cmd", "worker_failed").resolve()(args, exc)
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
            command("worker_cmd", "worker_failed").resolve()(args, exc)
        return StoreError.exit_code
