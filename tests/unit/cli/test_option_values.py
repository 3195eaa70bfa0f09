"""Options of a number, a duration or a date given a value that begins with a dash (new-user review:
``--ttl -5m`` gave argparse's ``expected one argument``, as did ``--time-box -1e3``,
``--min-similarity -inf`` and ``--since -3d``: argparse takes such a value for an option). Every such
option now hands the value to its type, whose one line names the option and the allowed form
(consolidate/cli/parser.py ``join_dash_values``; the types in consolidate/cli/options.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate.cli.main import MODULES, build_parser, main
from consolidate.cli.options import (VALUE_TYPES, count_1_to, duration, positive_days, positive_float, positive_hours,
                                     port, similarity)
from consolidate.cli.parsers.lifecycle import user_date

CONSOLE = str(Path(sys.executable).parent / "consolidate")


def _options():
    """``(command words, action)`` of every option of every command of the CLI."""
    out = []

    def walk(parser, words):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, words + [name])
            elif a.option_strings:
                out.append((tuple(words), a))

    walk(build_parser(MODULES), [])
    return out


def _value_options():
    """``(command words, option string, type)`` of every option of the CLI whose type is a VALUE_TYPE."""
    return [(words, a.option_strings[0], a.type) for words, a in _options() if a.type in VALUE_TYPES]


#: Per kind of type: values beginning with a dash that argparse took for an option, and what the
#: one-line error must say (the allowed form).
KINDS = {
    "duration": (["-5m", "-1h", "-2d", "-90"], "number with s, m, h, d or w"),
    "positive": (["-1e3", "-inf", "-5x", "-2h", "-1d", "-5"], "must be a positive number of"),
    "count": (["-5x", "-1e2", "-5", "-inf"], "must be"),
    "similarity": (["-inf", "-2", "-1e3", "-nan"], "must be a number from -1 to 1"),
    "date": (["-3d", "-1w", "-yesterday"], "use a date such as 2026-07-01"),
    "port": (["-1", "-80", "-5x"], "must be a port number from 0"),
}


def _kind(type_) -> str:
    if type_ is duration:
        return "duration"
    if type_ in (positive_float, positive_hours, positive_days):
        return "positive"
    if type_ is similarity:
        return "similarity"
    if type_ is user_date:
        return "date"
    if type_ is port:
        return "port"
    assert type_.__qualname__.startswith("count_from_to"), type_
    return "count"


CASES = [(words, opt, value, KINDS[_kind(t)][1]) for words, opt, t in _value_options() for value in KINDS[_kind(t)][0]]


def test_every_option_kind_is_covered():
    kinds = {_kind(t) for _, _, t in _value_options()}
    assert kinds == set(KINDS)
    names = {opt for _, opt, _ in _value_options()}
    assert {"--ttl", "--time-box", "--wait-days", "-k", "--min-similarity", "--concurrency", "--orphan-age",
            "--since", "--limit", "--sessions", "--timeout"} <= names


def test_no_number_option_bypasses_the_value_types():
    """An option typed with a bare int/float (or any type outside VALUE_TYPES) would bring the
    'expected one argument' back for its dash-leading values."""
    bad = [(" ".join(words), a.option_strings[0], a.type) for words, a in _options()
           if a.type is not None and a.type not in VALUE_TYPES]
    assert bad == []


@pytest.mark.parametrize("words, opt, value, says", CASES, ids=[f"{' '.join(w)} {o} {v}" for w, o, v, _ in CASES])
def test_a_dash_leading_value_gets_a_one_line_error_naming_the_option(words, opt, value, says, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*words, opt, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"argument {opt}" in err and says in err and value in err, err
    assert "expected one argument" not in err


@pytest.mark.parametrize("form", ["{opt}={value}", "{opt} {value}"])
def test_both_spellings_say_the_same(form, capsys):
    for opt, value in (("--ttl", "-5m"), ("--time-box", "-1e3")):
        words = ["note", "--session", "s", "x"] if opt == "--ttl" else ["run"]
        with pytest.raises(SystemExit):
            main([*words, *form.format(opt=opt, value=value).split()])
        assert f"argument {opt}:" in capsys.readouterr().err


def test_an_abbreviated_option_is_refused_naming_the_option(capsys):
    """No option may be abbreviated: a fresh tester's ``batch --curate --rejudg`` ran a whole re-judging
    batch as ``--rejudge``."""
    for argv, says in ((["run", "--time", "-5x"], "--time -5x (did you mean --time-box?)"),
                       (["batch", "--curate", "--rejudg"], "--rejudg (did you mean --rejudge?)")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and says in capsys.readouterr().err


def test_an_option_after_a_value_option_is_still_an_option(capsys):
    """Only a value that is none of the command's options is joined: ``--ttl --flag`` lacks a TTL."""
    with pytest.raises(SystemExit):
        main(["note", "--session", "s", "--ttl", "--flag", "x"])
    assert "argument --ttl: expected one argument" in capsys.readouterr().err


def test_good_values_still_parse(tmp_path, capsys):
    """Negative similarities that argparse took for options (-1e-3) now parse; others as before."""
    st = str(tmp_path / ".memofs")
    for argv in (["recall", "--store", st, "--embedding", "hash", "q", "--min-similarity", "-1e-3"],
                 ["recall", "--store", st, "--embedding", "hash", "q", "--min-similarity", "-0.5", "-k", "3"],
                 ["note", "--store", st, "--embedding", "hash", "--session", "s", "--ttl", "5m", "a note that expires"],
                 ["run", "--store", st, "--embedding", "hash", "--judge", "noop", "--time-box", "1e2",
                  "--wait-days", "0.5"]):
        assert main(argv) in (0, 75), (argv, capsys.readouterr())
    parser = build_parser(MODULES)
    assert parser.parse_args(["recall", "q", "--min-similarity", "-1e-3"]).min_similarity == -0.001
    assert parser.parse_args(["batch", "--since", "3 days ago", "--orphan-age", "2.5"]).orphan_age == 2.5
    assert parser.parse_args(["note", "--session", "s", "--ttl", "1d", "--", "-5m is the text"]).text == "-5m is the text"


@pytest.mark.spawns
def test_the_reported_input_through_the_installed_command(tmp_path):
    """``consolidate note --ttl -5m``: exit 2, one line naming --ttl and the allowed form, nothing written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    out = subprocess.run([CONSOLE, "note", "--store", str(tmp_path / ".memofs"), "--session", "s", "--ttl", "-5m",
                          "Port 8080 is taken by the dev proxy"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--ttl" in out.stderr and "20m" in out.stderr, out.stderr
    assert not (tmp_path / ".memofs").exists()


def test_count_types_are_registered_each_time():
    assert count_1_to(7) in VALUE_TYPES
