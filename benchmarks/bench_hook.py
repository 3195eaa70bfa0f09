"""Hook latency (issue 7, benchmark 1): ``consolidate hook`` on a Claude Code SessionEnd payload
against ``python -c pass`` and ``python -c "import sqlite3, json"``, side by side, interleaved.

Goal: the hook (``--no-worker``) takes at most 1.5 times ``python -c "import sqlite3, json"``; the
SessionStart hook too (issue 18: it records the agent session and prints the context of 30
memories).
Also: the same with a short reason; the import part alone; a brand-new store; a reference minimal
hook (stdlib only: parse the payload, one SQLite insert into the queue table, close), what a
SQLite queue cannot go below; the hook with its worker spawn (each worker waited for, untimed,
before the next round); and ``python -X importtime -m consolidate hook --no-worker``: the 10
slowest imports and a check that no heavy module (chromadb, litellm, instructor, onnxruntime,
numpy, pydantic, networkx) is imported. When the goal is missed, the hook's steps are timed one
by one in a fresh interpreter.

With ``--against DIR`` (another checkout of the project, e.g. ``git worktree add /tmp/base main``)
the SessionEnd and the fast SessionStart hooks of both are timed side by side, interleaved, each
through ``python -m consolidate`` with ``PYTHONPATH`` set to its checkout and on its own store, with
the ratio of their medians: a change on the hook path measured against the code before it; also
the SessionEnd hook with ``--harvest`` on a transcript of 400 entries, without a worker and with its
worker started (each worker waited for, untimed, before the next round).

    python benchmarks/bench_hook.py [--runs 15] [--against DIR]
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from consolidate.store.views.start_file import START_FILE  # noqa: E402
from _bench import (CONSOLE, HEAVY, PYTHON, check_venv, goal_line, interleaved, median, ms, parser,  # noqa: E402
                    report_importtime, run_cmd, spread)

def payload(sid: str, cwd: str, reason: str = "prompt_input_exit", transcript: str | None = None) -> bytes:
    """Claude Code's SessionEnd payload; its reasons are clear, logout, prompt_input_exit, other."""
    return json.dumps({"session_id": sid, "transcript_path": transcript or f"{cwd}/{sid}.jsonl", "cwd": cwd,
                       "hook_event_name": "SessionEnd", "reason": reason}).encode()


#: Entries of the transcript the ``--harvest`` hooks of ``--against`` read (the hook's bound: 400).
HARVEST_ENTRIES = 400


