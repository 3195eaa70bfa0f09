"""No secret inside an error reaches a terminal, a log or a file (issue 27: the redaction moved out
of the error class and the settings' ``shown_value``, which are below the secret gate, to the sinks
that write an error's text: consolidate/rules/redaction.py).

Three checks: every sink registered in ``SINKS`` is driven here with a secret inside an error and
none of the secret survives; the source has no ``except`` clause (nor a function taking ``exc`` /
``error`` / ``err``) that writes its exception's text other than through ``error_text`` /
``redacted`` or by raising it on (a raised error's text is written by a sink later); and the gate
holds for any text around a secret (Hypothesis), the settings' cut of a long value included."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.cli.main import main
from consolidate.core.errors import ConfigError, StoreCorrupt
from consolidate.core.settings import TIME_BOX
from consolidate.rules.redaction import SINKS, error_text, redacted
from paths import REPO

ROOT = REPO
SECRETS = {
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
    "anthropic": "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-AbCdEfGhIjKlMnOpQrStUvWx",
    "github": "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "aws": "AKIAZ3MNQ7RT5XWV2KLP",
    "password": "password=Tr0ub4dor&3xyzQ",
}


def assert_hidden(secret: str, text: str) -> None:
    """No 8-character run of the secret past its first 4 characters (a preview shows at most those)."""
    body = secret[4:]
    leaks = {body[i:i + 8] for i in range(len(body) - 7) if body[i:i + 8] in text}
    assert not leaks, (leaks, text)


# -- the sinks, each driven as it runs --------------------------------------------------------------

def _cli_error(secret, tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONSOLIDATE_WAIT_DAYS", secret)
    assert main(["status"]) == 2
    return capsys.readouterr().err


def _hook_refused(secret, tmp_path, monkeypatch, capsys, caplog):
    env = tmp_path / secret  # a folder given as the env file: refused, naming its path
    env.mkdir()
    assert main(["--env-file", str(env), "hook", "--store", str(tmp_path / "s"), "--session", "s1"]) == 1
    return capsys.readouterr().err


def _argument_error(secret, tmp_path, monkeypatch, capsys, caplog):
    with pytest.raises(SystemExit) as exit_:
        main(["recall", "anything", "--store", str(tmp_path / "s"), "-k", secret])
    assert exit_.value.code == 2
    return capsys.readouterr().err


def _hook_failed(secret, tmp_path, monkeypatch, capsys, caplog):
    def boom(*a, **k):
        raise RuntimeError(f"boom {secret}")

    monkeypatch.setattr("consolidate.agents.hooks.full.run_hook", boom)
    assert main(["hook", "--store", str(tmp_path / "s"), "--session", "s1", "--no-worker"]) == 0
    return (tmp_path / "s" / "logs" / "hook.log").read_text(encoding="utf-8")


def _session_start_log(secret, tmp_path, monkeypatch, capsys, caplog):
    from consolidate.agents.hooks import full

    def boom(*a, **k):
        raise ConfigError(f"boom {secret}")

    monkeypatch.setattr(full, "session_for_start", boom)  # the hook's own name for it, bound at import
    assert full._session_for_start(tmp_path / "s", "s1", {}) == "s1"
    return (tmp_path / "s" / "logs" / "hook.log").read_text(encoding="utf-8")


def _worker_health(secret, tmp_path, monkeypatch, capsys, caplog):
    from consolidate.store import worker_health

    worker_health.record(tmp_path, f"error: boom {secret}")
    return Path(worker_health.status_path(tmp_path)).read_text(encoding="utf-8")


def _mcp_tool_error(secret, tmp_path, monkeypatch, capsys, caplog):
    pytest.importorskip("mcp")  # the mcp extra: installed in the test environment
    from consolidate.mcp.server import tool_error

    caplog.set_level(logging.ERROR, logger="consolidate.mcp")
    shown = [str(tool_error(ConfigError(f"boom {secret}"))), str(tool_error(KeyError(f"boom {secret}")))]
    return "\n".join(shown + [caplog.text])


def _mcp_bad_line(secret, tmp_path, monkeypatch, capsys, caplog):
    from consolidate.mcp.stdio import reply_for_bad_line

    reply = reply_for_bad_line(ValueError(f"boom {secret}"))
    return reply.message.model_dump_json()


def _doctor(secret, tmp_path, monkeypatch, capsys, caplog):
    from consolidate.pipeline import doctor
    from consolidate.store.store import Store

    assert main(["--store", str(tmp_path / "s"), "note", "--session", "s1", "The build uses pnpm, not npm"]) == 0
    store = Store(tmp_path / "s")

    def boom(self):
        raise StoreCorrupt(f"boom {secret}", path="manifest.json")

    monkeypatch.setattr(Store, "read_manifest", boom)
    return json.dumps([f.problem for f in doctor.check(store)])


def _judges_listing(secret, tmp_path, monkeypatch, capsys, caplog):
    from consolidate.judges.registry import availability

    class Judge:
        api_base = None

        def judge(self, batch):  # the contract's one method
            return []

        def available(self):
            raise RuntimeError(f"boom {secret}")

    ok, why = availability(Judge(), probe=False)
    assert not ok
    return why


def _ui_error_line(secret, tmp_path, monkeypatch, capsys, caplog):
    from starlette.testclient import TestClient

    from consolidate.store.store import Store
    from consolidate.ui.server import App

    def boom(*a, **k):
        raise StoreCorrupt(f"boom {secret}", path="chroma")

    monkeypatch.setattr("consolidate.ui.reads.listing", boom)
    app = App(lambda: Store(tmp_path / "s", create=False), "t" * 32, cookie="c")
    with TestClient(app.starlette(), base_url="http://127.0.0.1") as client:
        page = client.get("/?token=" + "t" * 32)
    assert page.status_code == 503
    import html

    return html.unescape(page.text.split('id="error">', 1)[1].split("<", 1)[0])  # the line as a person reads it


DRIVERS = {
    "consolidate.cli.main:report_error": _cli_error,
    "consolidate.cli.main:report_hook_refused": _hook_refused,
    "consolidate.cli.parser:OneLineParser.error": _argument_error,
    "consolidate.agents.hooks.full:cmd_hook": _hook_failed,
    "consolidate.agents.hooks.full:_session_for_start": _session_start_log,
    "consolidate.store.worker_health:record": _worker_health,
    "consolidate.mcp.server:tool_error": _mcp_tool_error,
    "consolidate.mcp.stdio:reply_for_bad_line": _mcp_bad_line,
    "consolidate.pipeline.doctor:check": _doctor,
    "consolidate.judges.registry:availability": _judges_listing,
    "consolidate.ui.pages:error_line": _ui_error_line,
}


def _resolve(where: str):
    module, _, name = where.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_registered_sink_has_a_driver_and_goes_through_the_gate():
    assert sorted(DRIVERS) == sorted(where for where, _ in SINKS)
    for where, _ in SINKS:
        source = inspect.getsource(_resolve(where))
        assert "error_text(" in source or "redacted(" in source or "report_" in source, where


@pytest.mark.parametrize("kind", sorted(SECRETS))
@pytest.mark.parametrize("where", [where for where, _ in SINKS])
def test_no_secret_survives_a_sink(where, kind, tmp_path, monkeypatch, capsys, caplog):
    secret = SECRETS[kind]
    for name in ("CONSOLIDATE_STORE", "CONSOLIDATE_WAIT_DAYS", "CONSOLIDATE_TIME_BOX"):
        monkeypatch.setenv(name, "")
    written = DRIVERS[where](secret, tmp_path, monkeypatch, capsys, caplog)
    assert "chars>" in written or "..." in written, f"{where} did not write the error: {written!r}"
    assert_hidden(secret, written)


@pytest.mark.spawns
def test_the_installed_command_and_a_real_hook_payload_keep_the_secret_out(tmp_path):
    """The CLI's stderr line and the refused hook's line, from the installed ``consolidate``."""
    secret = SECRETS["github"]
    env = {**os.environ, "CONSOLIDATE_TIME_BOX": secret, "CONSOLIDATE_STORE": str(tmp_path / "s")}
    out = subprocess.run(["consolidate", "status"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith("error: CONSOLIDATE_TIME_BOX=")
    assert_hidden(secret, out.stdout + out.stderr)
    env_file = tmp_path / SECRETS["openai"]  # a folder given as the env file: refused, naming its path
    env_file.mkdir()
    payload = json.dumps({"hook_event_name": "SessionEnd", "session_id": "s-1", "cwd": str(tmp_path)})
    out = subprocess.run(["consolidate", "--env-file", str(env_file), "hook"], input=payload, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "consolidate hook: refused: --env-file" in out.stderr
    assert_hidden(SECRETS["openai"], out.stdout + out.stderr)


# -- every writer of an exception's text goes through the gate -----------------------------------

#: A writer allowed to render an exception without the gate, and why.
UNGATED = {
    "consolidate/rules/provider_rules.py": "the gate's own rule loader: a rule pattern's compile error, no user"
                                           " text (gating it would import the gate while it loads)",
}
_PARAMS = {"exc", "error", "err"}
_RENDERERS = {"print", "write", "log", "warning", "error", "info", "debug", "exception"}


def _ungated_renderings(tree: ast.AST):
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    scopes = [(n, n.name) for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name]
    scopes += [(n, a.arg) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               for a in n.args.args + n.args.kwonlyargs if a.arg in _PARAMS]
    for scope, name in scopes:
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            p = parents[node]
            called = p.func.id if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) else (
                p.func.attr if isinstance(p, ast.Call) and isinstance(p.func, ast.Attribute) else None)
            if not (isinstance(p, ast.FormattedValue) or isinstance(p, ast.Attribute) and p.attr in ("args", "message")
                    or called in ("str", "repr", "format", *_RENDERERS) and node in p.args):
                continue
            q = p
            while q is not None and q is not scope:
                if isinstance(q, ast.Compare) or isinstance(q, ast.Raise) and not (
                        isinstance(q.exc, ast.Call) and getattr(q.exc.func, "id", "") == "ToolError"):
                    break
                if isinstance(q, ast.Call) and getattr(q.func, "id", getattr(q.func, "attr", "")) in ("error_text", "redacted"):
                    break
                q = parents.get(q)
            else:
                yield node.lineno
            if q is scope:
                yield node.lineno


def test_every_writer_of_an_exceptions_text_goes_through_the_gate():
    found = []
    for pkg in ("consolidate", "judges"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in UNGATED or "__pycache__" in path.parts:
                continue
            found += [f"{rel}:{line}" for line in sorted(set(_ungated_renderings(ast.parse(path.read_text("utf-8")))))]
    assert found == [], "an exception's text written without consolidate.rules.redaction.error_text"


def test_the_check_sees_an_ungated_writer():
    """The source check itself: a log line, a print and a ToolError of a raw exception are caught."""
    code = ("def f(store):\n    try:\n        g()\n    except Exception as exc:\n        log(store, f'failed: {exc}')\n"
            "        print(str(exc))\n        raise ToolError(str(exc))\n")
    assert sorted(set(_ungated_renderings(ast.parse(code)))) == [5, 6, 7]
    gated = ("def f(store):\n    try:\n        g()\n    except Exception as exc:\n        log(store, f'{error_text(exc)}')\n"
             "        raise BadInput(f'bad: {exc}')\n")
    assert list(_ungated_renderings(ast.parse(gated))) == []


# -- the gate holds for any text around a secret --------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
KEYS = st.one_of(
    st.text(alphabet=_ALNUM, min_size=36, max_size=36).map(lambda t: "ghp_" + t),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).map(lambda t: "AKIA" + t),
    st.text(alphabet=_ALNUM, min_size=48, max_size=48).map(lambda t: "sk-proj-" + t),
).filter(lambda k: len(set(k[4:])) > 12)  # random enough to be key material (not "aaaa...")
AROUND = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(key=KEYS, before=AROUND, after=AROUND, typed=st.booleans())
def test_error_text_never_shows_a_key_whatever_surrounds_it(key, before, after, typed):
    shown = error_text(ConfigError(f"{before} {key} {after}"), typed=typed)
    body = key[4:]
    assert not {body[i:i + 8] for i in range(len(body) - 7) if body[i:i + 8] in shown
                and body[i:i + 8] not in before + after}, shown
    assert "\n" not in shown


@settings(max_examples=150, deadline=None)
@given(key=KEYS, words=st.lists(st.sampled_from(["ten", "minutes", "of", "wait", "x" * 30, "ëü", "分钟"]), max_size=12),
       at=st.integers(min_value=0, max_value=12))
def test_a_settings_cut_value_never_leaves_part_of_a_key_at_the_sink(key, words, at):
    """``shown_value`` cuts a long value below the gate: the cut must leave a key whole or out."""
    value = " ".join(words[:at] + [key] + words[at:])
    with pytest.raises(ConfigError) as exc:
        TIME_BOX.get({"CONSOLIDATE_TIME_BOX": value})
    assert_hidden(key, error_text(exc.value))


def test_redacted_keeps_text_without_a_secret():
    line = "CONSOLIDATE_TIME_BOX='ten minutes': not a number (seconds)"
    assert redacted(line) == line
    assert error_text(ConfigError(" a\n  b ")) == "a b" and error_text(OSError(), typed=True) == "OSError: "
    assert error_text(OSError()) == ""
    assert error_text(ConfigError("x" * 50), limit=10) == "x" * 10
