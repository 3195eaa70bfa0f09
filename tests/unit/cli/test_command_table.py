"""The command line as one table (issue 20, item 6): every command registered in one place with its
help and an example that parses, shared options declared once with one type each, and the options
every command takes really used (``eval --pairs --limit`` was ignored).

Filed before as tests/test_cli_commands.py (issue 20).
"""

from __future__ import annotations


import pytest

from consolidate.cli.main import main
from paths import REPO, SUPPORT

PAIRS = SUPPORT / "labels" / "compare-regression.jsonl"
LABELS = SUPPORT / "labels" / "judge-regression.jsonl"


@pytest.mark.parametrize("what, path, unit", [("--pairs", PAIRS, "pairs"), ("--labels", LABELS, "notes")])
@pytest.mark.parametrize("limit", [1, 7])
def test_eval_limit_counts_pairs_and_labels_alike(capsys, what, path, unit, limit):
    """`eval --pairs FILE --limit 7` sent every pair of the file to the judge."""
    assert main(["eval", what, str(path), "--limit", str(limit), "--judge", "noop", "--json"]) == 5
    assert f"any of the {limit} {unit}" in capsys.readouterr().err


def test_eval_limit_beyond_the_file_reads_the_whole_file(capsys):
    total = sum(1 for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip())
    assert main(["eval", "--pairs", str(PAIRS), "--limit", "100000", "--judge", "noop", "--json"]) == 5
    assert f"any of the {total} pairs" in capsys.readouterr().err


def test_eval_end_to_end_refuses_limit_instead_of_ignoring_it(capsys):
    assert main(["eval", "--end-to-end", "--labels", str(LABELS), "--limit", "3", "--judge", "noop"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --limit counts labeled notes or pairs") and "--sessions" in err


def test_doctor_help_names_its_exit_codes(capsys, tmp_path, monkeypatch):
    from consolidate.cli.parsers.memory_cmd import DOCTOR_EXIT_CODES

    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    out = capsys.readouterr().out
    assert DOCTOR_EXIT_CODES in out and "0 healthy" in out and "1 findings left" in out
    monkeypatch.chdir(tmp_path)
    assert main(["doctor"]) == 0  # no store: nothing to fix


# -- every command in one table, with its help and an example ---------------------------------------

import argparse  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402

from consolidate.cli.main import build_parser  # noqa: E402
from consolidate.cli.commands import COMMANDS, MODULES  # noqa: E402

PARSER = build_parser()
SUB = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction))
#: The options several commands take: each declared once (consolidate/cli/options.py).
SHARED = ("--judge", "--time-box", "--json", "--limit", "--session", "--outcome", "--dry-run")


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for every command and sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, helps.get(name)
                yield from _walk(sub, path + (name,))


def test_the_table_lists_every_command_in_help_order():
    assert list(SUB.choices) == list(COMMANDS)
    assert MODULES == tuple(dict.fromkeys(m for m, _ in COMMANDS.values()))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_and_an_example_that_parses(name, capsys):
    helps = {a.dest: a.help for a in SUB._choices_actions}
    assert helps[name] and len(helps[name]) > 10
    example = COMMANDS[name][1]
    argv = shlex.split(example)
    assert argv[:2] == ["consolidate", name]
    args = PARSER.parse_args(argv[1:])
    assert args.command == name and callable(args.func)
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    assert f"example:\n  {example}" in capsys.readouterr().out


@pytest.mark.spawns
def test_every_command_names_a_function_that_exists_and_help_loads_none_of_them():
    """The lazy command table (consolidate.cli.parsers.command): every parser names a function its
    module has; building every parser imports no command module (``--help`` loads declarations only)."""
    import subprocess
    import sys

    from consolidate.cli.parsers import Command

    funcs = [sub.get_default("func") for _, sub, _ in _walk(PARSER) if sub.get_default("func") is not None]
    assert funcs and all(isinstance(f, Command) for f in funcs)
    assert all(callable(f.resolve()) for f in funcs)
    code = ("import sys; from consolidate.cli.main import build_parser; build_parser();"
            " print(sorted(m for m in sys.modules if m.startswith('consolidate.cli.commands.')"
            " or m in ('consolidate.agents.hooks.full', 'consolidate.store.store')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_sub_command_option_and_argument_has_help():
    missing = [(" ".join(path), a.option_strings or a.dest) for path, sub, helped in _walk(PARSER)
               for a in sub._actions if not a.help and not isinstance(a, argparse._SubParsersAction)]
    missing += [" ".join(path) for path, _, helped in _walk(PARSER) if not helped]
    assert not missing


def _signature(action: argparse.Action):
    kind = getattr(action.type, "__qualname__", action.type)
    return kind, action.metavar, tuple(action.choices or ()), type(action).__name__.replace("AppendAction", "StoreAction")


@pytest.mark.parametrize("option", SHARED)
def test_each_shared_option_has_one_type(option):
    found = {" ".join(path): _signature(a) for path, sub, _ in _walk(PARSER) for a in sub._actions
             if option in a.option_strings}
    assert len(found) >= 2, found
    assert len(set(found.values())) == 1, found


def test_shared_options_are_declared_only_in_common():
    root = REPO / "consolidate" / "cli" / "parsers"
    pattern = re.compile(r"add_argument\(\s*\"(" + "|".join(map(re.escape, SHARED)) + r")\"")
    offenders = [f"{p.name}: {m.group(1)}" for p in sorted(root.glob("*.py"))
                 for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert offenders == ["judges_cmd.py: --judge"]  # its own help (show this chain), same type and metavar


@pytest.mark.parametrize("argv", [["run", "--time-box", "0"], ["worker", "--time-box", "abc"],
                                  ["batch", "--time-box", "-1"], ["eval", "--labels", "x", "--time-box", "nan"],
                                  ["runs", "--limit", "0"], ["export", "--limit", "1001"],
                                  ["end", "--session", "s", "--outcome", "done"]])
def test_shared_options_refuse_bad_values_alike(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"argument {argv[-2]}" in capsys.readouterr().err
