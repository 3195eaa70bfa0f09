"""Time boxes: a judge that hangs, and a server that accepts the connection and never answers. The run
ends within its deadline plus a small margin, flagged notes promoted, maybes unjudged, the cause in
the events. (A CLI judge that ignores SIGTERM: tests/unit/judges/test_cli_judge_faults.py.)"""

import socket
import threading
import time

import pytest

from consolidate.pipeline.run import run_queue
from consolidate.judges.api import APIJudge
from consolidate.judges.chain import JudgeChain

pytestmark = pytest.mark.robustness
#: seconds the hanging judge and the silent server would hold a run that ignored its time box
HANG = 3600.0


def _session(store):
    store.sessions.add_note("s", "Builds need Node 20; Node 22 breaks the native addon", flag=True, kind="constraint")
    store.sessions.add_note("s", "the cache key includes the lockfile hash")
    store.sessions.end("s", "success")


def _check(store, plan, elapsed, box, cause):
    # ended by the time box, not by the hang: a bound relative to the hang, so a loaded machine cannot
    # fail it (the guide: no test asserts an absolute time); how close to the box is benchmarked
    assert elapsed < HANG / 10, elapsed
    assert sorted(plan.note_status.values()) == ["flagged", "unjudged"]
    assert [c.source for c in plan.writes()] == ["flagged"]
    [unjudged] = [e for e in plan.events if e["event"] == "note.unjudged"]
    assert any(cause in r for r in unjudged["judge_reasons"]), unjudged


class Hang:
    name, model, prompt_version = "hang", "x", "v"

    def judge(self, batch, context, timeout):
        time.sleep(HANG)  # ignores its time box entirely


def test_judge_that_hangs(store):
    _session(store)
    t = time.monotonic()
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([Hang()]), time_box=2.0)
    _check(store, plan, time.monotonic() - t, 2.0, "judge-timeout")


@pytest.fixture
def silent_server():
    """Accepts connections and never answers (nor closes) them."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held, stop = [], threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                held.append(conn)
            except OSError:
                continue

    th = threading.Thread(target=accept, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    stop.set()
    th.join(2)
    for c in held:
        c.close()
    srv.close()


def test_server_that_never_answers(store, silent_server):
    _session(store)
    judge = APIJudge(model="openai/silent", api_base=silent_server, api_key="sk-local", max_retries=0)
    t = time.monotonic()
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([judge]), time_box=3.0)
    _check(store, plan, time.monotonic() - t, 3.0, "judge-timeout")
