"""The hook payload in one module (issue 27 item 3: consolidate/agents/hooks/payload.py): no other
module spells an event name or defines the payload's key tables, and the fast hook and the full
hook read the same real payloads (Claude Code, Gemini CLI, Codex, other clients) the same way:
same event, same session id, same store."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate import Store
from consolidate.agents.hooks import payload as hook_payload
from consolidate.store import resolve
from paths import REPO

ROOT = REPO
CONSOLE = str(Path(sys.executable).parent / "consolidate")
OWNER = "consolidate/agents/hooks/payload.py"

#: The test's own list: every spelling of an event the agent CLIs send or are configured with.
EVENT_SPELLINGS = {
    "SessionEnd", "SessionStart", "Stop", "PreCompact", "PreCompress", "PreToolUse", "BeforeTool",
    "agent-turn-complete", "AgentTurnComplete",
    "sessionend", "sessionstart", "stop", "precompact", "precompress", "pretooluse", "beforetool", "agentturncomplete",
}
#: Keys only a hook payload has.
PAYLOAD_ONLY_KEYS = {"hook_event_name", "thread-id", "thread_id", "conversation_id"}
#: Keys a payload shares with other records: reading them from a ``payload`` is the payload module's.
PAYLOAD_KEYS = {"session_id", "sessionId", "transcript_path", "cwd", "reason", "source", "trigger", "type", "event"}


def _sources() -> list[Path]:
    return sorted(p for pkg in ("consolidate", "judges") for p in (ROOT / pkg).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _offences(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and (node.value in EVENT_SPELLINGS or node.value in PAYLOAD_ONLY_KEYS):
            found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            keys = {e.value for e in node.elts if isinstance(e, ast.Constant)} & set(hook_payload.SESSION_ID_KEYS)
            if len(keys) >= 2:
                found.append(f"line {node.lineno}: a table of session-id keys {sorted(keys)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "setdefault", "pop") and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "payload" and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value in PAYLOAD_KEYS:
            found.append(f"line {node.lineno}: payload.{node.func.attr}({node.args[0].value!r})")
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "payload" \
                and isinstance(node.slice, ast.Constant) and node.slice.value in PAYLOAD_KEYS:
            found.append(f"line {node.lineno}: payload[{node.slice.value!r}]")
    return found


def test_no_module_but_the_payload_module_spells_the_hook_vocabulary():
    """Event names (any spelling), the payload-only keys, session-id key tables and reads of payload
    keys live in consolidate/agents/hooks/payload.py only."""
    offences = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == OWNER:
            continue
        found = _offences(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offences[rel] = found
    assert offences == {}


def test_the_check_catches_each_kind():
    """The AST check is not vacuous: each kind of copy it looks for is found in a sample module."""
    sample = '''
END = {"sessionend", "stop"}
KEYS = ("session_id", "thread-id")
def f(payload):
    return payload.get("cwd"), payload["transcript_path"], {"hook_event_name": "SessionEnd"}
'''
    found = " ".join(_offences(ast.parse(sample)))
    for what in ("'sessionend'", "'stop'", "session-id keys", "payload.get('cwd')", "payload['transcript_path']",
                 "'hook_event_name'", "'SessionEnd'"):
        assert what in found
    owner = ast.parse((ROOT / OWNER).read_text(encoding="utf-8"))
    assert _offences(owner), "the payload module itself holds the vocabulary"


_NAMES = {"SessionEnd": "sessionend", "Stop": "stop", "SessionStart": "sessionstart", "PreCompact": "precompact",
          "PreCompress": "precompact", "PreToolUse": "pretooluse", "BeforeTool": "beforetool",
          "agent-turn-complete": "stop"}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_NAMES)), st.data())
def test_every_spelling_of_an_event_normalises_to_one_name(name, data):
    """Case and ``-``/``_`` separators anywhere do not change the event (Codex's kebab-case,
    SCREAMING_SNAKE, camelCase); the first event key present wins."""
    spelled = "".join(c.upper() if data.draw(st.booleans()) else c.lower() for c in name)
    spelled = "".join(c + data.draw(st.sampled_from(["", "", "-", "_"])) for c in spelled)
    key = data.draw(st.sampled_from(hook_payload.EVENT_KEYS))
    assert hook_payload.event_name({key: spelled}) == _NAMES[name]
    assert hook_payload.normalise(spelled) == _NAMES[name]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(hook_payload.SESSION_ID_KEYS),
                       st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=5))
def test_the_session_id_is_the_first_non_blank_string_in_key_order(ids):
    expected = next((v.strip() for k in hook_payload.SESSION_ID_KEYS
                     if isinstance(v := ids.get(k), str) and v.strip()), None)
    assert hook_payload.session_id_of(ids) == expected


# --- the two hooks on real payloads ---------------------------------------------------------------------


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CONSOLIDATE_") and k not in resolve.PROJECT_DIR_VARIABLES}
    env.update({"CONSOLIDATE_EMBEDDING": "hash", **extra})
    return env


def _hook(payload: dict, *args: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([CONSOLE, "hook", "--no-worker", *args], input=json.dumps(payload), text=True,
                          capture_output=True, env=_env(**env), timeout=60, cwd=cwd)


#: Session ends as each agent CLI sends them (``{sid}`` and ``{cwd}`` filled in).
END_PAYLOADS = {
    "claude-code SessionEnd": {"session_id": "{sid}", "transcript_path": "{cwd}/t.jsonl", "cwd": "{cwd}",
                               "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
    "claude-code Stop": {"session_id": "{sid}", "transcript_path": "{cwd}/t.jsonl", "cwd": "{cwd}",
                         "hook_event_name": "Stop", "stop_hook_active": False},
    "gemini-cli SessionEnd": {"session_id": "{sid}", "transcript_path": "{cwd}/t.json", "cwd": "{cwd}",
                              "hook_event_name": "SessionEnd", "timestamp": "2026-01-01T00:00:00Z",
                              "reason": "exit"},
    "codex Stop": {"session_id": "{sid}", "transcript_path": None, "cwd": "{cwd}", "hook_event_name": "Stop",
                   "model": "gpt-5", "permission_mode": "default"},
    "codex notify": {"type": "agent-turn-complete", "thread-id": "{sid}", "turn-id": "1", "cwd": "{cwd}",
                     "input-messages": ["hi"], "last-assistant-message": "done"},
    "cursor-like": {"conversation_id": "{sid}", "hook_event_name": "session_end", "cwd": "{cwd}"},
    "camelCase id": {"sessionId": "{sid}", "event": "SESSION-END", "cwd": "{cwd}"},
}


def _fill(template: dict, sid: str, cwd: Path) -> dict:
    return {k: v.replace("{sid}", sid).replace("{cwd}", str(cwd)) if isinstance(v, str) else v
            for k, v in template.items()}


_LOGGED = re.compile(r"(\w+) session=(\S+) queued \((\w+)\)")


@pytest.mark.spawns
@pytest.mark.parametrize("agent", sorted(END_PAYLOADS))
def test_the_fast_and_the_full_hook_read_a_session_end_alike(tmp_path, agent):
    """The same payload through the fast hook (the default) and the full one (``--harvest`` takes
    it): both queue the end of the same session in ``<cwd>/.memofs`` and log the same event."""
    seen = []
    for path, args in (("fast", ()), ("full", ("--harvest",))):
        project = tmp_path / path
        project.mkdir()
        store = Store(project / ".memofs", embedding="hash", project="p")  # private and existing: the fast path
        store.close()
        sid = f"{path}-1"
        out = _hook(_fill(END_PAYLOADS[agent], sid, project), *args, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout == "", out.stderr
        row = Store(project / ".memofs", embedding="hash", project="p").sessions.session_end(sid)
        assert row is not None and row["status"] == "queued", (path, out.stderr)
        log = (project / ".memofs" / "logs" / "hook.log").read_text()
        event, logged_sid, outcome = _LOGGED.search(log).groups()
        assert logged_sid == sid and outcome == "success"
        seen.append((event, "queue.jsonl" in os.listdir(project / ".memofs")))
    assert seen[0][0] == seen[1][0] in ("sessionend", "stop")
    assert seen == [(seen[0][0], True), (seen[0][0], False)], "the fast hook queued it in its file, the full one not"


@pytest.mark.spawns
@pytest.mark.parametrize("variable", resolve.PROJECT_DIR_VARIABLES)
@pytest.mark.parametrize("path, args", [("fast", ()), ("full", ("--harvest",))])
def test_a_payload_without_cwd_finds_the_project_s_store(tmp_path, variable, path, args):
    """No ``cwd`` in the payload: the store is ``.memofs`` in the project folder the agent CLI names
    (CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR), not in the hook's working folder."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    Store(project / ".memofs", embedding="hash", project="p").close()
    out = _hook({"session_id": "s-1", "hook_event_name": "SessionEnd"}, *args, cwd=elsewhere,
                **{variable: str(project)})
    assert out.returncode == 0, out.stderr
    assert Store(project / ".memofs", embedding="hash", project="p").sessions.session_end("s-1")["status"] == "queued"
    assert not (elsewhere / ".memofs").exists()
