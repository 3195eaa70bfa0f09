"""``consolidate ui`` without a browser: the token, bad input, stale forms, a read-only and a damaged
store, the overview's replay of the event log, and the escaping of store text (Hypothesis). The
pages in a real browser: tests/integration/test_ui_browser.py."""

from __future__ import annotations

import html.parser
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from consolidate import Store
from consolidate.pipeline.run import run_queue
from consolidate.store.snapshots import list_runs
from consolidate.testing import ScriptedJudge, keep
from consolidate.ui import html as ui_html
from consolidate.ui import reads
from consolidate.ui.server import App
from consolidate.ui.timeline import timeline

TOKEN = "t" * 32
NOTES = {"pnpm": keep("Use pnpm, not npm: npm rewrites the lockfile", "constraint"),
         "Postgres": keep("Integration tests need the Postgres container from make db-up", "fact",
                          evidence="inferred", confidence="low"),
         "staging": keep("Deploys go through the staging cluster before production", "fact")}


def _make_store(path) -> None:
    store = Store(path, embedding="hash", project="uiproj")
    for i, text in enumerate(["Use pnpm, not npm: npm rewrites the lockfile every time",
                              "Integration tests need the Postgres container from make db-up first",
                              "Deploys go through the staging cluster before production, always"]):
        store.sessions.add_note(f"s{i}", text)
        store.sessions.end(f"s{i}", "success")
    run_queue(store, judges=[ScriptedJudge(NOTES)], time_box=None)
    store.close()


@pytest.fixture
def client(tmp_path):
    path = tmp_path / "p" / ".memofs"
    _make_store(path)
    app = App(lambda: Store(path, create=False), TOKEN, cookie="c")
    with TestClient(app.starlette(), base_url="http://127.0.0.1") as c:
        c.path = path  # type: ignore[attr-defined]
        yield c


def _ids(path, status):
    s = Store(path, create=False)
    try:
        return sorted(r["id"] for r in s.longterm().with_status(status))
    finally:
        s.close()


def test_without_the_token_every_request_is_refused(client):
    for url in ("/", "/review", "/runs", "/overview", "/static/ui.css", "/memory/x", f"/?token={TOKEN}x"):
        assert client.get(url).status_code == 403, url
    page = client.get(f"/?token={TOKEN}")
    assert page.status_code == 200 and "HttpOnly; SameSite=Strict" in page.headers["set-cookie"]
    assert client.get("/review").status_code == 200  # the cookie now
    [mid] = _ids(client.path, "quarantined")
    refused = client.post(f"/memory/{mid}/approve", data={"version": "x"})  # the cookie alone: not for a form
    assert refused.status_code == 403 and _ids(client.path, "quarantined") == [mid]


def _version(path, mid):
    s = Store(path, create=False)
    try:
        return reads.stored_version(s, mid)
    finally:
        s.close()


def test_bad_input_gets_a_message_and_changes_nothing(client):
    client.get(f"/?token={TOKEN}")
    [mid] = _ids(client.path, "quarantined")
    runs = len(list_runs(Store(client.path, create=False)))
    for url, code, words in (("/memory/mem-0000000000000000", 404, "unknown memory"),
                             ("/?type=opinion", 400, "unknown type"), ("/?since=not+a+date", 400, "date"),
                             ("/?page=0", 400, "bad page")):
        got = client.get(url)
        assert got.status_code == code and words in got.text and 'id="error"' in got.text, url
    stale = client.post(f"/memory/{mid}/approve", data={"token": TOKEN, "version": "0" * 16})
    assert stale.status_code == 409 and "changed since the page was shown" in stale.text
    gone = client.post("/memory/mem-0000000000000000/forget", data={"token": TOKEN, "version": "0" * 16})
    assert gone.status_code == 404 and "unknown memory" in gone.text
    bad_edit = client.post(f"/memory/{mid}/edit", data={"token": TOKEN, "version": _version(client.path, mid),
                                                        "text": "   "})
    assert bad_edit.status_code == 400 and "no text" in bad_edit.text
    assert client.post("/runs/run-nope/undo", data={"token": TOKEN, "version": "x"}).status_code == 404
    assert _ids(client.path, "quarantined") == [mid] and len(list_runs(Store(client.path, create=False))) == runs


