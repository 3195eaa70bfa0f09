"""Which store a call means (issue 28, concern 2): every surface of consolidate/store/resolve.py's
SURFACES driven through the installed ``consolidate`` command (real hook payloads on stdin, the MCP
server over stdio, the plugin's and the extension's hook commands) from nested folders of a project
(several depths, non-ASCII names in NFC and NFD, spaces), with and without the agent's project-dir
variable, with a store at the root and with none (the git root); afterwards exactly one store exists
and it holds the session. Plus the pure function under Hypothesis, and an AST check that no module
but the owner turns options, environment or working folder into a store path.

The first ``consolidate`` command and the first MCP server of each test function run as the installed
command; the others as the same command forked from tests/support/hooks_fast.py's server (its own
process, argv, environment, working folder and stdin; issue 30: the interpreter's start-up is not what
these tests pin). The plugin's, the extension's and install-hook's commands run as written, through bash;
in a test function's first case their ``consolidate`` and ``consolidate-file-recall`` are the installed
console scripts, in its other cases the PATH lookup finds :func:`_shims`' same-named commands, which fork
from that server. Likewise the file-recall entry (``python -m consolidate.agents.hooks.file_hook``,
``consolidate-file-recall``): installed in the first case, forked in the others. (A forked command still
imports consolidate's own modules: about 0.16 s of CPU against 0.22-0.25 s for the installed one.)

The reported failures, as single cases: a SessionEnd sent from ``src/deep`` made a second store
there (CLAUDE_PROJECT_DIR ignored); ``consolidate --store X install-hook claude-code`` dropped
``--store`` from the hook command it wrote.
"""

from __future__ import annotations

import ast
import atexit
import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hooks_fast
from consolidate import Store
from consolidate.store import resolve
from paths import REPO

pytestmark = pytest.mark.integration

ROOT = REPO
BIN = str(Path(sys.executable).parent)
CONSOLE = str(Path(BIN) / "consolidate")

#: Nested folders of a project a call comes from: depths 1 to 4, accents in NFC and in NFD, CJK,
#: Cyrillic, Arabic, spaces.
NESTED = ["src/deep", "a/b/c/d", unicodedata.normalize("NFC", "dossier été/sous-dossier"),
          unicodedata.normalize("NFD", "dossier été/sous-dossier"), "名前/深い フォルダ", "проект/модуль",
          "with space/and more spaces", "مجلد/فرعي"]
#: How the project is marked: a store at its root (no git, no variable); a git work tree and no
#: store yet; the agent CLI's project-dir variable and nothing else.
LAYOUTS = ["store", "git", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]


# --- helpers -----------------------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONSOLIDATE_", "CLAUDE_PLUGIN_OPTION_")) and k not in resolve.PROJECT_DIR_VARIABLES}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update({"CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def _project(tmp_path: Path, layout: str, nested: str) -> tuple[Path, Path, dict[str, str]]:
    """``(project root, nested folder, environment)`` for ``layout``; the root is below a folder
    with a non-ASCII name, the nested folder exists."""
    root = tmp_path / "projét" / "app"
    folder = root / nested
    folder.mkdir(parents=True)
    env = _env()
    if layout == "store":
        Store(resolve.in_folder(root), embedding="hash", project="app").close()
    elif layout == "git":
        (root / ".git").mkdir()  # what git init leaves that marks the work tree's root
    else:
        env[layout] = str(root)
    return root, folder, env


def _stores(top: Path) -> list[Path]:
    """Every store folder under ``top``: a ``.memofs`` folder, or one holding a store's files."""
    out = []
    for here, dirs, files in os.walk(top):
        if resolve.STORE_FOLDER in dirs or {"sessions.sqlite3", "queue.jsonl", "manifest.json"} & set(files):
            out.append(Path(here) / resolve.STORE_FOLDER if resolve.STORE_FOLDER in dirs else Path(here))
            dirs[:] = [d for d in dirs if d != resolve.STORE_FOLDER]
    return sorted(set(out))


#: The test functions (and the kind of process) whose first command ran as the installed command itself.
_REAL: set[tuple[str, str]] = set()


def _first_of_this_test(kind: str) -> bool:
    """True for the first ``kind`` command of each test function in this process: that one runs as the
    installed ``consolidate`` command; the others fork from tests/support/hooks_fast.py's server (the
    same command in its own process, without the interpreter's start-up: issue 30)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("[")[0].split(" ")[0]
    if (test, kind) in _REAL:
        return False
    _REAL.add((test, kind))
    return True


def _run(args: list[str], *, cwd: Path, env: dict[str, str], payload: dict | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    text = json.dumps(payload) if payload is not None else None
    if _first_of_this_test("command"):
        out = subprocess.run([CONSOLE, *args], input=text, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    else:
        out = hooks_fast.run(args, input=text, env=env, cwd=cwd, timeout=120)
    if check:
        assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out


#: What runs the file-recall entry's console script (consolidate-file-recall) in a forked process.
FILE_RECALL = "from consolidate.agents.hooks.file_hook import run; run()"
#: Same for ``python -m consolidate.agents.hooks.file_hook``.
FILE_HOOK = "import runpy; runpy.run_module('consolidate.agents.hooks.file_hook', run_name='__main__', alter_sys=True)"

#: hooks_fast's launcher, able to send code as well: ``launch.py SOCKET CODE ARGS``, CODE empty for
#: ``python -m consolidate ARGS``, else run as ``python -c CODE ARGS`` runs it (tests/support/preloaded.py).
_LAUNCHER = r"""
import json, os, signal, socket, sys
path, code, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
req = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
if code:
    req["code"] = code
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(path)
socket.send_fds(conn, [json.dumps(req).encode()], [0, 1, 2])
for fd in (0, 1, 2):
    os.close(fd)
reader = conn.makefile("rb")
pid = json.loads(reader.readline())["pid"]
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
status = json.loads(reader.readline())["status"]
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""

_shim: dict[str, str] = {}


def _forked(code: str = "") -> list[str]:
    """An argv that runs ``python -m consolidate ARGS`` (``code`` empty) or ``python -c CODE ARGS``
    forked from tests/support/hooks_fast.py's server, with the caller's streams, environment and
    working folder: append ARGS."""
    return [sys.executable, "-S", "-E", str(Path(_shims()) / "launch.py"), _shim["socket"], code]


def _shims() -> str:
    """A folder (one per test process, only read by the tests) with ``consolidate`` and
    ``consolidate-file-recall`` commands that fork from hooks_fast's server: put first on PATH, a
    command string run through bash finds them instead of the installed console scripts."""
    if "folder" not in _shim:
        socket_path = hooks_fast.command([])[4]  # [python, -S, -E, launch.py, SOCKET]: starts the server
        folder = Path(tempfile.mkdtemp(prefix="consolidate-resolver-shims-"))
        (folder / "launch.py").write_text(_LAUNCHER)
        for name, code in (("consolidate", ""), ("consolidate-file-recall", FILE_RECALL)):
            argv = [sys.executable, "-S", "-E", str(folder / "launch.py"), socket_path, code]
            (folder / name).write_text("#!/bin/sh\nexec " + shlex.join(argv) + ' "$@"\n')
            (folder / name).chmod(0o755)
        atexit.register(shutil.rmtree, folder, True)
        _shim.update(folder=str(folder), socket=socket_path)
    return _shim["folder"]


