"""``consolidate demo``: the whole pipeline on sample sessions, in a throwaway store, then a session
with a workspace (start, scratch, output, extract, abort and resume, success) and a memory anchored
to code that drifts when its function is edited.

The sample notes are written for this project (no real data): a debugging session (success), a
refactor (success) that re-confirms one lesson of the first, a failed deploy (failure), a session
judged during a simulated judge outage, and a session with a workspace. They hold
flagged notes, a note with a fake API key, an expired note and plain maybes. The judge is the best one
available: the API judge when a model is configured or a provider key is set, else the rules judge,
opted in for the demo (and said so).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from typing import Any
from consolidate.rules.redaction import error_text
from consolidate.core.errors import PathRefused
from consolidate.pipeline.workspace import start
from consolidate.model.plan import run_summary as summary
from consolidate.model.run_lines import count_line
from consolidate.store.store import Store
from consolidate.store.resolve import in_folder
from consolidate.pipeline.recall import recall
from consolidate.store.views import shown as agent_view
import os
from pathlib import Path
from consolidate.model.report import render_plan
from consolidate.pipeline.run import run_queue, run_session
from consolidate.store import anchors

# A fake key, assembled at run time so no scanner mistakes this file for a leak.
_FAKE_KEY = "sk-" + "proj-" + "Zq7uT2mB9xKc4LwR8nVd1YhE6fJp3sGa"

SESSIONS: list[tuple[str, str, str | None, list[dict[str, Any]]]] = [
    ("debug-login-timeout", "success", None, [
        dict(text="Login tests time out on CI because the test DB container starts after pytest; "
                  "fixed by adding a healthcheck wait in docker-compose.test.yml", flag=True, kind="failure"),
        dict(text="Decided to keep session tokens in Redis instead of Postgres because token lookups "
                  "run on every request and Postgres added 40 ms", flag=True, kind="decision"),
        dict(text="Run `pytest -x tests/auth` with `DB_WAIT=1`: it works and catches the race locally"),
        dict(text="currently looking at auth/middleware.py line 80"),
        dict(text="[x] reproduce the timeout"),
        dict(text="OPENAI_API_KEY=" + _FAKE_KEY + " (from my shell, for the flaky test)"),
        dict(text="dev server port for this run: 5173", ttl="1m", expired=True),
        dict(text="Maybe the timeout is DNS?"),
    ]),
    ("refactor-settings", "success", None, [
        dict(text="The user prefers pnpm over npm for every package in this repo", flag=True, kind="preference"),
        dict(text="Never import settings at module level in auth/: it breaks test overrides", flag=True,
             kind="constraint"),
        dict(text="Login tests time out on CI because the test DB container starts after pytest; "
                  "fixed by adding a healthcheck wait in docker-compose.test.yml", flag=True, kind="failure"),
        dict(text="Moved settings.py into config/ and updated 14 imports"),
        dict(text="Chose pydantic-settings over python-decouple because it validates types at startup"),
        dict(text="Status: refactor 80% done"),
        dict(text="For now the staging DB is used for tests", flag=True, kind="fact", ttl="1d"),
        dict(text="Decided to drop the legacy /v1 endpoints", flag=True, kind="decision"),
    ]),
    ("deploy-friday", "failure", "deploy rolled back: migration 0042 locked the users table", [
        dict(text="Migration 0042 locks the users table for minutes on production-size data", flag=True,
             kind="fact"),
        dict(text="Tried deploying with --no-verify"),
    ]),
]

#: Judged with the no-op judge only, as during a judge outage: the flagged note still graduates, the
#: maybes are left unjudged (and die with the session), nothing unjudged is written.
OUTAGE_SESSION: tuple[str, str, str | None, list[dict[str, Any]]] = ("judge-outage", "success", None, [
    dict(text="Feature flags live in config/flags.toml and are read once at startup", flag=True, kind="fact"),
    dict(text="The payments webhook retries 3 times with a 10 s backoff, so handlers must be idempotent"),
    dict(text="Looked at the webhook logs for an hour"),
])


#: How many sample sessions the demo runs (the README says it in words; tests/docs/test_docs_consistency.py).
SAMPLE_SESSIONS = len(SESSIONS) + 2  # + the judge outage and the workspace session


def load_samples(store, now: float | None = None) -> None:
    """Write the sample sessions into ``store`` and end them with their outcomes."""
    now = time.time() if now is None else now
    for sid, outcome, reason, notes in SESSIONS + [OUTAGE_SESSION]:
        for n in notes:
            created = now - 3600 if n.get("expired") else now
            store.sessions.add_note(sid, n["text"], flag=n.get("flag", False), kind=n.get("kind"),
                                    ttl=n.get("ttl"), now=created)
        store.sessions.end(sid, outcome, reason, now=now)


def choose_judges() -> tuple[list[str], str]:
    """The demo's chain and a sentence saying which judge decides."""
    from consolidate.judges import registry  # noqa: PLC0415 - heavy (pydantic): loaded only when used

    ok, why = registry.load("api").available()
    if ok:
        return ["api", "rules"], f"judge: the API judge ({why}); the rules judge answers what it cannot"
    return ["rules"], ("judge: the rules judge (deterministic wording heuristics, opted in for this demo),"
                       " because no model is configured: set CONSOLIDATE_API_MODEL (and CONSOLIDATE_API_BASE"
                       " for a local server) or a provider key to use one")