def test_forget_from_the_memory_page_runs_as_consolidate_forget(client):
    client.get(f"/?token={TOKEN}")
    mid = next(i for i in _ids(client.path, "active"))
    done = client.post(f"/memory/{mid}/forget", data={"token": TOKEN, "version": _version(client.path, mid),
                                                      "reason": "moved"}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith(f"/memory/{mid}?done=forgot")
    page = client.get(done.headers["location"])
    assert "forgot " + mid in page.text and 'id="status">forgotten<' in page.text and "memory.forgotten" in page.text
    assert mid not in _ids(client.path, "active")
    runs = client.get("/runs").text  # the forget is a run of its own, with what it changed and an undo
    assert "<summary>1 changed</summary>" in runs and "memory.forgotten → forgotten" in runs
    points = timeline(Store(client.path, create=False))["points"]
    assert points[-1]["counts"]["archived"] == 1 and points[-2]["counts"]["archived"] == 0


def test_edit_from_the_review_page_supersedes_and_links_both_ways(client):
    client.get(f"/?token={TOKEN}")
    [old] = _ids(client.path, "quarantined")
    done = client.post(f"/memory/{old}/edit", data={"token": TOKEN, "version": _version(client.path, old),
                                                    "text": "Integration tests need Postgres: run make db-up first"},
                       follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith("/review?done=edited")
    new = done.headers["location"].split("now+", 1)[1].split("%2C", 1)[0]
    assert new in _ids(client.path, "active") and not _ids(client.path, "quarantined")
    page = client.get(f"/memory/{new}").text
    assert "<dt>supersedes</dt>" in page and f"/memory/{old}" in page and "user-stated" in page
    page = client.get(f"/memory/{old}").text
    assert 'id="status">superseded<' in page and "<dt>superseded by</dt>" in page and f"/memory/{new}" in page
    assert 'action="/memory/' not in page  # an archived memory has no forget form


def test_the_overview_replays_an_undo():
    ev = [{"event": "memory.written", "run_id": "r1", "memory_id": "a", "status": "active", "tier": "durable"},
          {"event": "memory.written", "run_id": "r1", "memory_id": "t", "status": "active", "tier": "transient"},
          {"event": "run.applied", "run_id": "r1", "summary": {"notes": 3, "notes_keep": 2, "notes_drop": 1}},
          {"event": "memory.approved", "run_id": "r2", "memory_id": "a", "changes": {"status": "quarantined"}},
          {"event": "memory.written", "run_id": "r2", "memory_id": "b", "status": "disputed", "tier": "durable"},
          {"event": "run.applied", "run_id": "r2", "summary": {}},
          {"event": "memory.undone", "run_id": "r2", "memory_id": "a", "action": "restored"},
          {"event": "memory.undone", "run_id": "r2", "memory_id": "b", "action": "removed"},
          {"event": "run.undone", "run_id": "r2"}]

    class FakeStore:
        exists = True

    import consolidate.ui.timeline as tl

    real = tl.events.read
    tl.events.read = lambda store: iter(ev)  # type: ignore[assignment]
    try:
        got = timeline(FakeStore())
    finally:
        tl.events.read = real
    assert [p["counts"] for p in got["points"]] == [
        {"active": 1, "quarantined": 0, "disputed": 0, "archived": 0},
        {"active": 0, "quarantined": 1, "disputed": 1, "archived": 0},
        {"active": 1, "quarantined": 0, "disputed": 0, "archived": 0}]
    assert got["runs"] == [{"run_id": "r1", "at": "", "notes": 3, "kept": 2, "dropped": 1}]


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text += data


TRICKY = ["<script>alert(1)</script>", "</td>", "\"'", "&amp;", "<!--", "Привет", "日本語", "مرحبا", "e\u0301",
          "\u00e9", "🙂", "</script>", "javascript:"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(TRICKY), st.text(st.characters(blacklist_categories=("Cs", "Cc")),
                                                           max_size=15)), min_size=1, max_size=6).map("".join))
def test_store_text_is_shown_as_text_in_every_script(text):
    """A memory's text, whatever it holds, becomes the link's text and nothing else (no element of
    its own), and survives in the page's JSON data unchanged."""
    p = _Text()
    p.feed(ui_html.memory_link("mem-1", text))
    p.close()
    assert p.tags == ["a"] and p.text == (text or "mem-1")
    blob = ui_html.data_script("d", {"t": text})
    inner = blob.split(">", 1)[1].rsplit("</script>", 1)[0]
    assert "<" not in inner and json.loads(inner) == {"t": text}