def _on_path(env: dict[str, str], real: bool) -> dict[str, str]:
    """``env`` itself for the installed commands (``real``), else with :func:`_shims` first on PATH."""
    return env if real else {**env, "PATH": _shims() + os.pathsep + env["PATH"]}


def _process(argv: list[str], code: str, *, real: bool, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)`` if ``real``,
    else the same command forked: ``code`` is what ``argv`` (a command without arguments) runs."""
    run = argv if real else _forked(code)
    return subprocess.run(run, capture_output=True, text=True, timeout=120, **kwargs)


def _notes(store: Path, sid: str) -> list[str]:
    s = Store(store, embedding="hash", create=False)
    try:
        return [n.content for n in s.sessions.notes(sid)]
    finally:
        s.close()


def _end(store: Path, sid: str) -> dict | None:
    s = Store(store, embedding="hash", create=False)
    try:
        return s.sessions.session_end(sid)
    finally:
        s.close()


def _transcript(path: Path, text: str) -> str:
    path.write_text(json.dumps({"type": "assistant", "uuid": "a1", "message": {"content": [
        {"type": "text", "text": text}]}}) + "\n")
    return str(path)


NOTE = "the integration tests need the Postgres container on port 5433 started first"
HARVESTED = ("The integration tests need the Postgres container from docker-compose.test.yml running first,"
             " because the fixtures connect to port 5433 and nothing else provides it.")


def _cases(shift: int = 0):
    """(layout, nested folder) pairs: every layout once, the folders rotated by ``shift``."""
    return [(layout, NESTED[(i + shift) % len(NESTED)]) for i, layout in enumerate(LAYOUTS)]


# --- the session flows of each agent CLI: every hook event from a nested folder -------------------------


def _claude_events(sid: str, folder: Path, transcript: str) -> list[tuple[list[str], dict]]:
    base = {"session_id": sid, "transcript_path": transcript, "cwd": str(folder)}
    return [(["hook", "--no-worker"], {**base, "hook_event_name": "SessionStart", "source": "startup"}),
            (["hook", "--no-worker"], {**base, "hook_event_name": "PreToolUse", "tool_name": "Read",
                                       "tool_input": {"file_path": str(folder / "auth.py")}}),
            (["hook", "--no-worker", "--harvest"], {**base, "hook_event_name": "PreCompact", "trigger": "manual",
                                                    "custom_instructions": ""}),
            (["hook", "--no-worker"], {**base, "hook_event_name": "Stop", "stop_hook_active": False}),
            (["hook", "--no-worker"], {**base, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})]


def _gemini_events(sid: str, folder: Path, transcript: str) -> list[tuple[list[str], dict]]:
    base = {"session_id": sid, "transcript_path": transcript, "cwd": str(folder), "timestamp": "2026-01-01T00:00:00Z"}
    hook = ["hook", "--no-worker", "--output", "gemini"]
    return [(hook, {**base, "hook_event_name": "SessionStart", "source": "startup"}),
            (hook, {**base, "hook_event_name": "BeforeTool", "tool_name": "read_file",
                    "tool_input": {"absolute_path": str(folder / "auth.py")}}),
            (hook, {**base, "hook_event_name": "PreCompress", "trigger": "auto"}),
            (hook, {**base, "hook_event_name": "SessionEnd", "reason": "exit"})]


def _codex_events(sid: str, folder: Path, transcript: str) -> list[tuple[list[str], dict]]:
    base = {"session_id": sid, "transcript_path": None, "cwd": str(folder)}
    return [(["hook", "--no-worker"], {**base, "hook_event_name": "SessionStart", "source": "startup"}),
            (["hook", "--no-worker"], {**base, "hook_event_name": "Stop", "model": "gpt-5"}),
            (["hook", "--no-worker"], {"type": "agent-turn-complete", "thread-id": sid, "turn-id": "1",
                                       "cwd": str(folder), "input-messages": ["hi"], "last-assistant-message": "ok"})]


AGENT_FLOWS = {"claude-code": _claude_events, "gemini-cli": _gemini_events, "codex": _codex_events}


@pytest.mark.parametrize("agent, layout, nested", [(agent, *case) for i, agent in enumerate(sorted(AGENT_FLOWS))
                                                   for case in _cases(4 * i)])
def test_every_hook_event_from_a_nested_folder_goes_to_the_one_project_store(tmp_path, agent, layout, nested):
    """The fast and the full hook (surfaces fast-hook, full-hook) and ``note`` (cli): a session whose
    every event, and a note, comes from a nested folder of the project ends up in one store, the
    project's, with its note (and, for Claude Code, the note harvested at PreCompact) and its end."""
    root, folder, env = _project(tmp_path, layout, nested)
    sid = f"{agent}-{LAYOUTS.index(layout)}"
    transcript = _transcript(tmp_path / "t.jsonl", HARVESTED)
    events = AGENT_FLOWS[agent](sid, folder, transcript)
    _run(*events[0][:1], cwd=folder, env=env, payload=events[0][1])
    _run(["note", "--session", sid, NOTE], cwd=folder, env=env)
    for args, payload in events[1:]:
        _run(args, cwd=folder, env=env, payload=payload)
    stores = _stores(tmp_path)
    assert stores == [root / resolve.STORE_FOLDER], stores
    notes = _notes(stores[0], sid)
    assert NOTE in notes
    if agent == "claude-code":
        assert any("Postgres container" in n and n != NOTE for n in notes), notes
    end = _end(stores[0], sid)
    assert end is not None and end["outcome"] == "success"


@pytest.mark.parametrize("variable", resolve.PROJECT_DIR_VARIABLES)
def test_reported_a_session_end_from_src_deep_goes_to_the_project_store(tmp_path, variable):
    """The reported case: SessionStart at the root, the SessionEnd sent from ``src/deep`` with the
    project-dir variable set, nothing else: no second store in src/deep, the end in the root's."""
    root = tmp_path / "proj"
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    env = _env(**{variable: str(root)})
    base = {"session_id": "s-deep", "transcript_path": str(root / "t.jsonl")}
    _run(["hook", "--no-worker"], cwd=root, env=env, payload={**base, "cwd": str(root), "hook_event_name": "SessionStart"})
    _run(["note", "--session", "s-deep", NOTE], cwd=deep, env=env)
    _run(["hook", "--no-worker"], cwd=deep, env=env,
         payload={**base, "cwd": str(deep), "hook_event_name": "SessionEnd", "reason": "exit"})
    assert _stores(tmp_path) == [root / ".memofs"]
    assert _notes(root / ".memofs", "s-deep") == [NOTE]
    assert _end(root / ".memofs", "s-deep")["status"] == "queued"
    assert (root / ".memofs" / "queue.jsonl").exists(), "the fast hook queued it"


@pytest.mark.parametrize("layout, nested", _cases(6))
def test_plain_hook_form_without_a_payload_from_a_nested_folder(tmp_path, layout, nested):
    """``consolidate hook --session S`` (no JSON, so no ``cwd``) run in a nested folder: the working
    folder is the start, and the end goes to the project's store (surface full-hook)."""
    root, folder, env = _project(tmp_path, layout, nested)
    _run(["hook", "--session", "plain-1", "--no-worker"], cwd=folder, env=env)
    assert _stores(tmp_path) == [root / ".memofs"]
    assert _end(root / ".memofs", "plain-1")["status"] == "queued"


