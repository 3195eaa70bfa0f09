"""`consolidate batch`: drains the queue and orphans concurrently, expires quarantine, decays,
re-judges, and survives Ctrl-C with a consistent store and a resumable queue."""

import pytest
import io
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

from consolidate import Store
from consolidate.pipeline.batch import run_batch
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from conftest import DROP, keep


def _fill(store, n, now=None):
    for i in range(n):
        sid = f"s{i:02d}"
        store.sessions.add_note(sid, f"Service {i} listens on port {9000 + i} behind the gateway", flag=True)
        store.sessions.add_note(sid, f"maybe note {i} about the queue worker", now=now)
        store.sessions.end(sid, "success")


class _OverlapJudge(ScriptedJudge):
    """Counts judge calls in flight at once: the peak shows overlap whatever the machine's load."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def judge(self, batch, context, timeout):
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            return super().judge(batch, context, timeout)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_batch_twenty_sessions_concurrently(store):
    _fill(store, 20)
    judge = _OverlapJudge(default=DROP, latency=0.2)
    out = io.StringIO()
    r = run_batch(store, concurrency=8, chain_factory=lambda: JudgeChain([judge]), out=out)
    assert len(r.sessions) == 20 and not [s for s in r.sessions if "error" in s]
    assert r.left_in_queue == 0 and store.sessions.sessions() == {}
    assert store.longterm().collection.count() == 20
    lines = out.getvalue().splitlines()
    assert len(lines) == 20 and lines[-1].startswith("[20/20]")  # plain progress lines off a terminal
    events = [json.loads(x) for x in store.events_path.read_text().splitlines()]
    assert sum(1 for e in events if e["event"] == "run.applied") == 20
    assert judge.peak >= 2  # judge calls overlapped (a wall-clock bound failed on a loaded machine)


def test_orphans_expiry_and_rejudge(store):
    old = time.time() - 3 * 86400
    store.sessions.add_note("orphan", "Deploys need the VPN up: the registry is internal only", flag=True, now=old)
    store.sessions.add_note("fresh", "still working on this one", now=time.time())
    judge = ScriptedJudge({"cache": keep("The CDN cache is purged on every deploy of the web app", evidence="inferred"),
                           "retries": keep("Webhook handlers must be idempotent because deliveries retry", "constraint")},
                          default=DROP)
    judge.prompt_version = "v-old"
    store.sessions.add_note("s1", "cache note")
    store.sessions.add_note("s1", "retries note")
    store.sessions.end("s1", "success")
    r = run_batch(store, chain_factory=lambda: JudgeChain([judge]))
    assert r.orphans_ended == ["orphan"] and store.sessions.count("fresh") == 1
    assert store.longterm().collection.count() == 3  # orphan's flag, a quarantined and an active keep
    # re-judge under a new prompt version: the constraint is kept, the quarantined one dropped
    new = ScriptedJudge({"idempotent": keep("same", "constraint")}, default=DROP)
    new.prompt_version = "v-new"
    r = run_batch(store, chain_factory=lambda: JudgeChain([new]), rejudge=True)
    assert r.rejudged == {"considered": 2, "kept": 1, "dropped": 1, "unjudged": 0}
    metas = {m["source"]: m for m in store.longterm().collection.get(include=["metadatas"])["metadatas"]}
    assert metas["judge:scripted:script"]["prompt_version"] == "v-new"
    assert store.longterm().collection.count() == 2
    # a judge outage during re-judging deletes nothing
    r = run_batch(store, chain_factory=lambda: JudgeChain([ScriptedJudge(fail="unavailable")]), rejudge=True,
                  prompt_version="v-new")
    assert r.rejudged["unjudged"] == 1 and store.longterm().collection.count() == 2


def test_batch_expires_quarantine(store, monkeypatch):
    judge = ScriptedJudge(default=keep("Image thumbnails are generated lazily on first request", evidence="inferred",
                                       confidence="medium"))
    store.sessions.add_note("q", "thumbs")
    store.sessions.end("q", "success")
    run_batch(store, chain_factory=lambda: JudgeChain([judge]))
    assert store.longterm().collection.count() == 1
    r = run_batch(store, chain_factory=lambda: JudgeChain([judge]), now=time.time() + 15 * 86400)
    assert r.expired == 1 and store.longterm().collection.count() == 0


@pytest.mark.spawns
def test_ctrl_c_leaves_consistent_store_and_resumable_queue(tmp_path):
    """Ctrl-C while sessions are being judged. Load-independent: the judge of every session after
    the first two waits for a gate file that the test creates only after sending SIGINT (a sleep
    before the signal let a slow test process send it after the batch had finished)."""
    st = tmp_path / ".memofs"
    gate = tmp_path / "gate"
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        # a shell that starts the test suite in the background leaves SIGINT ignored, and Python
        # installs no Ctrl-C handler then: give this process the handler a terminal would
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from consolidate import Store
        from consolidate.pipeline.batch import run_batch
        from consolidate.judges.chain import JudgeChain
        from consolidate.judges.scripted import ScriptedJudge
        store = Store({str(st)!r}, embedding="hash")
        for i in range(12):
            store.sessions.add_note(f"s{{i:02d}}", f"Service {{i}} listens on port {{9000 + i}}", flag=True)
            store.sessions.add_note(f"s{{i:02d}}", "a maybe")
            store.sessions.end(f"s{{i:02d}}", "success")

        class Gated(ScriptedJudge):
            calls = 0
            def judge(self, *a, **k):
                Gated.calls += 1
                deadline = time.monotonic() + 120  # hang guard only
                while Gated.calls > 2 and not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:
                    time.sleep(0.02)
                return super().judge(*a, **k)

        print("ready", flush=True)
        r = run_batch(store, concurrency=2, chain_factory=lambda: JudgeChain([Gated(default={{"verdict": "drop"}})]),
                      out=sys.stderr)
        print("interrupted" if r.interrupted else "finished", r.left_in_queue, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    seen = []
    while len([x for x in seen if x.startswith("[")]) < 2:  # two sessions finished; the next ones wait
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # not a bound: the gate only has to open after the signal was sent
    gate.write_text("open")
    out, err = proc.communicate(timeout=120)
    assert out.split()[0] == "interrupted", "".join(seen) + err
    left = int(out.split()[1])
    assert 0 < left < 12
    store = Store(st, embedding="hash")
    done = 12 - left
    assert store.longterm().collection.count() == done  # every finished session fully applied
    assert not list((st / "journal").glob("*.json"))
    r = run_batch(store, chain_factory=lambda: JudgeChain([ScriptedJudge(default=DROP)]))
    assert r.left_in_queue == 0 and store.longterm().collection.count() == 12
    events = [json.loads(x) for x in (st / "events" / "memory-events.jsonl").read_text().splitlines()]
    assert sum(1 for e in events if e["event"] == "run.applied") == 12
