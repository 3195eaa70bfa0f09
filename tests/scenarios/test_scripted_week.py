"""The scripted week: 30 candidate writes over 7 simulated days through the real pipeline with a
scripted judge (trivia, a contradiction pair, two secrets, one inference observed three times, flagged
notes, notes that expire, a judge outage). The final audit asserts that exactly the justified,
metadata-complete entries remain and that the events explain every note."""

import datetime as dt
import json

from consolidate.store import archive
from consolidate.pipeline.run import run_session
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP, keep

DAY = 86400.0
T0 = dt.datetime(2026, 7, 6, 9, 0, tzinfo=dt.timezone.utc).timestamp()
AWS = "AKIA" + "Q3VZ7XK2M4PLR8NW"
PG_PASSWORD = "Vq8" + "zL2mT9xRk4"
INFERENCE = "The search index is rebuilt nightly by a cron job on the worker host"

# (day, text, options); options: flag, kind, metadata, ttl_expired
WEEK = [
    (1, "Never run migrations against production without a fresh backup snapshot", dict(flag=True, kind="constraint")),
    (1, "[x] set up CI", {}),
    (1, f"used key {AWS} to test the S3 upload", {}),
    (1, "dev server on port 5173", dict(ttl_expired=True)),
    (1, "search index seems to rebuild at night", {}),
    (2, "42", {}),
    (2, "Chose Postgres over MySQL because we need JSONB columns for the event payloads", dict(flag=True, kind="decision")),
    (2, "the search index rebuild looked nightly again", {}),
    (2, "Status: refactor 50% done", {}),
    (3, "The public API rate limit is 100 requests per minute per key", dict(flag=True, kind="constraint",
                                                                           metadata={"evidence": "observed-success"})),
    (3, f"connect with postgres://app:{PG_PASSWORD}@db.internal:5432/prod", {}),
    (3, "currently editing src/app.py", {}),
    (3, "Maybe use Redis later?", {}),
    (4, "The public API rate limit is 300 requests per minute per key", dict(flag=True, kind="constraint",
                                                                           metadata={"evidence": "user-stated"})),
    (4, "search index: nightly rebuild confirmed in the cron logs", {}),
    (4, "ok", {}),
    (4, "for now tests use the staging DB", {}),
    (5, "Run `make e2e` with HEADLESS=1; it works on CI and locally", dict(flag=True, kind="recipe")),
    (5, "decided to split the billing module", {}),
    (5, "port 8080 for this run", dict(ttl_expired=True)),
    (5, "reminder: no migrations on prod without a backup", {}),
    (6, "Feature flags live in config/flags.toml and are read once at startup", dict(flag=True)),
    (6, "webhook retries look like 3 attempts", {}),
    (6, "the CSV export pads dates oddly", {}),
    (6, "npm ci is slow on the runner", {}),
    (6, "checked the logs", {}),
    (6, "looked at flaky test again", {}),
    (7, "the user said they prefer squash merges on every PR", {}),
    (7, "TODO: write docs", {}),
    (7, "always write tests for your code", {}),
]

JUDGE = ScriptedJudge({
    "[x] set up CI": DROP,
    "search index": keep(INFERENCE, evidence="inferred", confidence="medium"),
    "42": keep("42"),
    "Status:": DROP,
    "currently editing": DROP,
    "Maybe use Redis": DROP,
    "ok": DROP,
    "for now tests use the staging DB": keep("For now the tests use the staging database", evidence="observed-success"),
    "split the billing module": keep("The billing module will be split in two", "decision"),
    "no migrations on prod": keep("Never run migrations against production without a fresh backup snapshot",
                                  "constraint", evidence="user-stated"),
    "squash merges": keep("The user prefers squash merges for every pull request", "preference",
                          evidence="user-stated", who="user"),
    "TODO": DROP,
    "always write tests": DROP,
}, relations={"300 requests": "contradicts"})
OUTAGE = ScriptedJudge(fail="unavailable", name="outage")

