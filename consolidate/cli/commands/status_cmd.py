"""``consolidate status``: the store, its queue, worker and team at a glance; and what ``status`` and
``install-hook`` say about a team store (consolidate.team.local only: the team's server code is not loaded)."""

from __future__ import annotations

import json
from consolidate.core.dates import display, iso
from consolidate.model.run_lines import counted, result_line
from consolidate.cli.commands import open_store
from consolidate.rules.redaction import error_text
from consolidate.core.errors import StoreCorrupt
from consolidate.store.anchors import read_section
from consolidate.store.snapshots import list_runs, path_of
from consolidate.store.worker_health import health_line, queue_state, read as worker_status
from consolidate.store.sessions.tables import pending_harvest_sessions
from consolidate.team.local import status as team_status
from consolidate.store.store import project_note
from consolidate.store.worker_health import age
from consolidate.model.report import run_notices
from consolidate.pipeline.review import queue as review_queue
from pathlib import Path
from consolidate.team.local import load_config


def team_lines(info: dict) -> list[str]:
    """What ``status`` and ``sync --status`` print about the team store (never the token)."""
    lines = [f"team store: {info['url']} project {info['project']} (database {info['database']}, this machine"
             f" {info['machine']})",
             f"last push: {info.get('last_push') or 'never'}; last pull: {info.get('last_pull') or 'never'}",
             f"pending pushes: {info['pending_pushes']}" + (" (pushed by the next run or `consolidate sync`)"
                                                            if info["pending_pushes"] else "")]
    if info.get("last_error"):
        lines.append(f"last team error: {info['last_error']}")
    return lines

def install_note(store: str | None) -> str:
    """What ``install-hook`` says about a store in a team: where the hooks' token comes from ('' for
    a store not in a team). Never the token."""

    if not store:
        return ""
    try:
        cfg = load_config(Path(store))
    except Exception:  # noqa: BLE001 - a bad team.json is reported by the commands that use it
        return ""
    if cfg is None:
        return ""
    where = cfg.token_file or f"${cfg.token_env}"
    return (f"team store: {cfg.url} project {cfg.project}: the hooks pull and push with the token from {where}"
            " (give the agent CLI that environment; the token is never written into the hook command)")

def _anchor_counts(store) -> dict:
    """Memories anchored to code, and how many are drifted or stale (consolidate.store.anchors), from
    the manifest as the last check left it."""

    section = read_section(store.path)
    return {"anchored": len(section["memories"]), "drifted": len(section["drifted"]), "stale": len(section["stale"])}

#: How ``status`` says where the project comes from.
_PROJECT_SOURCES = {"option": "--project", "environment": "CONSOLIDATE_PROJECT", "team": "the team store's",
                    "store": "recorded in the store", "folder": "the folder's name: the store records none yet"}

def cmd_status(args) -> int:
    store = open_store(args, create=False)
    if not store.exists:
        if args.json:
            print(json.dumps({"store": str(store.path), "exists": False}))
        else:
            print(f"store: {store.path} (none yet: `consolidate note` or `import` creates it)")
        return 0
    queued = store.sessions.queued()
    status: dict = {"store": str(store.path), "project": store.project, "project_source": store.project_source,
                    "recorded_project": store.recorded_project, "queued": [q["session_id"] for q in queued],
                    "sessions_with_notes": store.sessions.sessions(), "memories": {},
                    "last_run": (store.sessions.last_runs(1) or [None])[0]}
    status["last_maintenance_run"] = _last_maintenance(store)
    last = status["last_run"]
    if last and last.get("run_id"):
        last["undone"] = _undone(store, last["run_id"])
    damaged = None
    if store.has_longterm:
        try:
            status["memories"] = store.longterm().counts()
        except StoreCorrupt as exc:  # a missing or unreadable recall index: the rest is still shown
            damaged = exc
            status["memories_error"] = error_text(exc)
        status["anchors"] = _anchor_counts(store)
    status["to_review"] = len(review_queue(store)) if status["memories"] else 0  # `consolidate review --list`
    status["waiting"] = _waiting_status(store)

    queue = queue_state(store.sessions.db)  # queued or running ends (the queue file folded above)
    oldest = queue["oldest_age_seconds"]
    status["queue"] = {"count": queue["count"], "oldest_age_seconds": round(oldest, 1) if oldest is not None else None}
    status["worker"] = worker_status(store.path)  # logs/worker.status.json: failures since the last good run
    warning = health_line(status["worker"], queue, status_hint=False)

    status["harvests_pending"] = pending_harvest_sessions(store.sessions.db)

    status["team"] = team_status(store)
    if last:
        last["partial"] = last.get("status") == "partial"
    if args.json:
        print(json.dumps(status, ensure_ascii=False, default=str))
        return damaged.exit_code if damaged else 0
    _print_store(store, status, damaged)

    print(f"queued session ends: {len(queued)}" + (f" ({', '.join(status['queued'][:10])})" if queued else "")
          + (f"; the oldest ended {age(oldest)} ago" if oldest is not None else ""))
    if warning:
        print(warning.removeprefix("consolidate: "))
    swn = status["sessions_with_notes"]
    print(f"sessions with notes: {len(swn)}" + (f" ({sum(swn.values())} notes)" if swn else ""))
    if status["harvests_pending"]:
        hp = status["harvests_pending"]
        print(f"harvests not finished: {len(hp)} sessions ({', '.join(hp[:10])}): their hook was stopped before its"
              " transcript harvest finished; the worker or the next `consolidate run` of the session makes it")
    if status["team"]:
        for line in team_lines(status["team"]):
            print(line)
    w = status["waiting"]
    if w["notes"]:
        print(f"waiting for a judge: {w['notes']} notes in {len(w['sessions'])} sessions (partial runs); the first"
              f" bound {w['first_until']}: judged by the next run with an answering judge (`consolidate judges`)")
    _print_runs(last, status["last_maintenance_run"])
    return damaged.exit_code if damaged else 0