def show_workspace(store, judges) -> None:
    """A session with a workspace (consolidate.pipeline.workspace): context recalled for the task, scratch in
    working/, candidates in output/ (one holding a fake key, blocked at extraction), an escape
    refused, an abort and a resume, then success through the pipeline."""
    sid = "workspace-ci-cache"
    ws, info = start(store, sid, task="speed up the login tests on CI")
    print(f"session {sid} with a workspace ({info['path']}):")
    print(f"  start: context/ holds core.md, session.json and {info['memories']} memories recalled for the task")
    ws.write("working/plan.md", "1. time the CI steps\n")
    try:
        ws.write("../../escape.md", "x")
    except PathRefused as exc:
        print(f"  write ../../escape.md: refused ({error_text(exc)})")
    ws.write("output/durable-memory.md",
             "## Decisions\n\n- Decided to cache the pip wheels on CI because installing them took 3 of the"
             " 5 minutes\n- CI_TOKEN=" + _FAKE_KEY + "\n")
    got = ws.extract()
    print(f"  extract: {got['candidates']} candidate, {len(got['blocked'])} blocked by the secret gate"
          f" ({', '.join(got['blocked'][0]['kinds'])} {' '.join(got['blocked'][0]['previews'])})")
    ws.complete("aborted")
    ws, info = start(store, sid)
    print(f"  aborted, then resumed as it was: working/plan.md still says {ws.read('working/plan.md')['content'].strip()!r}")
    done = ws.complete("success")
    print(f"  complete(success): {done['extracted']} candidate queued, working/ removed: {done['working_removed']}")
    for plan in run_queue(store, session_id=sid, judges=judges):
        print(render_plan(plan))
    print()


_AUTH = ('import hmac\n\n\ndef check_token(given, expected):\n    return hmac.compare_digest(given, expected)\n'
         '\n\ndef log_attempt(user):\n    print("login", user)\n')


def show_anchors(store, folder) -> None:
    """A memory anchored to a function of the project: an edit elsewhere in the file is no drift,
    an edit of the function shows ``[drifted: path]`` in recall and queues a re-judge."""
    src = Path(folder) / "src" / "auth.py"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(_AUTH, encoding="utf-8")
    sid = "anchored-memory"
    store.sessions.add_note(sid, "check_token() in src/auth.py compares tokens with hmac.compare_digest, never with ==",
                            flag=True, kind="constraint")
    store.sessions.end(sid, "success")
    run_session(store, sid, judges=["noop"])
    section = anchors.read_section(store.path)
    mid = next(m for m, a in section["memories"].items() if a and a[0][0] == "src/auth.py")
    (path, symbol, digest), = section["memories"][mid]
    print(f"memory anchored to code: {path} symbol {symbol} (hash {digest}, cached in manifest.json)")

    def recall_line() -> str:
        hits = store.longterm().search("how are tokens compared in check_token?", k=5)
        got = agent_view.view(hits, "cli-recall", drift=agent_view.drift_of(store, [h["id"] for h in hits]),
                              forgotten=agent_view.forgotten_ids(store))
        return next(text for h, text in zip(got.rows, got.lines) if h["id"] == mid)

    def edit(old: str, new: str) -> None:
        text = src.read_text(encoding="utf-8").replace(old, new)
        src.write_text(text, encoding="utf-8")
        st = src.stat()
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))

    edit('print("login", user)', 'print("login attempt", user)')
    print(f"  after an edit of log_attempt(): {recall_line()}")
    edit("return hmac.compare_digest(given, expected)", "return given == expected")
    print(f"  after an edit of check_token(): {recall_line()}")
    queued = anchors.read_section(store.path)["drifted"]
    print(f"  queued for `consolidate batch --rejudge --drifted`: {len(queued)} memory\n")


def run_demo(keep: bool = False) -> int:
    """Run the demo and print what happened; returns 0."""
    folder = tempfile.mkdtemp(prefix="consolidate-demo-")
    started = time.perf_counter()
    try:
        store = Store(in_folder(folder), project="demo-app")
        load_samples(store)
        judges, said = choose_judges()
        where = f"{store.path} (kept: --store {store.path} works on it)" if keep else "(deleted at the end)"
        print(f"consolidate demo: {SAMPLE_SESSIONS} sample sessions in a throwaway store {where}")
        print(said)
        print()
        plans = [run_session(store, OUTAGE_SESSION[0], judges=["noop"])]
        plans[0].session_id += " (judge outage simulated with the no-op judge)"
        plans[:0] = run_queue(store, judges=judges)
        for plan in plans:
            print(render_plan(plan))
            s = summary(plan)
            print(f"  -> {count_line(s)}\n")
        show_workspace(store, judges)
        show_anchors(store, folder)
        query = "why do the login tests time out on CI?"
        print(f'recall "{query}":')

        for hit in recall(store, query, k=3).memories:
            print("  " + agent_view.line(hit["document"], hit["metadata"], "cli-recall"))
        print(f"\nstore layout: manifest.json, sessions.sqlite3, chroma/, graph/, events/memory-events.jsonl,"
              f" memory/notes.md · demo took {time.perf_counter() - started:.1f} s")
        store.close()
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0