EXPECTED = {
    ("constraint", "Never run migrations against production without a fresh backup snapshot"),
    ("decision", "Chose Postgres over MySQL because we need JSONB columns for the event payloads"),
    ("fact", INFERENCE),
    ("constraint", "The public API rate limit is 300 requests per minute per key"),
    ("recipe", "Run `make e2e` with HEADLESS=1; it works on CI and locally"),
    ("fact", "Feature flags live in config/flags.toml and are read once at startup"),
    ("preference", "The user prefers squash merges for every pull request"),
}
#: Events that settle a note's fate; every note of the week must have one.
TERMINAL = {"note.purged", "note.blocked", "note.judged_drop", "note.unjudged", "candidate.rejected",
            "candidate.transient", "candidate.duplicate", "memory.reconfirmed", "memory.written"}


def test_scripted_week(minilm_store):
    st = minilm_store
    for day in range(1, 8):
        now = T0 + (day - 1) * DAY
        sid = f"day-{day}"
        for d, text, opt in WEEK:
            if d != day:
                continue
            opt = dict(opt)
            created = now - 3600 if opt.pop("ttl_expired", False) else now
            st.sessions.add_note(sid, text, ttl="10m" if created != now else None, now=created, **opt)
        st.sessions.end(sid, "success", now=now)
        judge = OUTAGE if day == 6 else JUDGE
        run_session(st, sid, chain_factory=lambda j=judge: JudgeChain([j]), now=now, time_box=None)

    # 1. exactly the justified entries remain, all active and metadata-complete
    rows = st.longterm().all()
    assert {(r["metadata"]["type"], r["document"]) for r in rows} == EXPECTED
    for r in rows:
        m = r["metadata"]
        assert m["status"] == "active" and m["tier"] == "durable" and m["scope"] == "testproj"
        for key in ("evidence", "confidence", "last_confirmed", "session_id", "run_id", "source", "provenance"):
            assert m.get(key), (key, r["document"])
        prov = json.loads(m["provenance"])
        assert prov["note_ids"] and prov["session_id"].startswith("day-")
    inference = next(r["metadata"] for r in rows if r["document"] == INFERENCE)
    assert (inference["confidence"], inference["evidence"], inference["last_confirmed"]) == \
        ("high", "observed-success", "2026-07-09")  # quarantined day 1, promoted day 2, raised day 4
    backup = next(r["metadata"] for r in rows if r["document"].startswith("Never run migrations"))
    assert backup["last_confirmed"] == "2026-07-10"  # re-confirmed on day 5

    # 2. the weaker rate limit was superseded and archived, with its link
    superseded = [json.loads(p.read_text()) for p in st.sub("archive").glob("mem-*.json")]
    assert [(s["document"], s["metadata"]["status"]) for s in superseded] == [
        ("The public API rate limit is 100 requests per minute per key", "superseded")]

    # 3. the events explain every note
    events = [json.loads(x) for x in st.events_path.read_text(encoding="utf-8").splitlines()]
    explained: dict[tuple[str, int], set[str]] = {}
    for e in events:
        for nid in e.get("note_ids") or []:
            explained.setdefault((e["session_id"], nid), set()).add(e["event"])
    assert len(explained) == 30
    for key, kinds in explained.items():
        assert kinds & TERMINAL, (key, kinds)
    count = lambda kind: sum(1 for k in explained.values() if kind in k)  # noqa: E731
    assert count("note.blocked") == 2 and count("note.purged") == 2 and count("note.unjudged") == 5
    assert count("candidate.transient") == 1
    rejected = [e["reason"] for e in events if e["event"] == "candidate.rejected"]
    assert any("bare number" in r for r in rejected) and any("needs reason" in r for r in rejected)

    # 4. no secret anywhere in the store, no session row left
    for path in st.path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert AWS.encode() not in data and PG_PASSWORD.encode() not in data, path
    # the day-6 outage: its 5 maybes wait for a judge in the session tier (issue 12), nothing else is left
    assert st.sessions.sessions() == {"day-6": 5}
    assert len(st.sessions.waiting("day-6")) == 5 and st.sessions.session_end("day-6")["status"] == "partial"
    assert archive.tombstones(st) == set()