def write_transcript(path: Path, entries: int) -> Path:
    """A Claude Code JSONL transcript of ``entries`` entries: turns of a user prompt, an assistant
    tool call, its output and the assistant's conclusion (two of the four are harvested)."""
    lines = []
    for i in range(entries):
        kind = i % 4
        uuid = f"bench-{i:05d}"
        if kind == 0:
            entry = {"type": "user", "message": {"role": "user", "content": f"Turn {i}: make the retry in"
                                                                              f" client{i}.py back off exponentially"}}
        elif kind == 1:
            entry = {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"src/client{i}.py"}}]}}
        elif kind == 2:
            entry = {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "def retry():\n    pass\n" * 20}]}}
        else:
            entry = {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": f"client{i}.py now retries with exponential backoff capped at 30 s,"
                                         " five attempts at most."}]}}
        lines.append(json.dumps({"uuid": uuid, "sessionId": "bench", **entry}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


#: The hook's steps one by one, in a fresh interpreter (milliseconds on stdout as JSON).
STEPS = r"""
import json, sys, time
out = {}
t = time.perf_counter(); import consolidate.cli.main as cli; out["import consolidate.cli.main"] = time.perf_counter() - t
t = time.perf_counter(); cli.build_parser(); out["build_parser (imports every parser module)"] = time.perf_counter() - t
t = time.perf_counter(); import consolidate.agents.hooks.full, consolidate.store.sessions.tier; out["import consolidate.agents.hooks.full, .session"] = time.perf_counter() - t
from consolidate.store.sessions.tier import SessionTier
t = time.perf_counter(); tier = SessionTier(sys.argv[1]); out["SessionTier open (connect, WAL, schema)"] = time.perf_counter() - t
t = time.perf_counter(); import consolidate.rules.secrets as s; out["import consolidate.rules.secrets (a reason is given)"] = time.perf_counter() - t
t = time.perf_counter(); s.scan("prompt_input_exit"); out["secrets.scan of a reason of 8+ characters (imports detect_secrets)"] = time.perf_counter() - t
t = time.perf_counter(); tier.end(sys.argv[2], "success", None); tier.close(); out["queue the session end (insert)"] = time.perf_counter() - t
print(json.dumps(out))
"""


#: The least a SQLite-queue hook can do: stdlib only, one insert into the queue table, close.
MINIMAL_HOOK = r"""
import json, sqlite3, sys, time
payload = json.loads(sys.stdin.buffer.read() or b"{}")
c = sqlite3.connect(sys.argv[1], timeout=10.0, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL")
c.execute("PRAGMA synchronous=NORMAL")
c.execute("INSERT INTO session_ends(session_id, outcome, reason, ended_at, status, updated_at) VALUES (?,?,?,?,'queued',?)"
          " ON CONFLICT(session_id) DO UPDATE SET status='queued'",
          ("min-" + payload["session_id"], "success", payload.get("reason"), time.time(), time.time()))
c.close()
"""


def write_context_files(store: Path) -> None:
    """memory/context.md and context.json as a run writes them: the notice and 30 memory lines."""
    from consolidate.store.anchors import write_context_index
    from consolidate.store.views.context_md import render as _context_text
    from consolidate.core.atomic import write_text_atomic
    from consolidate.store.store import Store

    s = Store(store, embedding="hash", project="bench")
    lines = [f"- **fact**: Service {i} listens on port {8000 + i} behind the nginx gateway, see deploy/nginx{i}.conf"
             f" (high)" for i in range(30)]
    write_text_atomic(s.sub("memory", "context.md"), _context_text("bench", lines))
    write_context_index(s, [{"id": f"mem-{i:04d}"} for i in range(30)], [line[2:] for line in lines])
    s.close()
    from consolidate.store.views.recalled import write_start_file

    assert write_start_file(store)  # as every writer of context.md does (consolidate/store/views/recalled.py)


def wait_for_worker(store: Path, timeout: float = 60.0) -> None:
    """Wait (untimed) until the worker the last hook started has exited."""
    log = store / "logs" / "hook.log"
    m = re.search(r"worker pid (\d+)", log.read_text().splitlines()[-1]) if log.exists() else None
    if not m:
        return
    pid, deadline = int(m.group(1)), time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    print(f"note: worker {pid} still running after {timeout:.0f} s")


def main() -> int:
    ap = parser(__doc__, 15, "timed runs per case")
    ap.add_argument("--against", metavar="DIR", type=Path,
                    help="another checkout: its hooks timed side by side with this one's")
    args = ap.parse_args()
    runs = args.runs
    check_venv()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    store = tmp / "store"
    ids = itertools.count()
    # the store exists before the session ends (the agent wrote notes during the session)
    run_cmd([CONSOLE, "hook", "--no-worker", "--store", str(store)], stdin=payload("warm", str(tmp)))

    write_context_files(store)  # what SessionStart prints: the top 30 memories of the last run

    def session_start():
        """A session starts (timed) and ends (untimed), as sessions do: a session left without its end
        would be recovered by the next SessionStart (hook_lifecycle), a cost of its own."""
        sid = f"start{next(ids)}"
        took = run_cmd([CONSOLE, "hook", "--store", str(store)],
                       stdin=json.dumps({"session_id": sid, "hook_event_name": "SessionStart",
                                         "source": "startup", "cwd": str(tmp)}).encode())
        run_cmd([CONSOLE, "hook", "--no-worker", "--store", str(store)], stdin=payload(sid, str(tmp)))
        return took

    def session_start_full():
        """The same on the full path: the start file removed first (untimed), as after a hand edit of
        context.md; the full hook prints and writes it again."""
        (store / "memory" / START_FILE).unlink(missing_ok=True)
        return session_start()

    def hook(*extra, where=store):
        return lambda: run_cmd([CONSOLE, "hook", *extra, "--store", str(where)],
                               stdin=payload(f"s{next(ids)}", str(tmp)))

    def hook_new_store():
        return run_cmd([CONSOLE, "hook", "--no-worker", "--store", str(tmp / f"new{next(ids)}")],
                       stdin=payload("s", str(tmp)))

    print(f"python: {PYTHON}\nconsole script: {CONSOLE}\nstore: {store} (fresh temp store)\n")
    cases = {
        "python -c pass": lambda: run_cmd([PYTHON, "-c", "pass"]),
        'python -c "import sqlite3, json"': lambda: run_cmd([PYTHON, "-c", "import sqlite3, json"]),
        "consolidate hook --no-worker (SessionEnd)": hook("--no-worker"),
        "  same, reason 'other' (under 8 characters: not scanned)": lambda: run_cmd(
            [CONSOLE, "hook", "--no-worker", "--store", str(store)], stdin=payload(f"s{next(ids)}", str(tmp), "other")),
        "  imports only: python -c 'import consolidate.cli.main, consolidate.agents.hooks.full, ...'": lambda: run_cmd(
            [PYTHON, "-c", "import consolidate.cli.main, consolidate.agents.hooks.full, consolidate.store.sessions.tier, consolidate.cli.parser"]),
        "consolidate hook --no-worker, brand-new store": hook_new_store,
        "consolidate hook (SessionStart: records the session, prints 30 memories)": session_start,
        "  same on the full path (no start file: written again)": session_start_full,
        "  reference: minimal stdlib hook (json, sqlite3: one insert, close)": lambda: run_cmd(
            [PYTHON, "-c", MINIMAL_HOOK, str(store / "sessions.sqlite3")], stdin=payload(f"s{next(ids)}", str(tmp))),
    }
    res = interleaved(cases, runs, warmup=2)
    base = median(res['python -c "import sqlite3, json"'])
    print(f"Phase 1: {runs} interleaved rounds (after 2 warm-up rounds); median, min, max of wall clock")
    for name, xs in res.items():
        print(f"  {name:<75} {spread(xs)}   {median(xs) / base:.2f}x of import sqlite3, json")

    # Phase 2: with the worker spawn. Each worker is waited for before the next round (untimed),
    # so a running worker never slows the next measurement.
    spawn = {'python -c "import sqlite3, json"': lambda: run_cmd([PYTHON, "-c", "import sqlite3, json"]),
             "consolidate hook (SessionEnd, spawns the worker)": hook()}
    res2 = interleaved(spawn, runs, warmup=1, setup=lambda name, r: wait_for_worker(store))
    wait_for_worker(store)
    base2 = median(res2['python -c "import sqlite3, json"'])
    print(f"\nPhase 2: with the worker spawn ({runs} interleaved rounds; each worker waited for, untimed)")
    for name, xs in res2.items():
        print(f"  {name:<75} {spread(xs)}   {median(xs) / base2:.2f}x of import sqlite3, json")
    worker_log = store / "logs" / "worker.log"
    if worker_log.exists():
        lines = worker_log.read_text().strip().splitlines()
        print(f"  worker.log: {len(lines)} lines; last: {lines[-1][:160] if lines else '(empty)'}")

    # importtime
    argv = [PYTHON, "-X", "importtime", "-m", "consolidate", "hook", "--no-worker", "--store", str(store)]
    heavy, packages = report_importtime("python -X importtime -m consolidate hook --no-worker", argv, payload("imp", str(tmp)))

    ratio = median(res["consolidate hook --no-worker (SessionEnd)"]) / base
    if ratio > 1.5:
        import subprocess

        steps: dict[str, list[float]] = {}
        for i in range(5):
            p = subprocess.run([PYTHON, "-c", STEPS, str(store / "sessions.sqlite3"), f"step{i}"],
                               capture_output=True, text=True, check=True)
            for k, v in json.loads(p.stdout).items():
                steps.setdefault(k, []).append(v)
        print("\nWhere the hook's time goes (its steps one by one in a fresh interpreter, median of 5;"
              f" interpreter start-up itself: python -c pass = {ms(median(res['python -c pass']))}):")
        for k, v in steps.items():
            print(f"    {ms(median(v)):>10}  {k}")
    print(f"\nhook --no-worker {ms(median(res['consolidate hook --no-worker (SessionEnd)']))} vs python -c pass"
          f" {ms(median(res['python -c pass']))} vs import sqlite3, json {ms(base)};"
          f" with the worker spawn {median(res2['consolidate hook (SessionEnd, spawns the worker)']) / base2:.2f}x")
    start_ratio = median(res["consolidate hook (SessionStart: records the session, prints 30 memories)"]) / base
    also = ""
    if "detect_secrets" in packages:
        also = (f"; not on that list but imported: detect_secrets {packages['detect_secrets']:.0f} ms cumulative"
                f" (with requests and urllib3), loaded by secrets.scan of the end event's reason")
    if heavy:
        print(f"GOAL no heavy import on the hook path ({', '.join(HEAVY)}): MISSED ({', '.join(heavy)}){also}")
    else:
        print(f"GOAL no heavy import on the hook path ({', '.join(HEAVY)}): MET{also}")
    wait_for_worker(store)
    if args.against:
        side_by_side(args.against, runs, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    ok = goal_line("hook latency", ratio, 1.5, what='of python -c "import sqlite3, json"')
    ok_start = goal_line("SessionStart hook latency", start_ratio, 1.5, what='of python -c "import sqlite3, json"')
    return 0 if ok and ok_start and not heavy else 1


#: Writes the start file of the store ``argv[1]`` with the code of the checkout on PYTHONPATH (its
#: writer's place then: consolidate.store.views.recalled since issue 27's cut, start_file before).
WRITE_START_FILE = ("import sys\ntry:\n    from consolidate.store.views.recalled import write_start_file as write\n"
                    "except ImportError:\n    from consolidate.store.views.start_file import write\n"
                    "sys.exit(0 if write(sys.argv[1]) else 1)")


def side_by_side(other: Path, runs: int, tmp: Path) -> None:
    """``--against``: SessionEnd and fast SessionStart of this checkout and ``other``, interleaved."""
    import compileall

    trees = {"this checkout": Path(__file__).resolve().parents[1], "--against": other.resolve()}
    transcript = write_transcript(tmp / "transcript.jsonl", HARVEST_ENTRIES)
    script = tmp / "script.json"
    script.write_text("{}")  # the worker's judge answers nothing: its notes wait, no model is called
    cases: dict = {}
    starts = {}
    ids = itertools.count()
    for label, tree in trees.items():
        if not (tree / "consolidate" / "__init__.py").exists():
            raise SystemExit(f"--against {other}: no consolidate package there")
        compileall.compile_dir(str(tree / "consolidate"), quiet=1)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        st = tmp / ("side-this" if label == "this checkout" else "side-against")
        argv = [PYTHON, "-m", "consolidate", "hook"]
        run_cmd([*argv, "--no-worker", "--store", str(st)], stdin=payload("warm", str(tmp)), env=env)
        write_context_files(st)
        run_cmd([PYTHON, "-c", WRITE_START_FILE, str(st)], env=env)  # stamped with that checkout's code
        starts[label] = st / "memory" / START_FILE

        def end(argv=argv, st=st, env=env):
            return run_cmd([*argv, "--no-worker", "--store", str(st)], stdin=payload(f"s{next(ids)}", str(tmp)), env=env)

        def start(argv=argv, st=st, env=env):
            sid = f"start{next(ids)}"
            took = run_cmd([*argv, "--store", str(st)], env=env, stdin=json.dumps(
                {"session_id": sid, "hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp)}).encode())
            run_cmd([*argv, "--no-worker", "--store", str(st)], stdin=payload(sid, str(tmp)), env=env)
            return took

        def harvest(argv=argv, st=st, env=env, worker=False):
            sid = f"h{next(ids)}"
            took = run_cmd([*argv, "--harvest", *(() if worker else ("--no-worker",)), "--store", str(st),
                            "--embedding", "hash", "--judge", f"scripted:{script}"],
                           stdin=payload(sid, str(tmp), transcript=str(transcript)), env=env)
            if worker:
                wait_for_worker(st)  # untimed: the next round starts on an idle machine
            return took

        cases[f"{label}: hook --no-worker (SessionEnd)"] = end
        cases[f"{label}: hook (SessionStart, start file)"] = start
        cases[f"{label}: hook --harvest --no-worker (SessionEnd)"] = harvest
        cases[f"{label}: hook --harvest (SessionEnd, its worker started)"] = (
            lambda harvest=harvest: harvest(worker=True))
    written = {label: p.stat().st_mtime_ns for label, p in starts.items()}
    res = interleaved(cases, runs, warmup=2)
    print(f"\nSide by side with --against {other} ({runs} interleaved rounds; python -m consolidate,"
          f" PYTHONPATH each checkout's; --harvest on a transcript of {HARVEST_ENTRIES} entries)")
    for name, xs in res.items():
        print(f"  {name:<75} {spread(xs)}")
    for what in ("hook --no-worker (SessionEnd)", "hook (SessionStart, start file)",
                 "hook --harvest --no-worker (SessionEnd)", "hook --harvest (SessionEnd, its worker started)"):
        this, against = median(res[f"this checkout: {what}"]), median(res[f"--against: {what}"])
        print(f"  {what}: this checkout / --against = {this / against:.3f} (medians)")
    for label, p in starts.items():
        if p.stat().st_mtime_ns != written[label]:
            print(f"  note: {label}'s start file was written again: its SessionStarts took the full path")


if __name__ == "__main__":
    sys.exit(main())
