"""No error message about a setting's value or an ``--env-file`` line echoes a secret (new-user
review: ``CONSOLIDATE_API_KEY sk-proj-...`` on a line without ``=`` came back whole in the error).

Every secret shape below goes through each way a value reaches an error: a malformed env-file line
(a secret's own name, a provider's name, a name that is not secret-like), a bad value of another
setting in the file, an unterminated quote, and the environment. The secret text (and its random
tail) must be absent from stdout and stderr, and the one line must still name the file and line or
the variable; a bad value that is not a secret is still shown, so the message stays useful."""

from __future__ import annotations

import pytest

from consolidate.cli.main import main
from consolidate.core.errors import ConfigError
from consolidate.core.settings import by_name, shown_value

SECRETS = {
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
    "anthropic": "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-AbCdEfGhIjKlMnOpQrStUvWx",
    "github": "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "aws": "AKIAZ3MNQ7RT5XWV2KLP",
    "password": "password=Tr0ub4dor&3xyzQ",
}

# (env-file text with {s} for the secret, the line the error must name)
ENV_FILE_CASES = {
    "secret setting, no =": ("CONSOLIDATE_API_KEY {s}\n", 1),
    "provider name, colon": ("# the key\nOPENAI_API_KEY: {s}\n", 2),
    "plain setting, no =": ("CONSOLIDATE_PROJECT {s}\n", 1),
    "words then the secret": ("\nmy key is {s}\n", 2),
    "bad value of a number": ("CONSOLIDATE_STORE=x\nCONSOLIDATE_TIME_BOX={s}\n", 2),
    "bad value, quoted": ("CONSOLIDATE_WAIT_DAYS='{s}'\n", 1),
    "unterminated quote, secret setting": ('CONSOLIDATE_TEAM_TOKEN="{s}\n', 1),
    "unterminated quote, plain setting": ("CONSOLIDATE_REASK='{s}\n", 1),
}


def _tail(secret: str) -> str:
    """The part of a secret that must never be shown: all but a provider's documented prefix."""
    return secret[-12:]


def _assert_hidden(secret: str, out: str, err: str) -> None:
    assert secret not in out + err
    assert _tail(secret) not in out + err
    assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("CONSOLIDATE_STORE", "CONSOLIDATE_TIME_BOX", "CONSOLIDATE_WAIT_DAYS", "CONSOLIDATE_REASK",
                 "CONSOLIDATE_API_KEY", "CONSOLIDATE_TEAM_TOKEN", "CONSOLIDATE_PROJECT"):
        monkeypatch.setenv(name, "")  # restored after the test (load_env_file sets what it reads)
    return tmp_path


@pytest.mark.parametrize("kind", sorted(SECRETS))
@pytest.mark.parametrize("case", sorted(ENV_FILE_CASES))
def test_an_env_file_error_never_echoes_a_secret(clean_env, capsys, kind, case):
    secret = SECRETS[kind]
    text, line = ENV_FILE_CASES[case]
    path = clean_env / "sec.env"
    path.write_text(text.format(s=secret), encoding="utf-8")
    assert main(["--env-file", str(path), "status"]) == 2
    out, err = capsys.readouterr()
    _assert_hidden(secret, out, err)
    assert err.startswith(f"error: --env-file {path} line {line}: "), err


