"""The chain is configuration: --judge, CONSOLIDATE_JUDGES, the store's consolidate.toml, the project's
pyproject.toml, then the default chain (a local CLI when one is on PATH, API, no-op); and the
``consolidate judges`` command that shows it without a model call."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from consolidate.cli.main import main
from consolidate.core.errors import ConfigError
from consolidate.judges import registry
from consolidate.judges.chain import JudgeChain


@pytest.fixture
def clean(monkeypatch, tmp_path):
    """No judge configuration from the environment, an empty PATH (no CLI found), a project folder
    without pyproject.toml as the working directory."""
    for var in ("CONSOLIDATE_JUDGES", "CONSOLIDATE_CLI_MODEL", "CONSOLIDATE_API_MODEL", "CONSOLIDATE_API_BASE",
                "CONSOLIDATE_JUDGE_CHILD", "CONSOLIDATE_STORE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return {"bin": bindir, "project": project, "store": project / ".memofs"}


def put_exe(bindir, name):
    exe = bindir / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)


def test_default_chain_picks_the_first_cli_on_path(clean):
    assert registry.chain_config() == (["api", "noop"], "default")
    put_exe(clean["bin"], "codex")
    assert registry.chain_specs() == ["cli:codex", "api", "noop"]
    put_exe(clean["bin"], "ollama")  # needs a model: still codex
    assert registry.chain_specs() == ["cli:codex", "api", "noop"]
    put_exe(clean["bin"], "llm")
    assert registry.chain_specs() == ["cli:llm", "api", "noop"]
    put_exe(clean["bin"], "claude")
    assert registry.chain_specs() == ["cli:claude", "api", "noop"]
    chain = registry.build_chain()
    assert isinstance(chain, JudgeChain) and chain.names == ["cli:claude", "api", "noop"]


def test_precedence_flags_env_store_pyproject_default(clean, monkeypatch):
    store, project = clean["store"], clean["project"]
    store.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.consolidate]\njudges = ["rules", "noop"]\n')
    assert registry.chain_config(store_config=store / "consolidate.toml") == (["rules", "noop"], f"{project / 'pyproject.toml'} [tool.consolidate]")
    (store / "consolidate.toml").write_text('judges = ["cli:template:mycli --x a,b", "api:openai/gpt-4o-mini"]\n')
    specs, source = registry.chain_config(store_config=store / "consolidate.toml")
    assert specs == ["cli:template:mycli --x a,b", "api:openai/gpt-4o-mini"]  # list items are not split on commas
    assert source == str(store / "consolidate.toml")
    # without the store path the store file is not read
    assert registry.chain_specs() == ["rules", "noop"]
    monkeypatch.setenv("CONSOLIDATE_JUDGES", "scripted, noop")
    assert registry.chain_config(store_config=store / "consolidate.toml") == (["scripted", "noop"], "CONSOLIDATE_JUDGES")
    assert registry.chain_config(["api,noop", "rules"], store_config=store / "consolidate.toml") == (["api", "noop", "rules"], "--judge")
    chain = registry.build_chain(["noop"], store_config=store / "consolidate.toml")
    assert chain.names == ["noop"]


def test_project_dir_and_irrelevant_files(clean, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[tool.consolidate]\njudges = "noop, rules"\n')
    assert registry.chain_specs(project_dir=other) == ["noop", "rules"]
    # a pyproject.toml without [tool.consolidate], a store file without judges, an empty list: not set
    (clean["project"] / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.other]\njudges = ["rules"]\n')
    clean["store"].mkdir()
    (clean["store"] / "consolidate.toml").write_text("time_box = 30\n")
    assert registry.chain_config(store_config=clean["store"] / "consolidate.toml") == (["api", "noop"], "default")
    (clean["store"] / "consolidate.toml").write_text("judges = []\n")
    assert registry.chain_config(store_config=clean["store"] / "consolidate.toml")[1] == "default"


@pytest.mark.parametrize("text,match", [("judges = [\n", "cannot read"), ("judges = 3\n", "must be a list"),
                                        ('judges = ["api", 1]\n', "must be a list")])
def test_malformed_store_config_is_a_config_error(clean, text, match):
    clean["store"].mkdir()
    (clean["store"] / "consolidate.toml").write_text(text)
    with pytest.raises(ConfigError, match=match) as err:
        registry.chain_specs(store_config=clean["store"] / "consolidate.toml")
    assert "consolidate.toml" in str(err.value)


def test_cli_judge_is_registered(clean):
    assert registry.installed()["cli"] == "consolidate.judges.cli:CLIJudge"
    judge = registry.load("cli:template:mycli --json")
    assert judge.name == "cli:template" and judge.argv() == ["mycli", "--json"]
    assert registry.load("cli:ollama:llama3.2:1b").model == "llama3.2:1b"


# -- consolidate judges -----------------------------------------------------------------------------


class _Models(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        data = json.dumps({"object": "list", "data": [{"id": "local"}]}).encode() if self.path == "/v1/models" else b""
        self.send_response(200 if data else 404)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def models_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def run_judges(capsys, *argv) -> tuple[int, dict]:
    code = main(["judges", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_judges_command_lists_installed_and_default_chain(clean, capsys):
    put_exe(clean["bin"], "llm")
    code, out = run_judges(capsys)
    assert code == 0
    assert {"noop", "rules", "scripted", "api", "cli"} <= set(out["installed"])
    assert out["chain_source"] == "default"
    assert [(c["spec"], c["available"]) for c in out["chain"]] == [("cli:llm", True), ("api", False), ("noop", True)]
    assert str(clean["bin"] / "llm") in out["chain"][0]["why"]
    assert "CONSOLIDATE_API_MODEL" in out["chain"][1]["why"]
    assert not clean["store"].exists()  # the store was not created or opened
    # the plain-text form says the same
    assert main(["judges"]) == 0
    text = capsys.readouterr().out
    assert "chain (from default):" in text and "ok  cli:llm" in text and "no  api" in text


def test_judges_command_reads_store_config_and_probes_the_server(clean, capsys, models_server, monkeypatch):
    store = clean["store"]
    store.mkdir()
    (store / "consolidate.toml").write_text('judges = ["cli:claude", "api", "noop"]\n')
    monkeypatch.setenv("CONSOLIDATE_API_MODEL", "openai/local")
    monkeypatch.setenv("CONSOLIDATE_API_BASE", models_server + "/v1")
    code, out = run_judges(capsys, "--store", str(store))
    assert code == 0 and out["chain_source"] == str(store / "consolidate.toml")
    claude, api, noop = out["chain"]
    assert not claude["available"] and claude["why"] == "claude not on PATH"
    assert api["available"] and "answers (1 model)" in api["why"]
    # a wrong base path: the server answers 404, so not available
    monkeypatch.setenv("CONSOLIDATE_API_BASE", models_server + "/wrong")
    _, out = run_judges(capsys, "--store", str(store))
    assert not out["chain"][1]["available"] and "HTTP 404" in out["chain"][1]["why"]
    # --no-probe: configuration only
    _, out = run_judges(capsys, "--store", str(store), "--no-probe")
    assert out["chain"][1]["available"]


def test_judges_command_dead_server_answers_fast(clean, capsys, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    monkeypatch.setenv("CONSOLIDATE_API_BASE", f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    code, out = run_judges(capsys, "--judge", "api:openai/local", "--judge", "noop")
    assert time.monotonic() - started < 3
    assert code == 0 and out["chain_source"] == "--judge"
    assert not out["chain"][0]["available"] and "did not answer within 1 s" in out["chain"][0]["why"]


def test_judges_command_hosted_model_without_key(clean, capsys, monkeypatch):
    _, out = run_judges(capsys, "--judge", "api:openai/gpt-4o-mini")
    assert not out["chain"][0]["available"] and "OPENAI_API_KEY not set" in out["chain"][0]["why"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    _, out = run_judges(capsys, "--judge", "api:openai/gpt-4o-mini")
    assert out["chain"][0]["available"]


def test_judges_command_unknown_judge_exits_2(clean, capsys):
    code, out = run_judges(capsys, "--judge", "nope,noop")
    assert code == 2
    assert out["chain"][0]["available"] is False and "unknown judge 'nope'" in out["chain"][0]["why"]
    assert out["chain"][1]["available"] is True
