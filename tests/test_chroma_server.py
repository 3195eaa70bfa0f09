"""The same pipeline against a Chroma server (``chromadb.HttpClient``), started on 127.0.0.1."""

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from consolidate import Store
from consolidate.pipeline import run_queue
from judges.chain import JudgeChain
from judges.scripted import ScriptedJudge

from servers import wait_until_answers

pytestmark = pytest.mark.chroma_server


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