def test_the_reported_line_names_the_setting_and_hides_its_value(clean_env, capsys):
    path = clean_env / "sec.env"
    path.write_text(f"CONSOLIDATE_API_KEY {SECRETS['openai']}\n", encoding="utf-8")
    assert main(["--env-file", str(path), "status"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --env-file {path} line 1: not a KEY=VALUE line: 'CONSOLIDATE_API_KEY'"
                   " and a value hidden (<secret, 53 chars>)\n")


@pytest.mark.parametrize("kind", sorted(SECRETS))
@pytest.mark.parametrize("variable", ["CONSOLIDATE_TIME_BOX", "CONSOLIDATE_WAIT_DAYS", "CONSOLIDATE_REASK",
                                      "CONSOLIDATE_TEAM_PULL_SECONDS"])
def test_a_bad_value_in_the_environment_never_echoes_a_secret(clean_env, monkeypatch, capsys, kind, variable):
    secret = SECRETS[kind]
    monkeypatch.setenv(variable, secret)
    assert main(["status"]) == 2
    out, err = capsys.readouterr()
    _assert_hidden(secret, out, err)
    assert err.startswith(f"error: {variable}="), err


@pytest.mark.parametrize("variable, value, shown", [
    ("CONSOLIDATE_TIME_BOX", "ten minutes", "'ten minutes': not a number (seconds)"),
    ("CONSOLIDATE_REASK", "yes", "'yes': must be 0 or 1"),
    ("CONSOLIDATE_WAIT_DAYS", "-3", "'-3': must be a positive number of days"),
])
def test_a_bad_value_that_is_no_secret_is_still_shown(clean_env, monkeypatch, capsys, variable, value, shown):
    monkeypatch.setenv(variable, value)
    assert main(["status"]) == 2
    assert capsys.readouterr().err == f"error: {variable}={shown}\n"
    monkeypatch.setenv(variable, "")
    path = clean_env / "bad.env"
    path.write_text(f"{variable}={value}\n", encoding="utf-8")
    assert main(["--env-file", str(path), "status"]) == 2
    assert capsys.readouterr().err == f"error: --env-file {path} line 1: {variable}={shown}\n"
    path.write_text("the next line is words\n", encoding="utf-8")
    assert main(["--env-file", str(path), "status"]) == 2
    assert capsys.readouterr().err == f"error: --env-file {path} line 1: not a KEY=VALUE line: 'the next line is words'\n"


def test_a_secret_settings_value_is_never_shown_even_when_the_gate_would_pass_it():
    """A team token or API key may be random text no rule knows: its setting hides it whole."""
    # random lower-case letters: no rule of the gate knows them (key material needs mixed case, digits or
    # base32 capitals: consolidate/rules/key_material.py), the gate alone would let this one through
    token = "qzrlmxvtwkpnsybhcjdfgqwe"
    assert shown_value(token) == token
    for name in ("CONSOLIDATE_TEAM_TOKEN", "CONSOLIDATE_API_KEY"):
        assert by_name(name).unit == "secret"
        assert by_name(name).shown(token) == "<secret, 24 chars>"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_any_config_error_passes_the_secret_gate_where_it_is_written(kind, capsys):
    """Messages built elsewhere from a setting's value (an unknown judge, a bad Chroma or team URL):
    the error carries them as built; the sink that writes it (the CLI's line, consolidate/cli/main.py
    ``report_error``; every sink: tests/unit/core/test_error_sinks.py) shows no secret."""
    from consolidate.cli.main import report_error

    secret = SECRETS[kind]
    for message in (f"unknown judge {secret!r}; installed: api, noop", f"bad Chroma URL 'http://h/{secret}'"):
        report_error(ConfigError(message))
        err = capsys.readouterr().err
        assert secret not in err and _tail(secret) not in err and err.startswith("error: ")
    report_error(ConfigError("unknown judge 'olama'; installed: api, noop"))
    assert capsys.readouterr().err == "error: unknown judge 'olama'; installed: api, noop\n"


def test_a_setting_error_keeps_the_shown_value_as_context(monkeypatch, capsys):
    """The error names the variable and the value as shown (a ``secret`` setting's hidden whole);
    redaction is the sinks' (below the gate, the settings cannot apply it)."""
    from consolidate.cli.main import report_error
    from consolidate.core.settings import TIME_BOX

    with pytest.raises(ConfigError) as exc:
        TIME_BOX.get({"CONSOLIDATE_TIME_BOX": SECRETS["github"]})
    assert exc.value.variable == "CONSOLIDATE_TIME_BOX" and exc.value.value == SECRETS["github"]
    report_error(exc.value)
    _assert_hidden(SECRETS["github"], "", capsys.readouterr().err)
