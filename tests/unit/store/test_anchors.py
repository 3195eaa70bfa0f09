"""Memories anchored to code (consolidate.store.anchors): anchors recorded at write time, the hash cache in
manifest.json, drift in recall and the SessionStart context, the re-judge queue, stale memories, and
git renames, on a small fixture repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from consolidate import Store
from consolidate.store import anchors
from consolidate.pipeline.batch import run_batch
from consolidate.cli.main import main
from consolidate.store.views.recalled import recalled_context
from consolidate.pipeline.run import run_queue

from conftest import keep
from consolidate.judges.scripted import ScriptedJudge

AUTH = '''"""Auth helpers."""
import hmac


def check_token(given, expected):
    """Compare in constant time."""
    return hmac.compare_digest(given, expected)


class TokenStore:
    def refresh(self, token):
        return token + "!"


def unrelated():
    return 1
'''

APP_JS = '''export function loadConfig(path) {
  const text = readFileSync(path, "utf8");
  return JSON.parse(text);
}

function other() { return 2; }
'''

CHECK = "check_token() in src/auth.py compares tokens with hmac.compare_digest, never with =="
REFRESH = "TokenStore.refresh() in src/auth.py appends a bang to the token"
CONFIG = "loadConfig() in web/app.js parses the config file as JSON"
WHOLE = "The build reads its settings from config/settings.toml"


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"})


def make_repo(root, use_git: bool):
    (root / "src").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "config").mkdir()
    (root / "src" / "auth.py").write_text(AUTH)
    (root / "web" / "app.js").write_text(APP_JS)
    (root / "config" / "settings.toml").write_text("[build]\nmode = 'release'\n")
    if use_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "fixture")


def consolidate_notes(store, *texts, kind="constraint"):
    for t in texts:
        store.sessions.add_note("s1", t, flag=True, kind=kind)
    store.sessions.end("s1", "success")
    run_queue(store, judges=["noop"])


@pytest.fixture(params=[True, False], ids=["git", "no-git"])
def repo(tmp_path, request):
    if request.param and shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "proj"
    make_repo(root, request.param)
    store = Store(root / ".memofs", embedding="hash", project="proj")
    consolidate_notes(store, CHECK, REFRESH, CONFIG, WHOLE)
    yield root, store, request.param
    store.close()


def ids_by_text(store):
    return {r["document"]: r["id"] for r in store.longterm().with_status("active")}


def recall_lines(store, query, k=4):
    hits = anchors.mark_hits(store, store.longterm().search(query, k=k))
    from consolidate.model.report import render_memory

    return {h["document"]: render_memory(h["document"], h["metadata"]) for h in hits}


def touch_later(path):
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


@pytest.mark.spawns
def test_anchors_are_recorded_with_symbol_hashes_and_cached_in_the_manifest(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    section = store.read_manifest()["anchors"]
    got = {m: [(p, s) for p, s, _h in section["memories"][m]] for m in section["memories"]}
    assert got[ids[CHECK]] == [("src/auth.py", "check_token")]
    assert got[ids[REFRESH]] == [("src/auth.py", "TokenStore.refresh")]
    assert got[ids[CONFIG]] == [("web/app.js", "loadConfig")]
    assert got[ids[WHOLE]] == [("config/settings.toml", None)]
    f = section["files"]["src/auth.py"]
    assert f["size"] == len(AUTH) and set(f["symbols"]) == {"check_token", "TokenStore.refresh"}
    # the memory's own metadata carries its anchors too
    meta = store.longterm().get([ids[CHECK]])[ids[CHECK]]["metadata"]
    assert json.loads(meta["anchors"])[0]["symbol"] == "check_token"
    assert anchors.check(store.path) == {}  # nothing drifted on an unchanged tree


@pytest.mark.spawns
def test_editing_an_anchored_function_drifts_only_its_memories(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("return hmac.compare_digest(given, expected)", "return given == expected"))
    touch_later(p)
    lines = recall_lines(store, "token comparison check_token", k=4)
    assert lines[CHECK].endswith("] [drifted: src/auth.py]")
    assert "drifted" not in lines[REFRESH]  # same file, another symbol: unchanged
    section = store.read_manifest()["anchors"]
    assert set(section["drifted"]) == {ids[CHECK]}  # the re-judge queue
    # the SessionStart context marks it too
    text = recalled_context(store.path)
    assert f"{CHECK} [high, observed-success, " in text
    assert any(line.startswith(f"- {CHECK}") and line.endswith("[drifted: src/auth.py]") for line in text.splitlines())


@pytest.mark.spawns
def test_an_unrelated_edit_or_a_touch_is_not_drift(repo):
    root, store, _ = repo
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("return 1", "return 2"))
    touch_later(p)
    j = root / "web" / "app.js"
    touch_later(j)  # mtime only: hashed again, same content
    assert anchors.check(store.path) == {}
    section = store.read_manifest()["anchors"]
    assert section["files"]["web/app.js"]["mtime_ns"] == j.stat().st_mtime_ns  # cache refreshed
    assert section["drifted"] == {}


@pytest.mark.spawns
def test_whole_file_anchor_and_javascript_symbol_drift(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    (root / "config" / "settings.toml").write_text("[build]\nmode = 'debug'\n")
    j = root / "web" / "app.js"
    j.write_text(APP_JS.replace("JSON.parse(text)", "JSON.parse(text.trim())"))
    touch_later(j)
    drift = anchors.check(store.path)
    assert drift == {ids[WHOLE]: {"drifted": ["config/settings.toml"], "stale": []},
                     ids[CONFIG]: {"drifted": ["web/app.js"], "stale": []}}


@pytest.mark.spawns
def test_a_deleted_file_makes_its_memories_stale_and_leaves_them_out_of_context(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    (root / "web" / "app.js").unlink()
    lines = recall_lines(store, "parse the config file loadConfig", k=4)
    assert lines[CONFIG].endswith("[stale: web/app.js gone]")
    assert ids[CONFIG] in store.read_manifest()["anchors"]["stale"]
    text = recalled_context(store.path)
    assert CONFIG not in text and CHECK in text


@pytest.mark.spawns
def test_a_renamed_file_keeps_its_anchor_in_git(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "proj"
    make_repo(root, True)
    store = Store(root / ".memofs", embedding="hash", project="proj")
    consolidate_notes(store, CHECK, REFRESH)
    ids = ids_by_text(store)
    git(root, "mv", "src/auth.py", "src/security.py")  # staged rename
    assert anchors.check(store.path) == {}
    assert store.read_manifest()["anchors"]["renamed"] == {"src/auth.py": "src/security.py"}
    git(root, "commit", "-qm", "rename")
    git(root, "mv", "src/security.py", "src/sec.py")
    git(root, "commit", "-qm", "rename again")  # committed renames, chained
    lines = recall_lines(store, "check_token compare tokens")
    assert "drifted" not in lines[CHECK] and "stale" not in lines[CHECK]
    # an edit at the new path is drift, shown where the file is now
    p = root / "src" / "sec.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected"))
    touch_later(p)
    assert anchors.check(store.path)[ids[CHECK]] == {"drifted": ["src/sec.py"], "stale": []}
    store.close()


@pytest.mark.spawns
def test_without_git_a_moved_file_is_stale(tmp_path):
    root = tmp_path / "proj"
    make_repo(root, False)
    store = Store(root / ".memofs", embedding="hash", project="proj")
    consolidate_notes(store, CHECK)
    (root / "src" / "auth.py").rename(root / "src" / "security.py")
    ids = ids_by_text(store)
    assert anchors.check(store.path) == {ids[CHECK]: {"drifted": [], "stale": ["src/auth.py"]}}
    store.close()


@pytest.mark.spawns
def test_batch_rejudge_drifted_keeps_reanchors_or_archives(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected")
                 .replace('return token + "!"', 'return token + "?"'))
    touch_later(p)
    judge = ScriptedJudge({"check_token": {"verdict": "drop", "reason": "the code no longer does this"},
                           "TokenStore": keep(REFRESH, "constraint")})
    r = run_batch(store, judges=[judge], rejudge=True, drifted=True, out=open(os.devnull, "w"))
    assert r.drift == {"drifted": 2, "stale": 0}
    assert r.rejudged_drifted == {"considered": 2, "kept": 1, "dropped": 1, "unjudged": 0}
    left = ids_by_text(store)
    assert CHECK not in left and REFRESH in left
    section = store.read_manifest()["anchors"]
    assert section["drifted"] == {} and ids[CHECK] not in section["memories"]
    # kept: re-anchored on today's code, so no drift any more
    assert anchors.check(store.path) == {}
    assert any(json.loads(x).get("event") == "memory.rejudged"
               for x in store.events_path.read_text(encoding="utf-8").splitlines())


@pytest.mark.spawns
def test_batch_rejudge_drifted_with_no_judge_leaves_the_queue(repo):
    root, store, _ = repo
    ids = ids_by_text(store)
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected"))
    touch_later(p)
    r = run_batch(store, judges=["noop"], rejudge=True, drifted=True, out=open(os.devnull, "w"))
    assert r.rejudged_drifted["unjudged"] == 1
    assert set(store.read_manifest()["anchors"]["drifted"]) == {ids[CHECK]}
    assert CHECK in ids_by_text(store)


@pytest.mark.spawns
def test_cli_recall_shows_drift_and_batch_flag(repo, capsys):
    root, store, _ = repo
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected"))
    touch_later(p)
    store.close()
    s = ["--store", str(root / ".memofs"), "--embedding", "hash"]
    assert main(["recall", "check_token compares tokens", "-k", "4", "--min-similarity", "0", *s]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith(CHECK) and line.endswith("[drifted: src/auth.py]") for line in out.splitlines())
    assert main(["batch", "--rejudge", "--drifted", "--judge", "noop", *s]) == 0
    assert "1 drifted" in capsys.readouterr().out


def test_named_symbols_and_definitions():
    assert anchors.named_symbols("call `check_token` then Store.close() in src/a.py:load_all; "
                                 "the function parse_args") == ["Store.close", "check_token", "load_all", "parse_args"]
    go = "package x\n\nfunc Parse(s string) int {\n\treturn len(s)\n}\n\nfunc Other() {}\n"
    assert anchors.generic_symbols(go)["Parse"] == "func Parse(s string) int {\n\treturn len(s)\n}"
    rs = "pub fn load(p: &str) -> String {\n    let s = \"}\";\n    s.into()\n}\n"
    assert anchors.generic_symbols(rs)["load"].endswith("s.into()\n}")
    py = anchors.python_symbols("@cache\ndef f():\n    return 1\n\nclass A:\n    def g(self):\n        pass\n")
    assert py["f"] == "@cache\ndef f():\n    return 1" and py["A.g"].strip() == "def g(self):\n        pass"
    assert anchors.match_symbol("refresh", ["TokenStore.refresh", "x"]) == "TokenStore.refresh"
    assert anchors.match_symbol("refresh", ["A.refresh", "B.refresh"]) is None


def test_paths_outside_the_project_are_never_anchored(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.py").write_text("x = 1\n")
    os.symlink(tmp_path / "secret.py", root / "link.py")
    assert anchors.find_anchors(root, "see ../secret.py and /etc/passwd.txt and link.py") == []


@pytest.mark.spawns
def test_the_installed_hook_prints_drift_on_session_start(repo):
    """A real SessionStart payload piped into `consolidate hook`, as Claude Code runs it."""
    import sys

    root, store, _ = repo
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected"))
    touch_later(p)
    (root / "web" / "app.js").unlink()
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "next", "cwd": str(root),
                          "source": "startup"})
    out = subprocess.run([sys.executable, "-m", "consolidate", "hook"], input=payload, capture_output=True,
                         text=True, cwd=str(root), timeout=60, env={**os.environ, "CONSOLIDATE_STORE": ""})
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert any(line.startswith(f"- {CHECK}") and line.endswith("[drifted: src/auth.py]") for line in lines)
    assert not any(CONFIG in line for line in lines)  # stale: left out
    assert any(line.startswith(f"- {REFRESH}") and "drifted" not in line for line in lines)


@pytest.mark.spawns
def test_status_counts_anchored_drifted_and_stale(repo, capsys):
    root, store, _ = repo
    (root / "web" / "app.js").unlink()
    anchors.check(store.path)
    store.close()
    assert main(["status", "--store", str(root / ".memofs"), "--embedding", "hash"]) == 0
    assert "anchored to code: 4 memories; 0 drifted (queued for `consolidate batch --rejudge --drifted`), 1 stale" \
        in capsys.readouterr().out


@pytest.mark.spawns
def test_mcp_recall_shows_drift(repo):
    import anyio
    from mcp import Client

    from consolidate.mcp.server import build_server

    root, store, _ = repo
    p = root / "src" / "auth.py"
    p.write_text(AUTH.replace("hmac.compare_digest(given, expected)", "given == expected"))
    touch_later(p)

    async def main_():
        async with Client(build_server(store, spawn=None)) as client:
            got = (await client.call_tool("recall", {"query": "check_token compares tokens", "k": 4})).structured_content
            texts = [m["text"] for m in got["memories"]]
            assert any(t.startswith(CHECK) and t.endswith("[drifted: src/auth.py]") for t in texts)
            assert not any(t.startswith(REFRESH) and "drifted" in t for t in texts)

    anyio.run(main_)


def test_hundreds_of_anchored_memories_with_minilm(tmp_path):
    """A store of 300 memories (MiniLM), 240 of them anchored to 60 functions of a fixture project:
    one function edited, and only the memories about it drift, in recall and in the batch check."""
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    for i in range(20):
        body = "\n\n".join(f"def handler_{i}_{j}(request):\n    return request.get('v{j}', {i})\n" for j in range(3))
        (root / "lib" / f"views{i}.py").write_text(body)
    store = Store(root / ".memofs", project="proj")
    topics = ["caching", "retries", "logging", "validation"]
    for i in range(20):
        for j in range(3):
            for t in topics:
                store.sessions.add_note(f"s{i}", f"handler_{i}_{j}() in lib/views{i}.py handles {t} for request {i}-{j}",
                                        flag=True, kind="fact")
    for n in range(60):
        store.sessions.add_note("plain", f"Team decision {n}: release train number {n} ships on a Tuesday", flag=True,
                                kind="fact")
    for i in range(20):
        store.sessions.end(f"s{i}", "success")
    store.sessions.end("plain", "success")
    run_queue(store, judges=["noop"])
    section = store.read_manifest()["anchors"]
    assert len(section["memories"]) == 240 and len(section["files"]) == 20
    assert anchors.check(store.path) == {}
    p = root / "lib" / "views7.py"
    p.write_text(p.read_text().replace("request.get('v1', 7)", "request.get('v1', 8)"))
    touch_later(p)
    drift = anchors.check(store.path)
    about = {m for m, a in section["memories"].items() if a[0][1] == "handler_7_1"}
    assert set(drift) == about and len(about) == 4
    from consolidate.pipeline.batch import check_drift

    assert check_drift(store) == {"drifted": 4, "stale": 0}
    lines = recall_lines(store, "handler_7_1 caching for request 7-1", k=8)
    drifted = [d for d, line in lines.items() if line.endswith("[drifted: lib/views7.py]")]
    assert drifted and all("handler_7_1()" in d for d in drifted)
    store.close()
