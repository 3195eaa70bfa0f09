"""Every free text that is persisted or logged goes through one gate (issue 28, concern 3:
consolidate/rules/persisted.py).

- the gate itself (Hypothesis): a secret of each kind and a private span, around any text, in NFC
  and NFD and mixed scripts, leave no part of themselves; the gate is idempotent;
- the registry walked through ``consolidate`` commands, each its own process (``python -m
  consolidate`` forked from one that imported chromadb already: tests/support/preloaded.py), and the MCP server: every
  command and hook event that takes free text is given a planted text (provider keys, a password
  given in German and in Russian, PEM key material, a private span, in NFC or NFD, mixed scripts)
  in every free-text argument or field it accepts, each field its own secrets; then every byte of
  the store folder, the exported AGENTS.md and the hooks' fallback log folder is searched for every
  part of every secret: nothing. The session tier's notes alone may keep their private spans (they
  never leave it: consolidate/rules/private_spans.py); every other field's private span is searched
  for in the session tier too. Each surface of :data:`SURFACES` is driven (its file exists after the
  walk), or named in :data:`NOT_DRIVEN` with why;
- over the source (AST): every function calling a low-level writer of a file is a surface or is
  listed in :data:`NO_FREE_TEXT`, and every surface calls the gate, so a new writer cannot skip it.
"""

from __future__ import annotations

import ast
import base64
import fnmatch
import functools
import hashlib
import json
import os
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.store import layout
from consolidate.rules.persisted import NO_FREE_TEXT, SURFACES, gate, gate_record, has_redaction, worth_scanning
from preloaded import run as run_preloaded
from paths import REPO

ROOT = REPO


# -- planted texts ----------------------------------------------------------------------------------

def _h(tag: str, salt: str) -> bytes:
    return hashlib.sha256((salt + tag).encode()).digest()


def _letters(tag: str, alphabet: str, n: int, salt: str) -> str:
    return "".join(alphabet[b % len(alphabet)] for b in _h(tag, salt)[:n])


def planted(tag: str, form: str = "NFC") -> tuple[str, dict[str, str]]:
    """``(text, needles)``: one text holding an OpenAI key, a GitHub token, an AWS key id, a password
    given in German and one in Russian, a PEM private key and a private span, all made from ``tag``
    (each field its own), in Unicode form ``form``; ``needles``: what of each must never be found."""
    openai = "sk-proj-" + base64.urlsafe_b64encode(_h(tag, "o")).decode()[:40].replace("-", "x").replace("_", "y")
    github = "ghp_" + base64.b64encode(_h(tag, "g")).decode()[:36].replace("+", "p").replace("/", "q")
    aws = "AKIA" + base64.b32encode(_h(tag, "a")).decode()[:16]
    de = _letters(tag, "aeiouäöüklmnrst", 14, "d")
    ru = _letters(tag, "абвгдежзиклмнопрст", 12, "r")
    private = "Zq" + _letters(tag, "bcdfghjkmnpqrstvwxz", 14, "p")
    pem = base64.b64encode(hashlib.sha512(("k" + tag).encode()).digest()).decode()
    text = (f"deploy note {tag}: the key {openai} and token {github} (aws {aws}). Das Passwort ist {de}."
            f" пароль: {ru}. <private>client {private}</private>"
            f" -----BEGIN PRIVATE KEY-----\n{pem}\n-----END PRIVATE KEY----- 部署完了")
    return unicodedata.normalize(form, text), {
        "openai": openai[4:], "github": github[4:], "aws": aws[4:], "password-de": de, "password-ru": ru,
        "private": private, "pem": pem[4:]}


def leaks(needles: dict[str, str], data: bytes) -> list[tuple[str, str]]:
    """``(kind, the part found)`` for each needle of which an 8-character run (in NFC or NFD, UTF-8)
    is in ``data``; a preview shows at most a secret's first characters, never 8 past them."""
    found = []
    for kind, secret in needles.items():
        for form in ("NFC", "NFD"):
            s = unicodedata.normalize(form, secret)
            runs = {s[i:i + 8] for i in range(len(s) - 7)}
            hit = next((r for r in sorted(runs) if r.encode() in data), None)
            if hit is not None:
                found.append((kind, hit))
                break
    return found


