"""Helpers shared by the crash, concurrency and undo tests: a deterministic scenario and a dump of
everything a store holds, normalised so that two runs of the same input compare equal."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

from preloaded import run as run_preloaded

SCRIPT = {
    "cache key": {"verdict": "keep", "statement": "The CI cache key includes the lockfile hash so installs are reproducible",
                  "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"},
    "looked at": {"verdict": "drop", "reason": "scripted drop"},
}
SEED_NOTE = "Feature flags live in config/flags.toml and are read once at startup"
SECRET = "ghp_" + "Zt4Kq9Lm2Xw7Pv3Rb8Nc5Hs1Jd6Fg0Ya2Eu4"


def write_script(folder: Path) -> str:
    path = folder / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return f"scripted:{path}"


def seed(store) -> None:
    """An existing memory the scenario re-confirms."""
    from consolidate.pipeline.run import run_queue

    store.sessions.add_note("s0", SEED_NOTE, flag=True)
    store.sessions.end("s0", "success")
    run_queue(store, judges=["noop"])


def scenario_notes(store, sid: str = "s1") -> None:
    """Every kind of decision in one session: re-confirmation, flagged keep, judged keep and drop,
    transient, blocked secret."""
    s = store.sessions
    s.add_note(sid, SEED_NOTE, flag=True)
    s.add_note(sid, "Releases are cut from release/* branches only, never from main", flag=True, kind="constraint")
    s.add_note(sid, "the cache key note from the CI investigation")
    s.add_note(sid, "looked at the logs for a while")
    s.add_note(sid, "For now the staging DB is used for tests", flag=True, ttl="30d")  # a TTL: transient
    s.add_note(sid, f"token {SECRET} from the shell")
    s.end(sid, "success")


def run_cli(store_path: Path, *args: str, crash_at: str | None = None, env_extra: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m consolidate *args`` on ``store_path`` (hash embedding) in a new process forked from
    one with chromadb imported (tests/support/preloaded.py); ``crash_at``: the CONSOLIDATE_CRASH_AT point
    where it kills itself (SIGKILL: return code -9)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CONSOLIDATE_CRASH_AT",)}
    env.update({"CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_EMBEDDING": "hash", "CONSOLIDATE_PROJECT": "p"})
    if crash_at:
        env["CONSOLIDATE_CRASH_AT"] = crash_at
    env.update(env_extra or {})
    return run_preloaded(list(args), env=env, timeout=timeout)


_VOLATILE = {"run_id", "ts", "seq", "date", "stage_seconds", "seconds", "claimed_by"}


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, str) and obj.startswith("{") and obj.endswith("}"):
        try:
            return _clean(json.loads(obj))
        except ValueError:
            return obj
    return obj


def dump(store) -> dict:
    """Everything the store holds, without run ids, times and sequence numbers."""
    from consolidate.store import graph

    out: dict = {}
    if store.has_longterm:
        res = store.longterm().collection.get(include=["documents", "metadatas"])
        out["chroma"] = sorted((i, d, json.dumps(_clean(m), sort_keys=True))
                               for i, d, m in zip(res["ids"], res["documents"], res["metadatas"]))
    g = graph.load(store.sub("graph"))
    out["nodes"] = sorted((n, json.dumps(_clean(a), sort_keys=True)) for n, a in g.nodes(data=True))
    out["edges"] = sorted((u, v, k, json.dumps(_clean(a), sort_keys=True)) for u, v, k, a in g.edges(keys=True, data=True))
    events = []
    if store.events_path.exists():
        events = [json.loads(x) for x in store.events_path.read_text(encoding="utf-8").splitlines()]
    out["events"] = sorted(Counter(json.dumps(_clean(e), sort_keys=True) for e in events).items())
    keys = [(e.get("run_id"), e.get("seq")) for e in events]
    out["duplicate_event_keys"] = len(keys) - len(set(keys))
    md = store.notes_md_path.read_text(encoding="utf-8") if store.notes_md_path.exists() else ""
    out["notes_md_entries"] = sorted(line.split("] (")[0] for line in md.splitlines() if line.startswith("- **"))
    out["session_rows"] = store.sessions.sessions()
    out["queue"] = sorted((r["session_id"], r["status"]) for r in
                          [store.sessions.session_end(s) for s in ("s0", "s1")] if r)
    out["journal"] = sorted(p.name for p in store.sub("journal").glob("*")) if store.sub("journal").is_dir() else []
    return out
