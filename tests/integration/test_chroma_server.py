"""The same pipeline against a Chroma server (``chromadb.HttpClient``), started on 127.0.0.1."""

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge

from preloaded import run as run_preloaded
from servers import wait_until_answers

pytestmark = [pytest.mark.chroma_server, pytest.mark.integration]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = _free_port()
    log = open(tmp_path / "chroma.log", "wb")
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(url + "/api/v2/heartbeat", proc, 30, "chroma run", tmp_path / "chroma.log")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_pipeline_against_chroma_server(tmp_path, chroma_server):
    store = Store(tmp_path / ".memofs", chroma_url=chroma_server, embedding="hash", project="team")
    store.sessions.add_note("s1", "Releases are cut from the release/* branches only", flag=True, kind="constraint")
    store.sessions.end("s1", "success")
    [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge()]))
    assert len(plan.writes()) == 1
    assert not (store.path / "chroma").exists()  # nothing embedded: the server holds the index
    other = Store(tmp_path / "other", chroma_url=chroma_server, embedding="hash", project="team")
    hits = other.longterm().search("which branches are releases cut from")
    assert hits and hits[0]["document"].startswith("Releases are cut")


class FaultyProxy:
    """A loopback HTTP proxy in front of the Chroma server that answers ``status`` to every upsert
    while ``failing`` is set (a server under load answering 429, or failing with 500)."""

    def __init__(self, upstream: str, status: int):
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlparse

        up = urlparse(upstream)
        proxy = self
        self.status = status
        self.failing = False
        self.refused = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.failing and self.command == "POST" and self.path.rstrip("/").endswith("/upsert"):
                    proxy.refused += 1
                    data = b'{"error":"RateLimitError","message":"rate limited"}' if proxy.status == 429 else \
                        b'{"error":"InternalError","message":"upsert failed"}'
                    self.send_response(proxy.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_index_write_failure_rolls_back_at_once(tmp_path, chroma_server):
    """Input 3: the index write fails in the middle of apply (the server answers 429, then 500, to
    the upsert). Before: a traceback, exit 1, and the graph held the run's nodes while Chroma held
    none until a later run replayed the journal. Now: one line naming the cause, the store-problem
    exit code, the graph and the index agree at once, doctor is healthy, the session waits in the
    queue, and the next run (the server answering again) consolidates it."""
    import json
    import os

    from consolidate.store import graph
    from many_processes import note_texts

    proxy = FaultyProxy(chroma_server, 429)
    try:
        store_path = tmp_path / ".memofs"
        store = Store(store_path, chroma_url=proxy.url, project="team")  # MiniLM
        for text in note_texts("seed", 150):
            store.sessions.add_note("seed", text, flag=True)
        store.sessions.end("seed", "success")
        run_queue(store, judges=["noop"])
        seeded = store.longterm().count()
        assert seeded >= 145
        for text in note_texts("late", 40):
            store.sessions.add_note("late", text, flag=True)
        store.sessions.end("late", "success")
        env = {**os.environ, "CONSOLIDATE_STORE": str(store_path), "CONSOLIDATE_CHROMA_URL": proxy.url,
               "CONSOLIDATE_PROJECT": "team", "CONSOLIDATE_JUDGES": "noop"}
        env.pop("CONSOLIDATE_EMBEDDING", None)
        memories = lambda: sum(1 for _, a in graph.load(store_path / "graph").nodes(data=True) if a["kind"] == "memory")
        for status, cause in ((429, "rate limited"), (500, "upsert failed")):
            proxy.status, proxy.failing, refused = status, True, proxy.refused
            out = run_preloaded(["run"], env=env, timeout=600)
            assert proxy.refused > refused
            assert out.returncode == 4, out.stderr
            assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
            assert out.stderr.startswith("error: ") and "rolled back" in out.stderr and cause in out.stderr
            assert memories() == seeded == Store(store_path, chroma_url=proxy.url).longterm().count()
            assert not list((store_path / "journal").glob("*.json"))
            assert Store(store_path).sessions.session_end("late")["status"] == "queued"
            doctor = run_preloaded(["doctor"], env=env, timeout=600)
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        proxy.failing = False
        again = run_preloaded(["run"], env=env, timeout=600)
        assert again.returncode == 0, again.stderr
        after = Store(store_path, chroma_url=proxy.url).longterm().count()
        assert after > seeded and memories() == after
        events = [json.loads(x) for x in (store_path / "events" / "memory-events.jsonl").read_text().splitlines()]
        assert [e["session_id"] for e in events if e["event"] == "run.applied"] == ["seed", "late"]
    finally:
        proxy.close()