# -- the gate, as a pure function -------------------------------------------------------------------

_AROUND = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60)


@settings(max_examples=60, deadline=None)
@given(before=_AROUND, after=_AROUND, form=st.sampled_from(["NFC", "NFD", "NFKC"]), tag=st.text("abcxyz", min_size=1, max_size=6))
def test_the_gate_leaves_no_part_of_a_planted_secret_or_private_span(before, after, form, tag):
    text, needles = planted(tag, form)
    out = gate(f"{before} {text} {after}")
    assert leaks(needles, out.encode()) == [], out
    assert gate(out) == out  # idempotent: a second pass (a reader rewriting the file) changes nothing


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_the_gate_keeps_text_without_a_secret_or_a_tag(text):
    if "<" in text or worth_scanning(text):
        return  # may hold a tag or a secret: the test above
    assert gate(text) is text


@pytest.mark.parametrize("reason", ["prompt_input_exit", "logout", "clear", "other", "resume"])
def test_an_agent_clis_reason_costs_no_secret_gate(reason):
    """The session-end hook's reasons (Claude Code's) are not scanned: the hook does not load the gate."""
    assert not worth_scanning(reason) and gate(reason) is reason


def test_a_record_keeps_its_ids_and_hashes_and_gates_the_rest():
    text, needles = planted("record")
    digest = hashlib.sha256(b"x").hexdigest()  # key material to the gate, an id to the record
    rec = gate_record({"memory_id": "mem-1", "sha": digest, "reason": text, "nested": [{"statement": text, "note_ids": [1]}]})
    assert rec["sha"] == digest and rec["memory_id"] == "mem-1" and rec["nested"][0]["note_ids"] == [1]
    assert leaks(needles, json.dumps(rec, ensure_ascii=False).encode()) == []
    assert has_redaction(rec["reason"])


# -- the source: every writer of a file goes through the gate or says why it need not ---------------

#: The low-level writers (consolidate/core/atomic.py, consolidate/core/jsonl.py, consolidate/core/private.py).
LOW_LEVEL = {"write_atomic", "write_text_atomic", "write_json_atomic", "append_lines", "drop_lines", "private_file"}
#: Names a surface may call the gate by (consolidate.rules.persisted, and the error sinks' helpers on it).
GATE_NAMES = {"gate", "gate_value", "gate_fields", "gate_record", "redact", "findings", "redacted", "error_text"}
#: Modules that are the low-level writers themselves.
OWNERS = {"consolidate/core/atomic.py", "consolidate/core/jsonl.py", "consolidate/core/private.py"}


def _writes(call: ast.Call) -> bool:
    """A call of a low-level writer, or ``os.open`` with a write flag, or a ``write_text``/``write_bytes``."""
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if name in LOW_LEVEL:
        return True
    if name == "open" and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "os":
        flags = call.args[1] if len(call.args) > 1 else None  # a variable's flags may write: counted
        return flags is not None and (not any(isinstance(n, ast.Attribute) for n in ast.walk(flags)) or any(
            isinstance(n, ast.Attribute) and n.attr in ("O_WRONLY", "O_RDWR", "O_APPEND") for n in ast.walk(flags)))
    return False