def _serve(args, timeout=60.0):
    """Start `consolidate ui` with ``args``; ``(process, url, stderr_lines)`` once it printed its URL."""
    proc = subprocess.Popen([*args, "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("consolidate ui: http"):
        proc.kill()
        raise AssertionError((line, proc.communicate(timeout=timeout)))
    return proc, line.split(": ", 1)[1].strip()


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


@pytest.mark.spawns
def test_a_read_only_store_shows_its_pages_and_refuses_writes(tmp_path):
    from test_one_line_refusals import _read_only_prefix, _snapshot

    path = tmp_path / "p" / ".memofs"
    _make_store(path)
    prefix = _read_only_prefix(path)
    if prefix is None:
        pytest.skip("no way to make a read-only folder here (root without mount rights)")
    before = _snapshot(path)
    [mid] = _ids(path, "quarantined")
    version = _version(path, mid)
    proc, url = _serve([*prefix, sys.executable, "-m", "consolidate", "ui", "--store", str(path)])
    try:
        code, page = _get(url.replace("/?", "/review?"))
        assert code == 200 and "This store is read-only" in page and "disabled" in page
        base, token = url.split("/?token=")
        form = f"token={token}&version={version}".encode()
        code, page = _get(urllib.request.Request(f"{base}/memory/{mid}/approve?token={token}", data=form))
        assert code == 503 and "is read-only" in page and "id=\"error\"" in page
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert _snapshot(path) == before


@pytest.mark.spawns
def test_a_damaged_store_gets_a_message_not_a_traceback(tmp_path):
    path = tmp_path / "p" / ".memofs"
    _make_store(path)
    (path / "chroma" / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    proc, url = _serve([sys.executable, "-m", "consolidate", "ui", "--store", str(path)])
    try:
        code, page = _get(url)
        assert code in (500, 503) and 'id="error"' in page and "Traceback" not in page
        code, _ = _get(url.replace("/?", "/overview?"))
        assert code == 200  # the event log still reads
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.spawns
def test_another_host_is_warned_about(tmp_path):
    proc, url = _serve([sys.executable, "-m", "consolidate", "ui", "--store", str(tmp_path / "none"),
                        "--host", "0.0.0.0"])
    try:
        time.sleep(0.2)
        assert url.startswith("http://0.0.0.0:")
    finally:
        proc.terminate()
        err = proc.communicate(timeout=30)[1]
    assert "warning: listening on 0.0.0.0, beyond this machine" in err and "no store at" in err


def test_a_browser_is_opened_only_where_there_is_a_desktop():
    """Without a display, webbrowser would start a text browser in the server's terminal."""
    from consolidate.ui.server import has_desktop

    assert has_desktop("darwin", {}) and has_desktop("win32", {})
    assert not has_desktop("linux", {}) and not has_desktop("linux", {"DISPLAY": ""})
    assert has_desktop("linux", {"DISPLAY": ":0"}) and has_desktop("freebsd14", {"WAYLAND_DISPLAY": "wayland-0"})


def test_a_judges_claim_shows_as_credited_and_a_forgotten_memory_nowhere(tmp_path):
    path = tmp_path / "p" / ".memofs"
    store = Store(path, embedding="hash", project="uiproj")
    for sid, text in (("c1", "agent: the release goes out with make ship"), ("c2", "Redis holds the sessions zq-forgot")):
        store.sessions.add_note(sid, text)
        store.sessions.end(sid, "success")
    run_queue(store, judges=[ScriptedJudge({"make ship": keep("The release goes out with make ship", "fact",
                                                              evidence="user-stated"),
                                            "zq-forgot": keep("Redis holds the sessions zq-forgot", "fact")})],
              time_box=None)
    ids = {r["document"]: r["id"] for r in store.longterm().all()}
    store.close()
    claim, gone = ids["The release goes out with make ship"], ids["Redis holds the sessions zq-forgot"]
    app = App(lambda: Store(path, create=False), TOKEN, cookie="c")
    with TestClient(app.starlette(), base_url="http://127.0.0.1") as c:
        c.get(f"/?token={TOKEN}")
        row = c.get("/").text.split(f'id="m-{claim}"', 1)[1].split("</tr>", 1)[0]
        assert "<td>observed" in row and "claimed: user-stated" in row
        page = c.get(f"/memory/{claim}").text
        assert '<span id="evidence">observed' in page
        c.post(f"/memory/{gone}/forget", data={"token": TOKEN, "version": _version(path, gone)})
        for url in ("/", "/?status=all", "/?status=forgotten", "/?q=Redis+sessions", f"/memory/{gone}", "/runs",
                    "/review", "/overview"):
            assert "zq-forgot" not in c.get(url).text, url
