"""The file recall hook's fast path (issue 34): ``consolidate hook`` on a PreToolUse/BeforeTool payload
is answered by consolidate/agents/hooks/fast.py without the command line's parser or the full hook,
with the same answer as the full hook (consolidate.agents.hooks.full.run_hook) gives; and the light entry
the installed PreToolUse/BeforeTool command runs (consolidate/agents/hooks/file_hook.py), compared the
same way, with the defects of this surface (case folded on a case-sensitive filesystem, a damaged
session tier answered silently, a killed writer's temporary table left behind)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import hooks_fast
import preloaded
from consolidate import Store
from consolidate.agents.hooks.full import run_hook
from consolidate.store.index.lexical import LexicalIndex, index_path
from paths import REPO

ROOT = REPO
FAST = ("import sys\nfrom consolidate.agents.hooks import fast\ncode = fast.main(sys.argv[1:])\n"
        "sys.stdout.write('\\nFAST %s %s\\n' % (code, 'consolidate.agents.hooks.full' in sys.modules))")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project with a store of 300 memories naming 40 files (in their text and by a mentions
    edge), one in 25 quarantined, some naming a file by its bare name only."""
    project = tmp_path_factory.mktemp("fr") / "app"
    (project / "src" / "lib").mkdir(parents=True)
    store = project / ".memofs"
    Store(store, embedding="hash").close()
    (store / "graph").mkdir(exist_ok=True)
    records = []
    with open(store / "graph" / "nodes.jsonl", "w") as nodes, open(store / "graph" / "edges.jsonl", "w") as edges:
        for i in range(300):
            f = f"src/lib/mod{i % 40}.py"
            status = "quarantined" if i % 25 == 3 else "active"
            doc = f"{f}: part {i} needs flag {i % 7}" if i % 3 else f"mod{i % 40}.py is loaded lazily, part {i}"
            nodes.write(json.dumps({"id": f"m{i:04d}", "kind": "memory", "status": status, "statement": doc}) + "\n")
            if i % 2:
                edges.write(json.dumps({"source": f"m{i:04d}", "target": "entity:" + f, "kind": "mentions"}) + "\n")
            records.append({"id": f"m{i:04d}", "document": doc, "metadata": {"status": status, "tier": "durable"}})
        for j in range(40):
            nodes.write(json.dumps({"id": f"entity:src/lib/mod{j}.py", "kind": "entity", "entity_kind": "file"}) + "\n")
    idx = LexicalIndex(index_path(store))
    idx.upsert(records)
    idx.close()
    for j in range(40):
        (project / "src" / "lib" / f"mod{j}.py").write_text(f"X = {j}\n")
    return project


def _payload(project: Path, sid: str, path: str, tool: str = "Read") -> dict:
    key = "file_path" if tool == "Read" else "absolute_path"
    return {"session_id": sid, "hook_event_name": "PreToolUse" if tool == "Read" else "BeforeTool",
            "cwd": str(project), "tool_name": tool, "tool_input": {key: path}}