# --- --store before and after the command --------------------------------------------------------------


@pytest.mark.parametrize("before", [True, False])
@pytest.mark.parametrize("command", ["note", "hook", "hook --harvest", "end"])
def test_store_option_before_or_after_the_command(tmp_path, command, before):
    """``--store X`` before the command or after it names the same store, whatever the payload's
    ``cwd`` and the project-dir variable say (surfaces cli, fast-hook, full-hook)."""
    root, folder, env = _project(tmp_path, "CLAUDE_PROJECT_DIR", "src/deep")
    chosen = tmp_path / "chosen store"
    Store(chosen, embedding="hash").close()
    words = command.split()
    rest = {"note": ["--session", "o-1", NOTE], "end": ["--session", "o-1", "--outcome", "success"]}.get(words[0], ["--no-worker"])
    store_args = ["--store", str(chosen)]
    args = store_args + words + rest if before else words + store_args + rest
    payload = ({"session_id": "o-1", "cwd": str(folder), "hook_event_name": "SessionEnd", "reason": "exit"}
               if words[0] == "hook" else None)
    if words[0] == "end":
        _run(["note", "--session", "o-1", NOTE, "--store", str(chosen)], cwd=folder, env=env)
    _run(args, cwd=folder, env=env, payload=payload)
    assert _stores(tmp_path) == [chosen]
    if words[0] == "note":
        assert _notes(chosen, "o-1") == [NOTE]
    else:
        assert _end(chosen, "o-1") is not None


# --- the other surfaces ---------------------------------------------------------------------------------


@pytest.mark.parametrize("layout, nested", _cases(2))
def test_idle_run_and_worker_from_a_nested_folder(tmp_path, layout, nested):
    """``consolidate run --session S`` (the fast idle run) and ``consolidate worker`` started in a
    nested folder work on the project's store (surfaces idle-run, worker)."""
    root, folder, env = _project(tmp_path, layout, nested)
    _run(["hook", "--no-worker"], cwd=root, env=env,
         payload={"session_id": "idle", "cwd": str(root), "hook_event_name": "SessionEnd", "reason": "exit"})
    out = _run(["run", "--session", "idle"], cwd=folder, env=env)
    assert out.stdout.startswith("session idle (success)") and "0 notes" in out.stdout
    _run(["note", "--session", "w-1", NOTE], cwd=folder, env=env)
    _run(["end", "--session", "w-1", "--outcome", "success"], cwd=folder, env=env)
    _run(["worker", "--judge", "noop", "--time-box", "60"], cwd=folder, env=env)
    assert _stores(tmp_path) == [root / ".memofs"]
    assert _end(root / ".memofs", "idle")["status"] not in ("queued", "running")
    assert _end(root / ".memofs", "w-1")["status"] not in ("queued", "running")


def _mcp_note(cwd: Path, env: dict[str, str], args: list[str], content: str) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run():
        argv = [CONSOLE, *args] if _first_of_this_test("mcp") else hooks_fast.command(args)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("note", {"content": content, "session_id": "mcp-1"})
                assert not result.is_error, result

    anyio.run(run)


@pytest.mark.parametrize("layout, nested", [("git", NESTED[3]), ("CLAUDE_PROJECT_DIR", NESTED[4]), ("store", NESTED[0])])
def test_mcp_server_started_in_a_nested_folder(tmp_path, layout, nested):
    """``consolidate mcp`` started in a nested folder writes the ``note`` tool's note to the project's
    store (surface mcp)."""
    root, folder, env = _project(tmp_path, layout, nested)
    _mcp_note(folder, env, ["mcp"], NOTE)
    assert _stores(tmp_path) == [root / ".memofs"]
    assert _notes(root / ".memofs", "mcp-1") == [NOTE]


def _command(manifest: Path, event: str) -> str:
    return json.loads(manifest.read_text())["hooks"][event][0]["hooks"][0]["command"]


@pytest.mark.parametrize("nested", [NESTED[0], NESTED[3], NESTED[6]])
def test_plugin_relative_store_option_is_taken_from_the_project_folder(tmp_path, nested):
    """The Claude Code plugin's ``store`` option, relative, names a folder of the project, not of
    the hook's working folder (surface plugin; the plugin's own hook command, its PATH lookup)."""
    root, folder, env = _project(tmp_path, "CLAUDE_PROJECT_DIR", nested)
    plugin = ROOT / "plugins" / "consolidate"
    env.update(CLAUDE_PLUGIN_ROOT=str(plugin), CLAUDE_PLUGIN_OPTION_STORE="memory/store",
               CLAUDE_PLUGIN_OPTION_EMBEDDING="hash")
    del env["CONSOLIDATE_EMBEDDING"]
    env = _on_path(env, _first_of_this_test("bash"))
    base = {"session_id": "plug-1", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(folder)}
    for event, extra in (("SessionStart", {"source": "startup"}), ("SessionEnd", {"reason": "exit"})):
        command = _command(plugin / "hooks" / "hooks.json", event).replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
        out = subprocess.run(["bash", "-c", command.replace("hook", "hook --no-worker", 1)],
                             input=json.dumps({**base, "hook_event_name": event, **extra}), capture_output=True,
                             text=True, env=env, cwd=folder, timeout=120)
        assert out.returncode == 0, out.stderr
    assert _stores(tmp_path) == [root / "memory" / "store"]
    assert _end(root / "memory" / "store", "plug-1") is not None


@pytest.mark.parametrize("nested", [NESTED[1], NESTED[2], NESTED[5]])
def test_extension_relative_store_setting_is_taken_from_the_project_folder(tmp_path, nested):
    """The Gemini CLI extension's store setting (its .env), relative, names a folder of the project
    (surface extension: hooks/hooks.json's command as Gemini CLI runs it)."""
    root, folder, env = _project(tmp_path, "GEMINI_PROJECT_DIR", nested)
    ext = tmp_path / "home" / ".gemini" / "extensions" / "consolidate"
    ext.mkdir(parents=True)
    (ext / ".env").write_text('CONSOLIDATE_STORE="gemini store"\nCONSOLIDATE_EMBEDDING="hash"\n')
    env = _on_path(env, _first_of_this_test("bash"))
    base = {"session_id": "ext-1", "transcript_path": str(tmp_path / "none.json"), "cwd": str(folder),
            "timestamp": "2026-01-01T00:00:00Z"}
    for event, extra in (("SessionStart", {"source": "startup"}), ("SessionEnd", {"reason": "exit"})):
        command = _command(ROOT / "hooks" / "hooks.json", event)
        command = command.replace("${extensionPath}", str(ext)).replace("${/}", "/").replace("hook", "hook --no-worker", 1)
        out = subprocess.run(["bash", "-c", command], input=json.dumps({**base, "hook_event_name": event, **extra}),
                             capture_output=True, text=True, env=env, cwd=folder, timeout=120)
        assert out.returncode == 0, out.stderr
    assert _stores(tmp_path) == [root / "gemini store"]
    assert _end(root / "gemini store", "ext-1") is not None