@functools.cache
def _functions() -> dict[str, tuple[ast.AST, bool]]:
    """``{"module:qualname": (function node, whether it writes a file itself)}`` over consolidate/
    (parsed once per test process: the two tests below read the same source; neither changes it)."""
    out: dict[str, tuple[ast.AST, bool]] = {}
    for path in sorted((ROOT / "consolidate").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in OWNERS:
            continue
        module = rel[:-3].replace("/", ".")

        def walk(node, stack, module=module):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    qual = ".".join([*stack, child.name])
                    if not isinstance(child, ast.ClassDef):
                        own = [n for n in ast.walk(child) if isinstance(n, ast.Call) and _writes(n)
                               and _innermost(child, n) is child]
                        out[f"{module}:{qual}"] = (child, bool(own))
                    walk(child, [*stack, child.name], module)
                else:
                    walk(child, stack, module)
        walk(ast.parse(path.read_text(encoding="utf-8")), [])
    return out


def _innermost(fn: ast.AST, target: ast.AST) -> ast.AST:
    """The innermost function of ``fn`` (itself or a nested one) holding ``target``."""
    for child in ast.walk(fn):
        if child is not fn and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(n is target for n in ast.walk(child)):
            return _innermost(child, target)
    return fn


def test_every_writer_of_a_file_is_a_surface_of_the_gate_or_says_why_it_holds_no_free_text():
    functions = _functions()
    writers = {k for k, (_, writes) in functions.items() if writes}
    listed = {s.where for s in SURFACES} | {w for w, _ in NO_FREE_TEXT}
    assert sorted(writers - listed) == [], "a new writer of a file: gate its free text (consolidate/rules/persisted.py)"
    assert sorted(listed - set(functions)) == [], "a registry entry names no function"
    assert not {s.where for s in SURFACES} & {w for w, _ in NO_FREE_TEXT}


def test_every_surface_calls_the_gate():
    functions = _functions()
    missing = []
    for s in SURFACES:
        node, _ = functions[s.where]
        names = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}
        if not names & GATE_NAMES:
            missing.append(s.where)
    assert missing == []


# -- the walk: every command and hook event, through the command line and the MCP server ----------

#: Surfaces the walk cannot reach offline, and why (each is driven by its own test).
NOT_DRIVEN = {
    "consolidate.team.local:write_outbox": "needs a team store (a Chroma server): tests/integration/test_team.py",
    "consolidate.team.local:write_undo_outbox": "needs a team store (a Chroma server): tests/integration/test_team.py",
    "consolidate.team.local:put_outbox": "needs a team store (a Chroma server): tests/integration/test_team.py",
    "consolidate.team.local:log": "needs a team store (a Chroma server): driven below",
    "consolidate.store.sessions.tier:SessionTier.set_waiting": "needs a judge that fails: driven below",
    "consolidate.store.archive:tombstone": "needs a judge's delete verdict (noop gives none): driven below",
}


def test_the_surfaces_the_walk_cannot_reach_gate_their_text(tmp_path):
    """A tombstone's reason (a judge's), a waiting note's judge failures and a team log line, each
    written with a planted text: the store holds none of it."""
    from consolidate import Store
    from consolidate.store import archive
    from consolidate.team import local

    store = Store(tmp_path / ".memofs", embedding="hash")
    texts = {tag: planted(tag) for tag in ("tombstone reason", "judge failure", "team log line")}
    archive.tombstone(store, "mem-1", texts["tombstone reason"][0], "run-1")
    nid = store.sessions.add_note("s-wait", "The build waits for a judge")
    store.sessions.set_waiting("s-wait", {int(nid): (time.time(), time.time() + 60, [texts["judge failure"][0]])})
    local.log(store, texts["team log line"][0])
    store.close()
    files = _files(tmp_path / ".memofs")
    assert [(t, p, k) for t, (_, n) in texts.items() for p, d in files.items() for k, _ in leaks(n, d)] == []
    assert (tmp_path / ".memofs" / "logs" / "team.log").exists()


#: Surfaces whose file is gone when the walk ends, and what shows it was written.
TRANSIENT = {
    "consolidate.store.journal:write": "journal/*.json is removed once its run is applied (the run.applied events)",
}