def _code(code: str, args: list[str], *, env: dict[str, str], cwd: Path, input: str, timeout: float,
          real: bool) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, "-c", code, *args], input=input, capture_output=True, text=True,
    ...)``: with ``real`` that very process; otherwise forked from tests/support/hooks_fast.py's server
    (issue 30), as preloaded.run_code runs it (its own pid, argv, environment, working folder, streams
    and exit status; no consolidate module imported before the fork, so what the code reports of
    consolidate's modules holds; third-party packages are preloaded there: not for a check of those)."""
    if real:
        return subprocess.run([sys.executable, "-c", code, *args], input=input, capture_output=True, text=True,
                              cwd=cwd, env=env, timeout=timeout)
    path = hooks_fast._start()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    req = {"argv": list(args), "code": code, "env": dict(env), "cwd": str(cwd)}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        socket.send_fds(conn, [json.dumps(req).encode()], [in_r, out_w, err_w])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    outs: list = []
    errs: list = []
    threads = [threading.Thread(target=preloaded._drain, args=(out_r, outs), daemon=True),
               threading.Thread(target=preloaded._drain, args=(err_r, errs), daemon=True),
               threading.Thread(target=preloaded._feed, args=(in_w, input.encode()), daemon=True)]
    for t in threads:
        t.start()
    reader = conn.makefile("rb")
    conn.settimeout(timeout)
    try:
        pid = json.loads(reader.readline())["pid"]
        try:
            line = reader.readline()
        except TimeoutError:
            os.kill(pid, 9)
            raise subprocess.TimeoutExpired([sys.executable, "-c", code, *args], timeout) from None
        status = json.loads(line)["status"]
    finally:
        reader.close()
        conn.close()
    for t in threads:
        t.join(timeout)
    out, err = (preloaded._text(b"".join(chunks)) for chunks in (outs, errs))
    return subprocess.CompletedProcess([sys.executable, "-c", code, *args], os.waitstatus_to_exitcode(status), out, err)


def _fast(project: Path, payload: dict, real: bool = False) -> tuple[str, str]:
    """The fast path's answer and whether it was answered there without the full hook; in a forked
    child unless ``real`` (a check of consolidate's modules holds in either: module docstring of _code)."""
    r = _code(FAST, ["hook"], input=json.dumps(payload), cwd=project,
              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60, real=real)
    out, _, tail = r.stdout.rpartition("\nFAST ")
    return out.strip(), tail.strip()


#: One interpreter answering payload after payload (issue 30: one real process per entry point instead of
#: one per payload): ``sys.argv[1]`` names a JSON file of ``[args, payload]`` pairs; each payload becomes
#: the process's stdin (fd 0, what the entries read) and ``ENTRY.main(args)`` answers it; what it wrote
#: and "CODE WHETHER-MODULE-WAS-IMPORTED" (the mark _fast and _light print) go to stdout as JSON. A call
#: that execs the full hook replaces the process: no JSON, the caller's parse fails.
LOOP = r"""
import io, json, os, sys, tempfile
from consolidate.agents.hooks import {entry} as entry
calls = json.load(open(sys.argv[1]))
out, got = sys.stdout, []
for args, payload in calls:
    with tempfile.TemporaryFile() as f:
        f.write(json.dumps(payload).encode())
        f.seek(0)
        os.dup2(f.fileno(), 0)
    sys.stdout = io.StringIO()
    code = entry.main(args)
    text, sys.stdout = sys.stdout.getvalue(), out
    got.append([text.strip(), "%s %s" % (code, {module!r} in sys.modules)])
sys.stdout.write(json.dumps(got))
"""


def _answers(project: Path, tmp_path: Path, entry: str, module: str, calls: list) -> list[tuple[str, str]]:
    """``[(answer, mark)]`` of ``consolidate.agents.hooks.<entry>.main(args)`` on each ``(args, payload)``
    of ``calls`` in one real interpreter (LOOP), as _fast / _light give them one process each."""
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls))
    r = subprocess.run([sys.executable, "-c", LOOP.replace("{entry}", entry).replace("{module!r}", repr(module)),
                        str(path)], capture_output=True, text=True, cwd=project, stdin=subprocess.DEVNULL,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr
    return [tuple(a) for a in json.loads(r.stdout)]


@pytest.mark.spawns
@pytest.mark.parametrize("tool", ["Read", "read_file"])
def test_the_fast_file_recall_answers_as_the_full_hook(project, tmp_path, tool):
    cases = [(j, path) for j in (0, 3, 7, 11, 28, 39)
             for path in (str(project / "src" / "lib" / f"mod{j}.py"), f"src/lib/mod{j}.py", "src/lib/nothing.py")]
    # every payload answered in one interpreter (issue 30), each compared with the full hook's answer
    answers = _answers(project, tmp_path, "fast", "consolidate.agents.hooks.full",
                       [(["hook"], _payload(project, f"fast-{tool}-{j}-{len(path)}", path, tool)) for j, path in cases])
    said = 0
    for (j, path), (fast, tail) in zip(cases, answers, strict=True):
        assert tail == "0 False", tail  # answered there, without the full hook
        code, full = run_hook(project / ".memofs", payload=_payload(project, f"full-{tool}-{j}-{len(path)}",
                                                                    path, tool))
        assert code == 0 and fast == full.strip()
        said += bool(fast)
    assert said >= 10  # the answers compared hold memories


def test_a_memory_shown_once_per_session_on_the_fast_path(project):
    path = str(project / "src" / "lib" / "mod5.py")
    first, _ = _fast(project, _payload(project, "once-1", path))
    assert "mod5.py" in json.loads(first)["hookSpecificOutput"]["additionalContext"]
    again, tail = _fast(project, _payload(project, "once-1", path))
    lines = [set(json.loads(t)["hookSpecificOutput"]["additionalContext"].splitlines()[1:]) for t in (first, again)]
    assert tail == "0 False" and lines[1] and not lines[0] & lines[1]  # the next ones, none twice


def test_a_cwd_that_is_no_folder_goes_to_the_full_hook(project):
    p = _payload(project, "gone-1", "src/lib/mod1.py")
    p["cwd"] = str(project / "no-such-folder")
    _, tail = _fast(project, p)
    assert tail.startswith("None")


def test_a_file_outside_the_project_with_the_same_tail_gets_nothing(project, tmp_path):
    """A fresh review: a Read of another checkout's src/lib/mod2.py (an absolute path outside the
    project root) was shown this project's memories about src/lib/mod2.py. Fast and full hook alike,
    by path, by tail and by bare name, while the project's own file still gets them."""
    other = tmp_path / "other" / "src" / "lib"
    other.mkdir(parents=True)
    (other / "mod2.py").write_text("X = 2\n")
    for n, path in enumerate((str(other / "mod2.py"), str(tmp_path / "mod2.py"))):
        fast, tail = _fast(project, _payload(project, f"outside-fast-{n}", path))
        code, full = run_hook(project / ".memofs", payload=_payload(project, f"outside-full-{n}", path))
        assert tail == "0 False" and code == 0 and fast == "" and full.strip() == ""
    own, _ = _fast(project, _payload(project, "outside-own", str(project / "src" / "lib" / "mod2.py")))
    assert "mod2.py" in own


# -- the light entry the installed PreToolUse / BeforeTool command runs (consolidate/agents/hooks/file_hook.py)

LIGHT = ("import sys\nfrom consolidate.agents.hooks import file_hook\ncode = file_hook.main(sys.argv[1:])\n"
         "sys.stdout.write('\\nLIGHT %s %s\\n' % (code, 'consolidate.cli.main' in sys.modules))")


def _light(project: Path, payload: dict, *args: str, real: bool = False) -> tuple[str, str]:
    """The light entry's answer and whether it answered without the command line ("exec'd": handed to
    ``consolidate hook``); in a forked child unless ``real`` (as _fast)."""
    r = _code(LIGHT, list(args), input=json.dumps(payload), cwd=project,
              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60, real=real)
    out, mark, tail = r.stdout.rpartition("\nLIGHT ")
    return (out.strip(), tail.strip()) if mark else (r.stdout.strip(), "exec'd")


@pytest.mark.spawns
@pytest.mark.parametrize("tool", ["Read", "read_file"])
def test_the_light_entry_answers_as_the_full_hook(project, tmp_path, tool):
    # the table and the session tier written (a stale table or no tier yet: the full hook makes them)
    assert run_hook(project / ".memofs", payload=_payload(project, f"warm-{tool}", "src/lib/none.py", tool))[0] == 0
    cases = [(j, path) for j in (0, 2, 3, 7, 11, 28, 39)
             for path in (str(project / "src" / "lib" / f"mod{j}.py"), f"src/lib/mod{j}.py", f"SRC/lib/mod{j}.py",
                          f"lib/mod{j}.py", "src/lib/nothing.py", f"./src//lib/mod{j}.py")]
    # every payload answered in one interpreter (issue 30), each compared with the full hook's answer
    answers = _answers(project, tmp_path, "file_hook", "consolidate.cli.main",
                       [([], _payload(project, f"light-{tool}-{j}-{path}", path, tool)) for j, path in cases])
    said = 0
    for (j, path), (light, tail) in zip(cases, answers, strict=True):
        assert tail == "0 False", (path, tail)  # answered there, without the command line
        code, full = run_hook(project / ".memofs", payload=_payload(project, f"lfull-{tool}-{j}-{path}", path, tool))
        assert code == 0 and light == full.strip(), path
        said += bool(light)
    assert said >= 20  # the answers compared hold memories


def test_a_memory_shown_once_per_session_on_the_light_entry(project):
    path = str(project / "src" / "lib" / "mod9.py")
    first, _ = _light(project, _payload(project, "lonce-1", path))
    again, tail = _light(project, _payload(project, "lonce-1", path))
    lines = [set(json.loads(t)["hookSpecificOutput"]["additionalContext"].splitlines()[1:]) for t in (first, again)]
    assert tail == "0 False" and lines[0] and lines[1] and not lines[0] & lines[1]
    # the full hook sees what the light entry recorded (the same session tier rows)
    code, full = run_hook(project / ".memofs", payload=_payload(project, "lonce-1", path))
    third = set(json.loads(full)["hookSpecificOutput"]["additionalContext"].splitlines()[1:]) if full.strip() else set()
    assert code == 0 and not third & (lines[0] | lines[1])


@pytest.mark.spawns
def test_what_the_light_entry_cannot_answer_goes_to_the_full_hook(project):
    path = str(project / "src" / "lib" / "mod4.py")
    for n, (p, args) in enumerate([(_payload(project, "lfb-1", path), ("--env-file", "/nonexistent")),
                                   ({**_payload(project, "lfb-2", path), "cwd": str(project / "nope")}, ()),
                                   (_payload(project, "lfb-3", str(project / "src" / "lib" / "mödule.py")), ()),
                                   ({**_payload(project, "lfb-4", path), "hook_event_name": "SessionEnd"}, ("--no-worker",))]):
        out, tail = _light(project, p, *args, real=n == 0)
        assert tail == "exec'd", (n, tail)  # handed to consolidate hook in its place
        if n == 0:  # stdin went with it: the full hook's answer
            assert "mod4.py" in out


def test_the_light_entrys_keys_and_terms_are_the_packages_on_ascii():
    from consolidate.agents.hooks import file_hook
    from consolidate.core.normal import path_key
    from consolidate.store import echo
    from consolidate.store.index import file_table, lexical
    from consolidate.store.views import shown

    assert file_hook.TABLE_VERSION == file_table.VERSION and file_hook.STOPWORDS == lexical.STOPWORDS
    assert file_hook.MAX_MEMORIES == shown.surface("file-recall").max_memories and file_hook.KEEP_SECONDS == echo.KEEP_SECONDS
    samples = ["src/app.py", "./src//a.py/", "/abs/x/../y.py", "a/b/../../..", " src/a.py ", ".", "", "../up.py",
               "src/--flags.py", "-v.py", "v1.9/setup.py", "API_KEYS.md", "THE/FOR.py", "camelCase/FooBar.ts",
               "src/My File.py", "a.b-c+d@e:f/g_h.py", "_private_/__init__.py", "ECONNREFUSED.log", "x--y/z.py",
               "AND.txt", "src/v2/V3.py", "Makefile", "a/./b/./c"]
    for p in samples:
        key = path_key(p)
        assert file_hook.path_key(p) == key, p
        if key and not key.startswith("/"):
            folded = key.rsplit("/", 1)[-1].lower()
            want = {t for t, s in lexical.terms(key) if s and t.endswith(folded)} or {folded}
            assert file_hook.strong_terms(key) == want, p


def test_file_recall_matches_case_as_the_filesystem_does(project):
    """A memory whose text names src/lib/mod2.py is not about SRC/lib/mod2.py where file names are
    case-sensitive (the lexical terms are case-folded); one naming the bare name mod2.py still is."""
    if (project / ".MEMOFS").exists():
        pytest.skip("this filesystem folds case")
    for n, (path, tail_ok) in enumerate([("SRC/lib/mod2.py", False), ("src/lib/mod2.py", True)]):
        code, full = run_hook(project / ".memofs", payload=_payload(project, f"case-{n}", path))
        text = json.loads(full)["hookSpecificOutput"]["additionalContext"] if full.strip() else ""
        assert code == 0 and ("- src/lib/mod2.py: part" in text) == tail_ok, (path, text)
        assert tail_ok or "- mod2.py is loaded lazily" in text  # the bare name, whatever the folder's case
        light, _ = _light(project, _payload(project, f"lcase-{n}", path))
        assert light == full.strip()


def _copy(project: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(project, tmp_path / "app", symlinks=True)
    return tmp_path / "app"


@pytest.mark.spawns
@pytest.mark.parametrize("entry", [["-m", "consolidate", "hook"], ["-m", "consolidate.agents.hooks.file_hook"]])
def test_a_damaged_session_tier_still_answers_and_says_so_once_in_the_hook_log(project, tmp_path, entry):
    """sessions.sqlite3 of garbage bytes: the file recall hook exits 0 with its answer (nothing can be
    recorded as shown) and leaves one line naming the file in logs/hook.log (it printed and logged
    nothing)."""
    app = _copy(project, tmp_path)
    store = app / ".memofs"
    for extra in ("-wal", "-shm"):
        (store / f"sessions.sqlite3{extra}").unlink(missing_ok=True)
    (store / "sessions.sqlite3").write_bytes(bytes(range(256)) * 20)
    log = store / "logs" / "hook.log"
    before = log.read_text().splitlines() if log.exists() else []
    payload = json.dumps(_payload(app, "damaged-1", str(app / "src" / "lib" / "mod5.py")))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    if entry[1] == "consolidate":  # ``python -m consolidate hook`` forked (issue 30): its start-up is not what this pins
        r = hooks_fast.run(entry[2:], input=payload, cwd=app, env=env, timeout=60)
    else:
        r = subprocess.run([sys.executable, *entry], input=payload, capture_output=True, text=True, cwd=app, env=env,
                           timeout=60)
    assert r.returncode == 0, r.stderr
    assert "remembered about src/lib/mod5.py" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    new = log.read_text().splitlines()[len(before):]
    assert len(new) == 1 and "sessions.sqlite3" in new[0] and "not usable" in new[0], new


def test_the_table_is_written_where_the_store_has_no_memory_folder_yet(project, tmp_path):
    """A store without memory/ (a consolidation leaves one; a store made by hand or an old one may not):
    the table went to an in-memory copy at every call, rebuilt from the whole graph each time."""
    import shutil

    app = _copy(project, tmp_path)
    shutil.rmtree(app / ".memofs" / "memory", ignore_errors=True)
    code, _ = run_hook(app / ".memofs", payload=_payload(app, "nomem-1", "src/lib/mod5.py"))
    assert code == 0 and (app / ".memofs" / "memory" / "files.sqlite3").is_file()


@pytest.mark.spawns
def test_a_temporary_table_a_killed_writer_left_is_removed_by_the_next_write(project, tmp_path):
    """The table is written under a name of its own in memory/ and renamed; a writer killed before the
    rename left its file (files.sqlite3.<pid>.tmp) there for good. The next write removes the files of
    writers that are gone (their pid is no process, or the file is old) and keeps a live writer's."""
    import os
    import time

    from consolidate.agents import file_recall

    app = _copy(project, tmp_path)
    memory = app / ".memofs" / "memory"
    memory.mkdir(exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = memory / f"files.sqlite3.{dead.pid}.tmp"  # the name a writer killed mid-write used to leave
    killed.write_bytes(b"SQLite format 3\x00 torn")
    old = memory / f"files.sqlite3.{os.getppid()}.0badc0de.tmp"
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    live = memory / f"files.sqlite3.{os.getpid()}.feedf00d.tmp"  # another writer, at work now
    live.write_bytes(b"x")
    (app / ".memofs" / "graph" / "nodes.jsonl").touch()  # the table is stale: the next call writes it
    table = file_recall.load_index(app / ".memofs")
    table.close()
    left = sorted(p.name for p in memory.iterdir() if p.name.endswith(".tmp"))
    assert left == [live.name] and (memory / "files.sqlite3").is_file()


#: bidi controls in Latin, Arabic and Hebrew notes, and right-to-left text without any (issue 28, concern 1)
_BIDI_DOCS = {"b1": "src/lib/bidi.py: always run \u202etset ekam\u202c before pushing",
              "b2": "src/lib/bidi.py \u2067يحفظ الجلسات\u2069 \u200fredis\u061c \u202bللاختبار\u202c",
              "b3": "src/lib/bidi.py \u2068שומר\u2069 \u202aAPP_CONFIG\u202c \u202dב-env\u202c \u2066x\u2069\u200e",
              "r1": "src/lib/bidi.py שומר את ההגדרות שלו ב-APP_CONFIG",
              "r2": "src/lib/bidi.py يقرأ إعداداته من APP_CONFIG"}


def test_the_light_entry_writes_bidi_controls_visibly(tmp_path):
    """Reported (fresh review, issue 28): ``consolidate recall`` wrote a note's U+202E visibly, the file
    recall (the light entry, from its table's lines) printed it raw. The light entry answers itself, as
    the full hook does, every control written as ``\\u202e``; right-to-left text without one unchanged."""
    project = tmp_path / "app"
    (project / "src" / "lib").mkdir(parents=True)
    (project / "src" / "lib" / "bidi.py").write_text("X = 1\n")
    store = project / ".memofs"
    Store(store, embedding="hash").close()
    (store / "graph").mkdir(exist_ok=True)
    (store / "graph" / "nodes.jsonl").write_text("".join(
        json.dumps({"id": i, "kind": "memory", "status": "active", "statement": d}) + "\n" for i, d in _BIDI_DOCS.items()))
    idx = LexicalIndex(index_path(store))
    idx.upsert([{"id": i, "document": d, "metadata": {"status": "active", "tier": "durable"}} for i, d in _BIDI_DOCS.items()])
    idx.close()
    assert run_hook(store, payload=_payload(project, "bidi-warm", "src/lib/none.py"))[0] == 0
    light, tail = _light(project, _payload(project, "bidi-1", "src/lib/bidi.py"))
    code, full = run_hook(store, payload=_payload(project, "bidi-2", "src/lib/bidi.py"))
    assert tail == "0 False" and code == 0 and light == full.strip()  # answered there, as the full hook
    text = json.loads(light)["hookSpecificOutput"]["additionalContext"]
    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    assert not any(c in text for c in controls), ascii(text)
    assert all(f"\\u{ord(c):04x}" in text for c in controls), text
    for rtl in (_BIDI_DOCS["r1"], _BIDI_DOCS["r2"]):
        assert rtl in text, text