@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli", "codex"])
@pytest.mark.parametrize("before", [True, False])
def test_install_hook_carries_the_store_option_before_or_after_the_command(tmp_path, agent, before):
    """The reported case: ``consolidate --store X install-hook AGENT`` wrote a hook command without
    ``--store``. Given before or after the command, relative to the working folder, the hook command
    (and the MCP command it prints) carries the absolute store, and so the Chroma URL; the store
    options given before the command and the settings of an ``--env-file`` are carried too (surface
    install-hook)."""
    folder = tmp_path / "wörk dir" / "sub"
    folder.mkdir(parents=True)
    given = ["--store", "../my store", "--chroma-url", "http://127.0.0.1:9"]
    env_file = tmp_path / "settings.env"
    env_file.write_text("CONSOLIDATE_JUDGES=noop\n")
    glob = ["--env-file", str(env_file), "--embedding", "hash", "--project", "my-proj"]
    args = (glob + given + ["install-hook", agent] if before else glob + ["install-hook", agent] + given)
    out = _run(args + ["--dry-run"], cwd=folder, env=_env())
    expected = str(tmp_path / "wörk dir" / "my store")
    commands = [line for line in out.stdout.splitlines() if '"command":' in line]
    assert commands, out.stdout
    for line in commands:
        tokens = shlex.split(json.loads("{" + line.lstrip("+ ").rstrip(",") + "}")["command"])
        assert tokens[tokens.index("--store") + 1] == expected, line
        assert tokens[tokens.index("--embedding") + 1] == "hash" and tokens[tokens.index("--project") + 1] == "my-proj"
        assert tokens[tokens.index("--chroma-url") + 1] == "http://127.0.0.1:9" and tokens[tokens.index("--judge") + 1] == "noop"
    mcp = next(line for line in out.stdout.splitlines() if line.startswith("MCP server with the same store:"))
    assert shlex.split(mcp.split(":", 1)[1])[-10:] == ["--store", expected, "--chroma-url", "http://127.0.0.1:9",
                                                      "--project", "my-proj", "--embedding", "hash", "--judge", "noop"]
    assert _stores(tmp_path) == []


@pytest.mark.parametrize("layout, nested", _cases(5))
def test_python_api_store_without_a_path(tmp_path, layout, nested):
    """``Store()`` without a path, in a nested folder: the project's store (surface python-api)."""
    root, folder, env = _project(tmp_path, layout, nested)
    code = "from consolidate import Store; s = Store(embedding='hash'); s.sessions.add_note('py-1', 'x'); print(s.path)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == root / ".memofs"
    assert _stores(tmp_path) == [root / ".memofs"]


# --- a second review's cases: no folder made from a variable, one store for a project dir below a store,
#     a nested repository, symlinks; --env-file after the command -------------------------------------


def _session(sid: str, folder: Path, env: dict[str, str], *, cwd: Path | None = None) -> None:
    """A hook SessionStart, a ``note`` and a hook SessionEnd, each with ``folder`` as the payload's
    ``cwd`` and the process's working folder (``cwd`` when given)."""
    base = {"session_id": sid, "cwd": str(folder), "transcript_path": str(folder / "none.jsonl")}
    _run(["hook", "--no-worker"], cwd=cwd or folder, env=env, payload={**base, "hook_event_name": "SessionStart"})
    _run(["note", "--session", sid, NOTE], cwd=cwd or folder, env=env)
    _run(["hook", "--no-worker"], cwd=cwd or folder, env=env,
         payload={**base, "hook_event_name": "SessionEnd", "reason": "exit"})


def _one_store_holds(tmp_path: Path, store: Path, sid: str) -> None:
    assert _stores(tmp_path) == [store]
    assert _notes(store, sid) == [NOTE]
    assert _end(store, sid) is not None


@pytest.mark.parametrize("variable", resolve.PROJECT_DIR_VARIABLES)
@pytest.mark.parametrize("target", ["ghost", "ghost/deeper", "a file"])
def test_a_project_dir_naming_no_folder_is_ignored_and_no_folder_is_made(tmp_path, variable, target):
    """F1: the variable naming a missing folder (or a file) made that folder and a store in it; it is
    ignored, the call falls back to the next rule (here the git root), and nothing is created there."""
    root, folder, env = _project(tmp_path, "git", "src/deep")
    named_path = tmp_path / target
    if target == "a file":
        named_path.write_text("not a folder\n")
    env[variable] = str(named_path)
    _session("ghost-1", folder, env)
    _one_store_holds(tmp_path, root / ".memofs", "ghost-1")
    assert not (tmp_path / "ghost").exists()
    assert target != "a file" or named_path.read_text() == "not a folder\n"


@pytest.mark.parametrize("on_disk", ["NFC", "NFD"])
@pytest.mark.parametrize("name", ["projet été", "café/crème brûlée", "Ångström"])
def test_a_project_dir_in_the_other_unicode_spelling_names_the_folder_on_disk(tmp_path, on_disk, name):
    """F1: the variable in the NFD spelling of an NFC folder (or the reverse) made a second folder;
    the spelling on disk is taken."""
    root = tmp_path / unicodedata.normalize(on_disk, name)
    (root / "src").mkdir(parents=True)
    other = "NFD" if on_disk == "NFC" else "NFC"
    env = _env(CLAUDE_PROJECT_DIR=str(tmp_path / unicodedata.normalize(other, name)))
    _session("nfd-1", root / "src", env)
    _one_store_holds(tmp_path, root / ".memofs", "nfd-1")
    assert [p.name for p in tmp_path.iterdir()] == [unicodedata.normalize(on_disk, name).split("/")[0]]


@pytest.mark.parametrize("variable, sub", [("CLAUDE_PROJECT_DIR", "a"), ("GEMINI_PROJECT_DIR", "a/b"),
                                           ("CLAUDE_PROJECT_DIR", NESTED[3]), ("GEMINI_PROJECT_DIR", NESTED[4])])
def test_a_project_dir_below_a_project_with_a_store_takes_that_store(tmp_path, variable, sub):
    """F2: the variable naming a subfolder of a project whose git root holds a store made a second
    store in the subfolder; the existing store at or above the project dir wins."""
    root, folder, env = _project(tmp_path, "git", sub)
    Store(resolve.in_folder(root), embedding="hash", project="app").close()
    env[variable] = str(folder)
    _session("sub-1", folder, env)
    _one_store_holds(tmp_path, root / ".memofs", "sub-1")