def _print_store(store, status: dict, damaged) -> None:
    """The ``store:``, ``project:``, ``memories:`` and ``anchored to code:`` lines."""
    print(f"store: {status['store']}")
    print(f"project: {store.project} ({_PROJECT_SOURCES[store.project_source]})")
    if project_note(store):
        print(project_note(store))
    mem = status["memories"]
    print("memories: " + (f"unavailable: {damaged}" if damaged else
                          ", ".join(f"{k} {v}" for k, v in sorted(mem.items())) if mem else "none"))
    if status.get("to_review"):
        print(f"to review: {counted(status['to_review'], 'memory', 'memories')} (`consolidate review --list`)")
    anchored = status.get("anchors") or {}
    if anchored.get("anchored"):
        print(f"anchored to code: {anchored['anchored']} memories; {anchored['drifted']} drifted"
              f" (queued for `consolidate batch --rejudge --drifted`), {anchored['stale']} stale (file gone)")


def _undone(store, run_id: str) -> str | None:
    """When ``consolidate undo`` reverted ``run_id`` (its undo record's ``undone``, ISO UTC), else None."""
    try:
        return json.loads(path_of(store, run_id).read_text(encoding="utf-8")).get("undone") or None
    except (OSError, ValueError):
        return None


def _print_runs(last: dict | None, m: dict | None) -> None:
    """The ``last run:`` lines (the last session run, its notices) and the ``last maintenance run:`` one."""
    if last:
        partial = (f"  PARTIAL: {(last['result'] or {}).get('waiting', '?')} notes left waiting for a judge"
                   if last["partial"] else "")
        print(f"last run: {last['run_id'] or '-'} session {last['session_id']} ({last['status']}): "
              + result_line(last["result"]) + ("  (undone by `consolidate undo`)" if last.get("undone") else "")
              + partial)
        for line in run_notices(last["result"]):
            print(f"  ! {line}")
    if m:
        print(f"last maintenance run: {m['run_id']} ({m['kind']}, {display(m['started_at'])}):"
              f" {counted(m['changed'], 'memory', 'memories')} changed, {m['added']} added"
              + ("  (undone by `consolidate undo`)" if m["undone"] else "") + "; `consolidate runs` lists them all")


def _last_maintenance(store) -> dict | None:
    """The newest maintenance run (curate, review, forget, resolve, doctor --repair...: the undo records
    whose session is ``maintenance:<kind>``, consolidate/pipeline/maintenance.py) as ``{"run_id", "kind",
    "started_at" (Unix seconds, as ``last_run``'s ``finished_at``), "changed", "added", "undone" (when
    ``consolidate undo`` reverted it, ISO UTC, as ``last_run``'s; else null)}``; None when there is none."""
    for r in list_runs(store):
        if str(r["session_id"]).startswith("maintenance:"):
            return {"run_id": r["run_id"], "kind": r["session_id"].split(":", 1)[1], "started_at": r["started_at"],
                    "changed": r["changed"], "added": r["added"], "undone": _undone(store, r["run_id"])}
    return None

def _waiting_status(store) -> dict:
    """Notes waiting for a judge: ``{"notes", "sessions": {id: count}, "first_until"}`` (ISO UTC)."""
    rows = store.sessions.waiting()
    sessions: dict[str, int] = {}
    for w in rows.values():
        sessions[w["session_id"]] = sessions.get(w["session_id"], 0) + 1
    first = min((w["until"] for w in rows.values()), default=None)
    return {"notes": len(rows), "sessions": sessions, "first_until": iso(first) if first is not None else None}