class Walk:
    """``consolidate`` commands in a project folder, with one store, each in a new process (forked from
    one that imported the heavy packages: tests/support/preloaded.py, about 2 s less per store-opening
    command); every output kept for the grep."""

    def __init__(self, root: Path):
        self.root = root
        self.project = root / "project"
        self.project.mkdir()
        self.store = self.project / ".memofs"
        self.state = root / "state"
        self.outputs: list[str] = []
        self.needles: dict[str, dict[str, str]] = {}  # field -> needles
        self.note_fields: set[str] = set()  # fields that are notes: their private span stays in the tier
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
        self.env.update(CONSOLIDATE_EMBEDDING="hash", CONSOLIDATE_JUDGES="noop", XDG_STATE_HOME=str(self.state),
                        CONSOLIDATE_STORE=str(self.store))

    def text(self, field: str, form: str = "NFC", *, note: bool = False) -> str:
        text, needles = planted(field, form)
        self.needles[field] = needles
        if note:
            self.note_fields.add(field)
        return text

    def run(self, *args: str, stdin: str | None = None, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        p = run_preloaded(list(args), input=stdin, env=self.env, cwd=self.project, timeout=300)
        self.outputs += [p.stdout, p.stderr]
        assert p.returncode in ok, (args[:3], p.returncode, p.stderr[-2000:])
        return p

    def hook(self, payload: dict, *args: str) -> subprocess.CompletedProcess:
        return self.run("hook", *args, stdin=json.dumps(payload, ensure_ascii=False))

    def mcp(self, calls: list[tuple[str, dict]]) -> list[dict]:
        init = [{"jsonrpc": "2.0", "id": "init", "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "walk", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        lines = init + [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a}}
                        for i, (n, a) in enumerate(calls)]
        p = self.run("mcp", stdin="".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        replies = {r.get("id"): r for r in map(json.loads, filter(str.strip, p.stdout.splitlines()))}
        return [replies.get(i, {}) for i in range(len(calls))]

    def memory_ids(self) -> list[str]:
        out = self.run("recall", "deploy the build with pnpm", "--json", "-k", "20").stdout
        return [m["id"] for m in json.loads(out)]


def _transcript(walk: Walk, sid: str) -> Path:
    path = walk.root / f"{sid}.jsonl"
    entries = [{"type": "user", "uuid": f"{sid}-u1", "parentUuid": None, "sessionId": sid, "cwd": str(walk.project),
                "timestamp": "2026-11-30T10:00:00.000Z", "isSidechain": False,
                "message": {"role": "user", "content": walk.text("harvested turn", note=True)}},
               {"type": "assistant", "uuid": f"{sid}-a1", "parentUuid": f"{sid}-u1", "sessionId": sid,
                "cwd": str(walk.project), "timestamp": "2026-11-30T10:00:05.000Z", "isSidechain": False,
                "message": {"role": "assistant", "content": [{"type": "text", "text": walk.text("harvested answer", "NFD", note=True)}]}}]
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    return path


def _drive_notes_and_ends(w: Walk) -> None:
    """Notes, imports and session ends: the CLI, the hook (fast and full paths), the MCP server."""
    w.run("note", "--session", "s-notes", "The build uses pnpm; " + w.text("note text", note=True), "--flag")
    w.run("note", "--session", "s-notes", "The build uses pnpm, not npm", "--flag", "--kind", "constraint")
    w.run("note", "--session", "s-notes", "Deploy the build with make ship", "--flag", "--kind", "recipe")
    (w.project / "src").mkdir()
    (w.project / "src" / "app.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    for text in ("src/app.py main() starts the build server on port 8080", "src/app.py main() reads BUILD_ENV first",
                 "src/app.py main() must stay free of network calls", "src/app.py main() exits 3 on a bad config",
                 "src/app.py main() logs to stderr only"):
        w.run("note", "--session", "s-notes", text, "--flag", "--kind", "constraint")
    lines = [{"session_id": "s-import", "content": w.text("import content", "NFD", note=True),
              "section": w.text("import metadata", note=True)},
             {"session_id": "s-import", "content": "Deploy the build from the release branch", "flag": True}]
    imp = w.root / "notes.jsonl"
    imp.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    w.run("import", str(imp))
    w.run("end", "--session", "s-notes", "--outcome", "success", "--reason", w.text("end reason"))
    w.run("note", "--session", "s-failed", "The migration of the build failed on the orders table", "--kind", "failure")
    w.run("end", "--session", "s-failed", "--outcome", "failure", "--reason", w.text("failure reason", "NFD"))
    w.run("end", "--session", "s-import", "--outcome", "success")
    notes_file = w.root / "progress.md"  # a notes file: its notes and its name (consolidate/model/notes_files.py)
    notes_file.write_text("- The build runs on the shared runner\n- " + w.text("notes file note", note=True) + "\n",
                          encoding="utf-8")
    w.run("notes-file", str(notes_file), "--session", "s-notes-file", "--name",
          "memory-bank/" + "".join(c if c.isprintable() else " " for c in w.text("notes file name")))  # a name is one line
    w.run("end", "--session", "s-notes-file", "--outcome", "success")
    # the hook: a reason the fast path takes as it is (ASCII letters, digits and _), one only the full hook takes
    simple = "ghp_" + base64.b64encode(_h("fast reason", "g")).decode()[:36].replace("+", "p").replace("/", "q")
    w.needles["fast reason"] = {"github": simple[4:]}
    w.hook({"hook_event_name": "SessionEnd", "session_id": "s-fast", "reason": simple, "cwd": str(w.project)}, "--no-worker")
    transcript = _transcript(w, "s-harvest")
    for event, extra in (("SessionStart", {"source": w.text("start source")}),
                         ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "src/app.py", "old_string": w.text("tool input")}}),
                         ("BeforeTool", {"tool_name": "write_file", "tool_input": {"file_path": "src/app.py", "content": w.text("gemini tool input")}}),
                         ("PreCompact", {"trigger": "manual", "custom_instructions": w.text("compact instructions")}),
                         ("Stop", {"reason": w.text("stop reason", "NFD")}),
                         ("SessionEnd", {"reason": w.text("hook end reason")})):
        w.hook({"hook_event_name": event, "session_id": "s-harvest", "cwd": str(w.project),
                "transcript_path": str(transcript), **extra}, "--harvest", "--no-worker")
    w.mcp([("note", {"content": w.text("mcp note", "NFD", note=True), "session_id": "s-mcp"}),
           ("note", {"content": "Deploy the build after the tests pass", "session_id": "s-mcp", "flag": True}),
           ("session_complete", {"outcome": "failure", "reason": w.text("mcp complete reason"), "session_id": "s-mcp"})])