@pytest.mark.parametrize("mark", ["folder", "file"])
@pytest.mark.parametrize("nested", ["vendor/lib", "third party/ünïcode lib"])
def test_a_nested_repository_takes_the_enclosing_project_store(tmp_path, mark, nested):
    """F9: a repository inside the project (its own .git folder, or a submodule's .git file) got its
    own store; the enclosing project's store wins (the CLI, the hook and the MCP server)."""
    root, _, env = _project(tmp_path, "git", "src")
    Store(resolve.in_folder(root), embedding="hash", project="app").close()
    inner = root / nested
    (inner / "src").mkdir(parents=True)
    (inner / ".git").mkdir() if mark == "folder" else (inner / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    _session("nest-1", inner / "src", env)
    _mcp_note(inner, env, ["mcp"], NOTE)
    _one_store_holds(tmp_path, root / ".memofs", "nest-1")
    assert _notes(root / ".memofs", "mcp-1") == [NOTE]


def _symlinked(tmp_path: Path, kind: str, with_store: bool) -> tuple[Path, Path]:
    """``(project root, folder)``: ``into``, a folder outside the project that is a symlink to one of
    its folders (F3); ``out``, a folder of the project that is a symlink to a folder outside (F4)."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "c" / "d").mkdir(parents=True)
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    if with_store:
        Store(resolve.in_folder(root), embedding="hash", project="app").close()
    if kind == "into":
        (tmp_path / "link to c").symlink_to(root / "c")
        return root, tmp_path / "link to c" / "d"
    (root / "ext").symlink_to(tmp_path / "outside")
    return root, root / "ext" / "deep"


@pytest.mark.parametrize("with_store", [True, False])
@pytest.mark.parametrize("kind", ["into", "out"])
def test_a_folder_reached_through_a_symlink_gives_every_surface_one_store(tmp_path, kind, with_store):
    """F3/F4: the CLI (physical working folder) and the hook (the payload's logical ``cwd``) chose two
    stores. The physical path is walked first, then the logical one (the payload's ``cwd``; ``$PWD``
    as a shell sets it for a command): the CLI, the hook and the MCP server agree."""
    root, folder = _symlinked(tmp_path, kind, with_store)
    env = _env(PWD=str(folder))  # what a shell sets in a folder reached through a symlink
    _session("link-1", folder, env)
    _mcp_note(folder, env, ["mcp"], NOTE)
    _one_store_holds(tmp_path, root / ".memofs", "link-1")
    assert _notes(root / ".memofs", "mcp-1") == [NOTE]


def test_the_resolver_walks_the_physical_then_the_logical_path(tmp_path, monkeypatch):
    """The pure function for F3/F4: a payload ``cwd`` and the same folder as a command's working
    folder (with and without ``$PWD``) resolve alike; a stale ``$PWD`` is not used."""
    root, into = _symlinked(tmp_path, "into", True)
    _, out = _symlinked(tmp_path / "second", "out", True)
    for folder, project in ((into, root), (out, tmp_path / "second" / "proj")):
        expected = (str(project / ".memofs"), "enclosing")
        assert resolve.resolve(cwd=str(folder), environ={}) == expected
        monkeypatch.chdir(folder)
        assert resolve.resolve(environ={"PWD": str(folder)}) == expected
        assert resolve.resolve(environ={"PWD": str(tmp_path)}) == resolve.resolve(environ={})
    assert resolve.walks(str(into)) == [str(root / "c" / "d"), str(into)]


def test_a_missing_project_dir_falls_back_and_creates_nothing(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    ghost = str(tmp_path / "ghost")
    assert resolve.project_dir({"CLAUDE_PROJECT_DIR": ghost}) is None
    assert resolve.project_dir({"CLAUDE_PROJECT_DIR": ghost, "GEMINI_PROJECT_DIR": str(tmp_path)}) == str(tmp_path)
    assert resolve.resolve(cwd=str(tmp_path / "src"), environ={"CLAUDE_PROJECT_DIR": ghost}) == (
        str(tmp_path / ".memofs"), "git")
    assert resolve.resolve(cwd=str(tmp_path / "src"), environ={"CONSOLIDATE_STORE": "s", "CLAUDE_PROJECT_DIR": ghost}) == (
        str(tmp_path / "s"), "setting")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "src"]


@pytest.mark.parametrize("option", ["--env-file", "--env-file-if-exists"])
@pytest.mark.parametrize("before", [True, False])
def test_env_file_works_before_or_after_the_command(tmp_path, option, before):
    """``--env-file`` after the command failed with "unrecognized arguments" while --help lists it
    among the global options; it works like ``--store`` there."""
    folder = tmp_path / "work"
    folder.mkdir()
    chosen = tmp_path / "from the env file"
    env_file = tmp_path / "settings.env"
    env_file.write_text(f'CONSOLIDATE_STORE="{chosen}"\nCONSOLIDATE_EMBEDDING="hash"\n')
    note = ["note", "--session", "env-1", NOTE]
    _run([option, str(env_file), *note] if before else [*note, option, str(env_file)], cwd=folder, env=_env())
    _run(["status", option, str(env_file)], cwd=folder, env=_env())
    assert _stores(tmp_path) == [chosen]
    assert _notes(chosen, "env-1") == [NOTE]


@pytest.mark.parametrize("top", ["plain", "projét"])
@pytest.mark.parametrize("variable", [None, *resolve.PROJECT_DIR_VARIABLES])
def test_the_file_recall_entry_from_a_nested_folder_reads_the_project_store(tmp_path, top, variable):
    """The installed PreToolUse command (``python -m consolidate.agents.hooks.file_hook``, surface
    file-hook) sent from ``src/deep``: the project's store answers (its light path on an ASCII path,
    the full hook it hands a non-ASCII one to), no store is made in src/deep."""
    root = tmp_path / top / "app"
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    (deep / "util.py").write_text("X = 1\n")
    store = Path(resolve.in_folder(root))
    Store(store, embedding="hash", project="app").close()
    (store / "graph").mkdir(exist_ok=True)
    (store / "graph" / "nodes.jsonl").write_text(
        json.dumps({"id": "m1", "kind": "memory", "status": "active", "statement": "util.py caches the token"}) + "\n"
        + json.dumps({"id": "entity:src/deep/util.py", "kind": "entity", "entity_kind": "file"}) + "\n")
    (store / "graph" / "edges.jsonl").write_text(
        json.dumps({"source": "m1", "target": "entity:src/deep/util.py", "kind": "mentions"}) + "\n")
    env = _env(**({variable: str(root)} if variable else {}))
    real = _first_of_this_test("file-hook")
    for n in range(2):  # the first call writes the table (the full hook), the second reads it
        payload = {"session_id": f"fh-{n}", "hook_event_name": "PreToolUse", "cwd": str(deep), "tool_name": "Read",
                   "tool_input": {"file_path": "util.py"}}
        out = _process([sys.executable, "-m", "consolidate.agents.hooks.file_hook"], FILE_HOOK, real=real,
                       input=json.dumps(payload), env=env, cwd=deep)
        assert out.returncode == 0, out.stderr
        assert "util.py caches the token" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert _stores(tmp_path) == [store]


# --- a third review's cases: a payload cwd in the other Unicode spelling, a linked git worktree -----------

#: The memory the file-recall surfaces must show (a file memory about ``src/util.py`` of the project).
FILE_MEMORY = "util.py caches the token"


def _file_memory_store(root: Path) -> Path:
    """A store at ``root`` with one active memory about ``src/util.py`` in its graph."""
    store = Path(resolve.in_folder(root))
    Store(store, embedding="hash", project="app").close()
    (store / "graph").mkdir(exist_ok=True)
    (store / "graph" / "nodes.jsonl").write_text(
        json.dumps({"id": "m1", "kind": "memory", "status": "active", "statement": FILE_MEMORY}) + "\n"
        + json.dumps({"id": "entity:src/util.py", "kind": "entity", "entity_kind": "file"}) + "\n")
    (store / "graph" / "edges.jsonl").write_text(
        json.dumps({"source": "m1", "target": "entity:src/util.py", "kind": "mentions"}) + "\n")
    return store


def _recalled(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0, out.stderr
    assert FILE_MEMORY in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"], out.stdout


def _shell(command: str, payload: dict, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    out = subprocess.run(["bash", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=120)
    assert out.returncode == 0, (command, out.stdout, out.stderr)
    return out


def _installed_commands(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """The hook command of each event ``consolidate install-hook claude-code --dry-run`` would write."""
    out = _run(["install-hook", "claude-code", "--dry-run"], cwd=folder, env=env)
    text = "\n".join(line[1:] for line in out.stdout.splitlines() if line.startswith("+") and not line.startswith("+++"))
    hooks = json.loads(text[:text.rindex("}") + 1])["hooks"]
    return {event: entries[0]["hooks"][0]["command"] for event, entries in hooks.items()}


def _every_surface(tmp_path: Path, store: Path, folder: Path, cwd: str, env: dict[str, str]) -> None:
    """Drive every surface of resolve.SURFACES from ``folder`` (the folder on disk, the process's
    working folder), each hook payload's ``cwd`` being ``cwd`` (as an agent sends it); each call
    answers from ``store`` (it holds :func:`_file_memory_store`'s memory) and no other store is made."""
    util = str(folder / "util.py")
    base = {"transcript_path": str(tmp_path / "none.jsonl"), "cwd": cwd}
    real = _first_of_this_test("surfaces")  # the installed commands in the first case only (module docstring)
    env = _on_path(env, real)

    def payload(sid: str, event: str, **extra) -> dict:
        return {**base, "session_id": sid, "hook_event_name": event, **extra}

    read = {"tool_name": "Read", "tool_input": {"file_path": util}}

    def cli():
        _run(["note", "--session", "cli-1", NOTE], cwd=folder, env=env)
        assert _notes(store, "cli-1") == [NOTE]

    def fast_hook():
        for event in ("SessionStart", "SessionEnd"):
            _run(["hook", "--no-worker"], cwd=folder, env=env, payload=payload("fast-1", event, source="startup"))
        assert _end(store, "fast-1") is not None

    def full_hook():
        out = _run(["hook", "--no-worker", "--harvest"], cwd=folder, env=env, payload=payload("full-1", "SessionStart"))
        assert "this is session full-1" in out.stdout
        _recalled(_run(["hook", "--no-worker", "--harvest"], cwd=folder, env=env, payload=payload("full-1", "PreToolUse", **read)))
        gemini = ["hook", "--no-worker", "--harvest", "--output", "gemini"]
        _run(gemini, cwd=folder, env=env, payload=payload("full-1", "BeforeTool", tool_name="read_file",
                                                         tool_input={"absolute_path": util}))
        _run(["hook", "--no-worker", "--harvest"], cwd=folder, env=env, payload=payload("full-1", "SessionEnd", reason="exit"))
        assert _end(store, "full-1") is not None

    def file_hook():
        for n in range(2):  # the first call writes the table (the full hook), the second reads it
            _recalled(_process([sys.executable, "-m", "consolidate.agents.hooks.file_hook"], FILE_HOOK, real=real,
                               input=json.dumps(payload(f"fh-{n}", "PreToolUse", **read)), env=env, cwd=folder))
            _recalled(_process([str(Path(BIN) / "consolidate-file-recall")], FILE_RECALL, real=real,
                               input=json.dumps(payload(f"fr-{n}", "PreToolUse", **read)), env=env, cwd=folder))

    def idle_run():
        _run(["hook", "--no-worker"], cwd=folder, env=env, payload=payload("idle-1", "SessionEnd", reason="exit"))
        assert _run(["run", "--session", "idle-1"], cwd=folder, env=env).stdout.startswith("session idle-1 (success)")

    def worker():
        _run(["note", "--session", "w-1", NOTE], cwd=folder, env=env)
        _run(["end", "--session", "w-1", "--outcome", "success"], cwd=folder, env=env)
        _run(["worker", "--judge", "noop", "--time-box", "60"], cwd=folder, env=env)
        assert _end(store, "w-1")["status"] not in ("queued", "running")

    def mcp():
        _mcp_note(folder, env, ["mcp"], NOTE)
        assert _notes(store, "mcp-1") == [NOTE]

    def plugin():
        manifest = ROOT / "plugins" / "consolidate" / "hooks" / "hooks.json"
        penv = {**env, "CLAUDE_PLUGIN_ROOT": str(manifest.parent.parent)}
        start = _command(manifest, "SessionStart").replace("hook", "hook --no-worker", 1)
        assert "this is session plug-1" in _shell(start, payload("plug-1", "SessionStart"), cwd=folder, env=penv).stdout
        _recalled(_shell(_command(manifest, "PreToolUse"), payload("plug-1", "PreToolUse", **read), cwd=folder, env=penv))

    def extension():
        ext = tmp_path / "home" / ".gemini" / "extensions" / "consolidate"
        ext.mkdir(parents=True, exist_ok=True)
        (ext / ".env").write_text('CONSOLIDATE_EMBEDDING="hash"\n')
        manifest = ROOT / "hooks" / "hooks.json"
        for event in ("SessionStart", "BeforeTool", "SessionEnd"):
            command = _command(manifest, event).replace("${extensionPath}", str(ext)).replace("${/}", "/")
            _shell(command.replace("hook", "hook --no-worker", 1), payload("ext-1", event, reason="exit",
                   tool_name="read_file", tool_input={"absolute_path": util}), cwd=folder, env=env)
        assert _end(store, "ext-1") is not None

    def install_hook():
        commands = _installed_commands(folder, env)
        start = commands["SessionStart"].replace("hook", "hook --no-worker", 1)
        assert "this is session inst-1" in _shell(start, payload("inst-1", "SessionStart"), cwd=folder, env=env).stdout
        _recalled(_shell(commands["PreToolUse"], payload("inst-1", "PreToolUse", **read), cwd=folder, env=env))

    def python_api():
        code = "from consolidate import Store; s = Store(embedding='hash'); print(s.path); s.close()"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder, timeout=120)
        assert out.returncode == 0, out.stderr
        assert Path(out.stdout.strip()) == store

    drivers = {"cli": cli, "fast-hook": fast_hook, "full-hook": full_hook, "file-hook": file_hook, "idle-run": idle_run,
               "worker": worker, "mcp": mcp, "plugin": plugin, "extension": extension, "install-hook": install_hook,
               "python-api": python_api}
    assert sorted(drivers) == sorted(s.name for s in resolve.SURFACES)
    for surface in resolve.SURFACES:
        drivers[surface.name]()
        assert _stores(tmp_path) == [store], surface.name


CLAUDE_DIR, GEMINI_DIR = resolve.PROJECT_DIR_VARIABLES


#: Each folder name in each form it is tried in, and each variable (none, Claude Code's, Gemini CLI's)
#: with a folder on disk in NFC and one in NFD: six cases, not the twelve of the full product (each
#: case drives every surface of the registry: about 6 s).
@pytest.mark.parametrize("name, on_disk, variable", [
    ("proj-é", "NFC", None), ("проёкт й", "NFD", None),
    ("proj-é", "NFD", CLAUDE_DIR), ("Ελληνικό έργο", "NFC", CLAUDE_DIR),
    ("Ελληνικό έργο", "NFC", GEMINI_DIR), ("проёкт й", "NFD", GEMINI_DIR)])
def test_a_payload_cwd_in_the_other_unicode_spelling_is_taken_as_on_disk(tmp_path, name, on_disk, variable):
    """Review 28 (repro 4): the project folder on disk in one Unicode spelling, the payload's ``cwd``
    (``<project>/src``) in the other: SessionStart, PreToolUse and the file-recall entry refused it
    ("does not exist", exit 1) while SessionEnd queued it in the project's store. Every surface takes
    the folder on disk and the project's one store, with and without the project-dir variable."""
    root = tmp_path / unicodedata.normalize(on_disk, name)
    (root / ".git").mkdir(parents=True)
    folder = root / "src"
    folder.mkdir()
    (folder / "util.py").write_text("X = 1\n")
    store = _file_memory_store(root)
    written = unicodedata.normalize("NFD" if on_disk == "NFC" else "NFC", str(folder))
    assert written != str(folder) and not os.path.exists(written)
    env = _env(**({variable: str(root)} if variable else {}))
    _every_surface(tmp_path, store, folder, written, env)
    assert resolve.payload_folder(written) == str(folder) == resolve.start_folder(written)
    assert not os.path.exists(written)  # no folder made in the payload's spelling


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def _linked_worktree(tmp_path: Path) -> tuple[Path, Path]:
    """``(main checkout, linked worktree)``: ``git worktree add`` beside the main checkout (outside it)."""
    main = tmp_path / "main repo"
    main.mkdir()
    _git("init", "-q", ".", cwd=main)
    _git("commit", "-q", "--allow-empty", "-m", "init", cwd=main)
    worktree = tmp_path / "feature wt"
    _git("worktree", "add", "-q", "-b", "feature", str(worktree), cwd=main)
    return main, worktree


@pytest.mark.parametrize("variable", [None, "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"])
def test_a_linked_worktree_uses_the_main_worktree_store(tmp_path, variable):
    """Review 28 (repro 3): a second worktree (``git worktree add ../feat``) got a second, empty store.
    All worktrees of one repository share the main worktree's store (found from the worktree's
    ``.git`` file, its gitdir and commondir), every surface alike."""
    main, worktree = _linked_worktree(tmp_path)
    store = _file_memory_store(main)
    folder = worktree / "src"
    folder.mkdir()
    (folder / "util.py").write_text("X = 1\n")
    env = _env(**({variable: str(worktree)} if variable else {}))
    _every_surface(tmp_path, store, folder, str(folder), env)
    assert resolve.resolve(cwd=str(folder), environ={}) == (str(store), "worktree")


def test_worktree_resolution_without_a_main_store_and_for_look_alikes(tmp_path):
    """The pure function: a linked worktree whose main worktree has no store keeps its own git root's;
    a submodule's ``.git`` file (no commondir), a bare repository's worktree and a broken pointer are
    no linked worktrees; a store in the worktree itself wins over the main one."""
    main, worktree = _linked_worktree(tmp_path)
    assert resolve.main_worktree(str(worktree)) == str(main)
    assert resolve.resolve(cwd=str(worktree), environ={}) == (str(worktree / ".memofs"), "git")
    (main / ".memofs").mkdir()
    assert resolve.resolve(cwd=str(worktree), environ={"CLAUDE_PROJECT_DIR": str(worktree)}) == (
        str(main / ".memofs"), "worktree")
    (worktree / ".memofs").mkdir()
    assert resolve.resolve(cwd=str(worktree), environ={}) == (str(worktree / ".memofs"), "enclosing")
    sub = tmp_path / "sub"
    (tmp_path / "super" / ".git" / "modules" / "sub").mkdir(parents=True)
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {tmp_path / 'super' / '.git' / 'modules' / 'sub'}\n")
    assert resolve.main_worktree(str(sub)) is None
    bare_gitdir = tmp_path / "bare.git" / "worktrees" / "b"
    bare_gitdir.mkdir(parents=True)
    (bare_gitdir / "commondir").write_text("../..\n")
    (sub / ".git").write_text(f"gitdir: {bare_gitdir}\n")
    assert resolve.main_worktree(str(sub)) is None  # a bare repository's worktree
    for text in ("", "gitdir:", "not a pointer\n", "gitdir: /nowhere/at/all\n"):
        (sub / ".git").write_text(text)
        assert resolve.main_worktree(str(sub)) is None


# --- the registry ---------------------------------------------------------------------------------------

#: The tests above that drive each surface of resolve.SURFACES.
DRIVEN = {
    "cli": [test_every_hook_event_from_a_nested_folder_goes_to_the_one_project_store, test_store_option_before_or_after_the_command,
            test_a_folder_reached_through_a_symlink_gives_every_surface_one_store],
    "fast-hook": [test_reported_a_session_end_from_src_deep_goes_to_the_project_store, test_store_option_before_or_after_the_command],
    "full-hook": [test_every_hook_event_from_a_nested_folder_goes_to_the_one_project_store,
                  test_plain_hook_form_without_a_payload_from_a_nested_folder],
    "idle-run": [test_idle_run_and_worker_from_a_nested_folder],
    "worker": [test_idle_run_and_worker_from_a_nested_folder],
    "mcp": [test_mcp_server_started_in_a_nested_folder, test_a_folder_reached_through_a_symlink_gives_every_surface_one_store,
            test_a_nested_repository_takes_the_enclosing_project_store],
    "plugin": [test_plugin_relative_store_option_is_taken_from_the_project_folder],
    "extension": [test_extension_relative_store_setting_is_taken_from_the_project_folder],
    "install-hook": [test_install_hook_carries_the_store_option_before_or_after_the_command],
    "file-hook": [test_the_file_recall_entry_from_a_nested_folder_reads_the_project_store],
    "python-api": [test_python_api_store_without_a_path],
}
for _tests in DRIVEN.values():  # the third review's cases drive every surface (_every_surface)
    _tests += [test_a_payload_cwd_in_the_other_unicode_spelling_is_taken_as_on_disk,
               test_a_linked_worktree_uses_the_main_worktree_store]


def test_every_surface_is_driven_and_names_a_real_entry_point():
    assert sorted(DRIVEN) == sorted(s.name for s in resolve.SURFACES)
    for s in resolve.SURFACES:
        module, _, name = s.entry.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), s