def _drive_workspaces(w: Walk) -> None:
    """A workspace through the CLI and one through the MCP server: task, files, completion reason."""
    w.run("session", "start", "--session", "ws-cli", "--task", w.text("workspace task"))
    w.run("session", "write", "--session", "ws-cli", "working/plan.md", w.text("working file", "NFD"))
    w.run("session", "append", "--session", "ws-cli", "working/plan.md", w.text("working append"))
    w.run("session", "write", "--session", "ws-cli", "output/memory.md",
          "- Deploy the build with the release script\n- " + w.text("output file").replace("\n", " "))
    w.run("session", "extract", "--session", "ws-cli")
    w.run("session", "complete", "--session", "ws-cli", "--outcome", "failure", "--reason", w.text("workspace reason"))
    w.mcp([("session_start", {"session_id": "ws-mcp", "task": w.text("mcp task", "NFD")}),
           ("session_write", {"session_id": "ws-mcp", "path": "working/notes.md", "content": w.text("mcp working file")}),
           ("session_append", {"session_id": "ws-mcp", "path": "output/m.md", "content": "- " + w.text("mcp output").replace("\n", " ")}),
           ("session_extract", {"session_id": "ws-mcp"}),
           ("session_complete", {"session_id": "ws-mcp", "outcome": "aborted", "reason": w.text("mcp abort reason")})])