# --- the pure function ----------------------------------------------------------------------------------

_NAME = st.text(st.characters(codec="utf-8", exclude_characters="/\x00", exclude_categories=("Cs",)),
                min_size=1, max_size=12).filter(lambda t: t not in (".", "..", ".git", ".memofs"))
_FORM = st.sampled_from(["NFC", "NFD", "NFKC", None])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(_NAME, min_size=1, max_size=5), form=_FORM, mark=st.sampled_from(["store", "git", "var", "none"]),
       at=st.integers(0, 4), data=st.data())
def test_every_folder_of_a_project_resolves_to_one_store(names, form, mark, at, data):
    """Whatever folder of a project a call starts from, and however its names are written (scripts,
    normalization forms, lengths), it resolves to one store above it: the variable's, the root
    store, the git root's; an option and the setting win, a relative setting is taken from the
    project's root; the result never lies below the start folder."""
    names = [unicodedata.normalize(form, n) if form else n for n in names]
    with tempfile.TemporaryDirectory() as top:
        root = os.path.join(top, "proj")
        try:
            deepest = os.path.join(root, *names)
            os.makedirs(deepest)
        except OSError:  # a name the file system refuses (too long once encoded)
            return
        if mark == "none" and any(os.path.lexists(os.path.join(f, m)) for f in resolve.ancestors(top)
                                  for m in (".memofs", ".git")):
            return  # a store or a work tree above the temporary folder: no folder here is outside one
        environ: dict[str, str] = {}
        if mark == "store":
            os.mkdir(os.path.join(root, ".memofs"))
        elif mark == "git":
            os.mkdir(os.path.join(root, ".git"))
        elif mark == "var":
            environ[data.draw(st.sampled_from(resolve.PROJECT_DIR_VARIABLES))] = root
        folders = [os.path.join(root, *names[:i]) for i in range(len(names) + 1)]
        start = folders[min(at, len(folders) - 1)]
        got = resolve.resolve(cwd=start, environ=environ)
        expected = {"store": "enclosing", "git": "git", "var": "project", "none": "cwd"}[mark]
        assert got.source == expected
        if mark != "none":
            assert got.path == os.path.join(root, ".memofs")
            assert {resolve.store_path(cwd=f, environ=environ) for f in folders} == {got.path}
        else:
            assert got.path == os.path.join(start, ".memofs")
        assert start.startswith(os.path.dirname(got.path)) or mark == "var"
        assert resolve.resolve("/opt/s", cwd=start, environ=environ) == ("/opt/s", "option")
        assert resolve.resolve(cwd=start, environ={**environ, "CONSOLIDATE_STORE": "/abs"}) == ("/abs", "setting")
        rel = resolve.resolve(cwd=start, environ={**environ, "CONSOLIDATE_STORE": "rel/s"})
        assert rel.path == os.path.join(root if mark in ("git", "var") else start, "rel", "s")