def _drive_reviews(w: Walk) -> None:
    """Runs, reviews, forget (CLI and MCP), an edit, an export, an undo, a worker."""
    w.run("run", "--judge", "noop", ok=(0, 75))  # 75: an MCP server's worker drained the queue first
    (w.project / "src" / "app.py").write_text("def main():\n    return 2\n", encoding="utf-8")  # drifted: to review
    ids = [r["id"] for r in json.loads(w.run("review", "--list", "--json").stdout)]
    assert len(ids) >= 5, ids
    w.run("review", "--approve", ids[0], "--reason", w.text("approve reason"))
    w.run("review", "--decline", ids[1], "--reason", w.text("decline reason", "NFD"))
    w.run("review", "--edit", ids[2], "Deploy the build with make ship; " + w.text("edit text"), ok=(2,))  # refused
    span = planted("edit private span")[1]["private"]
    w.needles["edit private span"] = {"private": span}
    w.run("review", "--edit", ids[2], f"src/app.py main() returns 2 <private>client {span}</private>")
    w.run("forget", ids[3], "--reason", w.text("forget reason"))
    left = w.memory_ids()
    w.mcp([("forget", {"memory_id": left[0], "reason": w.text("mcp forget reason")}),
           ("review_decline", {"memory_id": ids[-1], "reason": w.text("mcp decline reason", "NFD")})])
    w.run("export", "--file", str(w.project / "AGENTS.md"))
    w.run("note", "--session", "s-undo", "Deploy the build behind the feature flag", "--flag")
    w.run("end", "--session", "s-undo", "--outcome", "success", "--reason", w.text("undone run reason"))
    w.run("run", "--judge", "noop", ok=(0, 75))  # 75: an MCP server's worker drained the queue first
    run_id = json.loads(w.run("runs", "--json").stdout)[0]["run_id"]
    w.run("undo", run_id)
    # an env file's value and a setting that refuses it: the error line and the worker's log
    env_file = w.root / "settings.env"
    env_file.write_text("CONSOLIDATE_WAIT_DAYS=" + w.text("env file value").split(":")[1].split()[1] + "\n", encoding="utf-8")
    w.run("--env-file", str(env_file), "status", ok=(2,))
    w.run("note", "--session", "s-worker", "Deploy the build on fridays only after review", "--flag")
    w.hook({"hook_event_name": "SessionEnd", "session_id": "s-worker", "reason": w.text("worker end reason"),
            "cwd": str(w.project)})
    status, log = w.store / "logs" / "worker.status.json", w.store / "logs" / "worker.log"
    deadline = time.monotonic() + 120
    while not status.exists() and time.monotonic() < deadline:  # the detached worker's outcome
        time.sleep(0.1)
    size = -1
    while log.exists() and log.stat().st_size != size and time.monotonic() < deadline:  # its log settled
        size = log.stat().st_size
        time.sleep(1.0)
    assert status.exists(), "the worker did not finish"


def _files(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for f in folders if f.exists() for p in sorted(f.rglob("*")) if p.is_file()}


@pytest.mark.spawns
def test_a_planted_secret_in_every_free_text_field_reaches_no_file(tmp_path):
    w = Walk(tmp_path)
    _drive_notes_and_ends(w)
    _drive_workspaces(w)
    _drive_reviews(w)
    files = _files(w.store, w.state)
    files[str(w.project / "AGENTS.md")] = (w.project / "AGENTS.md").read_bytes()
    found = []
    for field, needles in w.needles.items():
        for path, data in files.items():
            tier = Path(path).name.startswith("sessions.sqlite3")
            checked = {k: v for k, v in needles.items() if not (tier and k == "private" and field in w.note_fields)}
            found += [(field, Path(path).relative_to(tmp_path).as_posix(), kind, part)
                      for kind, part in leaks(checked, data)]
    assert found == []
    shown = "\n".join(w.outputs).encode()
    assert [(f, k) for f, n in w.needles.items() for k, _ in leaks(n, shown)] == []
    # the walk reached every surface: each one's file was written
    rels = {Path(p).relative_to(w.store).as_posix() for p in files if p.startswith(str(w.store) + os.sep)}
    assert b'"run.applied"' in files[str(w.store / "events" / "memory-events.jsonl")]  # the journal was written
    undriven = []
    for s in SURFACES:
        if s.where in NOT_DRIVEN or s.where in TRANSIENT:
            continue
        if not any(_entry_matches(e.strip(), rels, w) for e in s.entry.split(",")):
            undriven.append(s.where)
    assert undriven == []


def _entry_matches(entry: str, rels: set[str], w: Walk) -> bool:
    """Whether a file of ``entry`` (a consolidate/store/layout.py constant's name; a folder: any
    file under it) was written."""
    if entry.startswith("AGENTS.md"):
        return (w.project / "AGENTS.md").exists()
    rel = getattr(layout, entry).rel
    return any(fnmatch.fnmatchcase(r, rel) or fnmatch.fnmatchcase(r, rel + "/*") for r in rels)