def test_a_payload_cwd_that_is_not_an_absolute_path_is_not_a_start_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for cwd in (None, "", "relative/dir", 42, ["/x"], "/a\x00b"):
        assert resolve.start_folder(cwd) == str(tmp_path)
    c, g = tmp_path / "c", tmp_path / "g"
    c.mkdir()
    g.mkdir()
    assert resolve.project_dir({"CLAUDE_PROJECT_DIR": "relative", "GEMINI_PROJECT_DIR": str(g)}) == str(g)
    assert resolve.project_dir({"CLAUDE_PROJECT_DIR": str(c), "GEMINI_PROJECT_DIR": str(g)}) == str(c)
    assert not resolve.named(None, {}) and resolve.named("x", {}) and resolve.named(None, {"CONSOLIDATE_STORE": "s"})


def test_a_store_above_the_git_root_is_not_taken(tmp_path):
    """The walk for an enclosing store stops at the git root: a store above it is another project's."""
    (tmp_path / ".memofs").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    assert resolve.resolve(cwd=str(repo / "src"), environ={}) == (str(repo / ".memofs"), "git")
    assert resolve.resolve(cwd=str(tmp_path / "other"), environ={}) == (str(tmp_path / ".memofs"), "enclosing")


# --- nothing else computes a store path -----------------------------------------------------------------

#: Modules that read the working folder for something other than a store, and what for.
CWD_READERS = {
    "consolidate/agents/install.py": "the agent's settings file of a project install (.claude/settings.json"
                                     " in the folder install-hook runs in)",
    "consolidate/agents/export_md.py": "the folder git runs in to read an imported file whose folder is gone",
    "judges/registry.py": "the pyproject.toml whose [tool.consolidate] judges are read",
}
OWNER = "consolidate/store/resolve.py"
#: Where the setting and the variables may be named besides the owner: their declaration.
DECLARES = {"consolidate/core/settings.py"}


def store_resolution_findings(rel: str, source: str) -> list[str]:
    """What in module ``rel`` (its ``source``) computes a store path without the owner: a path
    literal holding ``.memofs``, ``$CONSOLIDATE_STORE`` read (``STORE`` of consolidate.core.settings)
    or named, a project-dir variable named, the working folder read (os.getcwd, Path.cwd) outside
    :data:`CWD_READERS`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if resolve.STORE_FOLDER in text and not any(c.isspace() for c in text):
                found.append(f"line {node.lineno}: the path literal {text!r}")
            if rel not in DECLARES and text in ("CONSOLIDATE_STORE", *resolve.PROJECT_DIR_VARIABLES):
                found.append(f"line {node.lineno}: names {text}")
        elif isinstance(node, ast.ImportFrom) and node.module == "consolidate.core.settings":
            found += [f"line {node.lineno}: imports STORE" for a in node.names if a.name == "STORE"]
        elif isinstance(node, ast.Attribute) and node.attr == "STORE" and isinstance(node.value, ast.Name) \
                and node.value.id == "settings":
            found.append(f"line {node.lineno}: reads settings.STORE")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("getcwd", "cwd") \
                and rel not in CWD_READERS:
            found.append(f"line {node.lineno}: reads the working folder ({ast.unparse(node.func)})")
    return found


def _modules():
    for top in ("consolidate", "judges"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != OWNER:
                yield rel, path.read_text(encoding="utf-8")


def test_no_module_but_the_owner_resolves_a_store():
    findings = {rel: f for rel, source in _modules() if (f := store_resolution_findings(rel, source))}
    assert findings == {}


def test_each_working_folder_reader_still_reads_it():
    """The allowance list only shrinks: a module that no longer reads the working folder leaves it."""
    for rel in CWD_READERS:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("getcwd", "cwd")
                   for n in ast.walk(tree)), rel


@pytest.mark.parametrize("snippet", [
    'store = opts.get("store") or STORE.get() or ".memofs"',
    'from consolidate.core.settings import STORE',
    'path = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "x")',
    'DEFAULT = "./.memofs"',
    'folder = os.getcwd()',
    'chosen = settings.STORE.get()',
])
def test_the_check_finds_a_store_computed_elsewhere(snippet):
    """The check fails for the ways the store was computed before the owner existed."""
    assert store_resolution_findings("consolidate/pipeline/new_surface.py", snippet)


def test_resolution_does_not_import_anything_heavy():
    code = ("import sys; import consolidate.store.resolve; "
            "print(sorted(m for m in sys.modules if m.startswith('consolidate')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.replace("'", '"')))
    assert loaded <= {"consolidate", "consolidate.store", "consolidate.store.resolve", "consolidate.core",
                      "consolidate.core.settings", "consolidate.core.normal"}, loaded
    heavy = ("chromadb", "numpy", "pydantic", "litellm", "onnxruntime", "tokenizers")
    check = ("import sys; import consolidate.store.resolve; "
             f"print([m for m in {heavy!r} if m in sys.modules])")
    assert subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60,
                          cwd=ROOT).stdout.strip() == "[]"
    assert shutil.which("consolidate", path=BIN)
