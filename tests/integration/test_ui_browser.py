"""``consolidate ui`` in a real browser: the system's Chromium (Debian's chromium and chromium-driver,
which .ci/run installs) driven by Selenium, against the installed command serving a store of a few
hundred memories made from real agent notes (tests/support/ui_store.py reads ../shared at run time).

One server and one browser for the module. The tests open each page and save a screenshot of it
(in $CONSOLIDATE_SCREENSHOTS, else a temporary folder the run prints), search, approve and decline
a quarantined memory, undo a run, post a stale form, and check the store afterwards from a separate
process (the store as another reader sees it). A request without the token is refused (403)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REALNOTES

pytestmark = pytest.mark.integration

CHROMIUM, DRIVER = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: Chromium's flags for a closed network: no first run, no sync, no calls home.
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


def _query(path: Path, code: str):
    """Run ``code`` (it sets ``out``) in a fresh process over the store at ``path`` (``store``) and
    return ``out``: the store as another process reads it after the server wrote."""
    prog = ("import json, sys\nfrom consolidate import Store\nstore = Store(sys.argv[1], create=False)\n"
            f"{code}\nprint(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", prog, str(path)], capture_output=True, text=True, timeout=300,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _statuses(path: Path) -> dict[str, str]:
    return _query(path, "out = {r['id']: r['metadata']['status'] for r in store.longterm().all()}")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``(base_url, token, store_path, process)``: `consolidate ui` serving the real-notes store."""
    if not REALNOTES.is_dir():
        pytest.skip(f"real notes not found at {REALNOTES} (../shared is absent)")
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.fail("Chromium and chromedriver are needed (apt-get install chromium chromium-driver: .ci/run does)")
    import ui_store

    folder = tmp_path_factory.mktemp("ui")
    path = folder / "project" / ".memofs"
    path.parent.mkdir()
    ui_store.build(path).close()
    proc = subprocess.Popen([sys.executable, "-m", "consolidate", "ui", "--store", str(path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    assert line.startswith("consolidate ui: http://127.0.0.1:"), (line, proc.stderr.read() if proc.stderr else "")
    url = line.split(": ", 1)[1].strip()
    base, token = url.split("/?token=")
    yield base, token, path, proc
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(served):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="consolidate-ui-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(120)
    base, token, _, _ = served
    driver.get(f"{base}/?token={token}")  # the printed URL: sets the cookie the other pages use
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def shots():
    folder = Path(os.environ.get("CONSOLIDATE_SCREENSHOTS") or tempfile.mkdtemp(prefix="consolidate-ui-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of consolidate ui: {folder}")
    return folder


def _open(browser, served, path: str):
    browser.get(served[0] + path)
    return browser


def _text(browser, css: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, css).text


def _all(browser, css: str):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, css)


def test_a_request_without_the_token_is_refused(served):
    base, token, _, _ = served
    for url in (f"{base}/", f"{base}/review", f"{base}/static/ui.js", f"{base}/?token=not-{token}"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=60)
        assert refused.value.code == 403, url
    post = urllib.request.Request(f"{base}/runs/x/undo?token={token}", data=b"version=x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:  # the token in the URL, not in the form: refused
        urllib.request.urlopen(post, timeout=60)
    assert refused.value.code == 403
    with urllib.request.urlopen(f"{base}/?token={token}", timeout=60) as ok:
        assert ok.status == 200 and "HttpOnly" in ok.headers["Set-Cookie"]


def test_every_page_opens_on_the_real_notes_store(browser, served, shots):
    path = served[2]
    statuses = _statuses(path)
    assert len(statuses) >= 200 and "quarantined" in statuses.values()
    _open(browser, served, "/")
    assert _text(browser, "#total").startswith(f"{len(statuses)} memories")
    assert len(_all(browser, "table.memories tbody tr")) == min(100, len(statuses))
    browser.save_screenshot(str(shots / "memories.png"))

    one = _all(browser, "table.memories tbody tr td:first-child a")[0]
    mid = one.get_attribute("href").rsplit("/", 1)[1]
    _click_and_load(browser, one)
    assert _text(browser, "h1") == f"Memory {mid}" and "memory.written" in _text(browser, "table.history")
    assert _text(browser, "#status") == statuses[mid]
    browser.save_screenshot(str(shots / "memory.png"))

    _open(browser, served, "/review")
    quarantined = sum(1 for s in statuses.values() if s == "quarantined")
    assert _text(browser, "#total").startswith(f"{quarantined} waiting for review")
    browser.save_screenshot(str(shots / "review.png"))

    _open(browser, served, "/runs")
    runs = _query(path, "from consolidate.store.snapshots import list_runs\nout = [r['run_id'] for r in list_runs(store)]")
    assert [row.get_attribute("id") for row in _all(browser, "table.runs tbody tr")] == runs
    browser.save_screenshot(str(shots / "runs.png"))

    _open(browser, served, "/overview")
    drawn = browser.find_element("id", "chart-status").get_attribute("data-drawn")
    assert int(drawn) >= len(runs)  # a point after each run, drawn by the page's script
    assert int(browser.find_element("id", "chart-runs").get_attribute("data-drawn")) == len(runs)
    assert _text(browser, "#now-quarantined") == str(quarantined)
    browser.save_screenshot(str(shots / "overview.png"))


def test_search_uses_recall_and_filters_narrow_it(browser, served, shots):
    path = served[2]
    rows = _query(path, "out = [[r['id'], r['document'], r['metadata']['type']] for r in store.longterm().all()]")
    words = {}
    for mid, doc, _ in rows:  # a word of six letters or more that one memory alone holds
        for w in {w.strip(".,:;()'\"").lower() for w in doc.split()}:
            if len(w) >= 6 and w.isalpha():
                words.setdefault(w, set()).add(mid)
    word, [mid] = next((w, ids) for w, ids in sorted(words.items()) if len(ids) == 1)
    _open(browser, served, "/")
    box = browser.find_element("id", "f-q")
    box.send_keys(word)
    _click_and_load(browser, "#f-go")
    found = [a.get_attribute("href").rsplit("/", 1)[1] for a in _all(browser, "table.memories tbody td:first-child > a")]
    assert mid in found and f"found for {word!r}" in _text(browser, "#total")
    browser.save_screenshot(str(shots / "search.png"))
    type_ = next(t for i, _, t in rows if i == mid)
    other = next(t for _, _, t in rows if t != type_)
    _open(browser, served, f"/?q={word}&type={other}")
    assert mid not in [a.get_attribute("href") .rsplit("/", 1)[1]
                       for a in _all(browser, "table.memories tbody td:first-child > a")]


def _click_and_load(browser, target, confirm: bool = False) -> None:
    """Click ``target`` (an element, or a CSS selector) that leads to another page: a form's button or
    a link (``confirm``: then accept the page's confirm dialog), and wait until the page it was on is
    gone (the answer loads in its place): without the wait, what is read next can be the page before
    the click."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = browser.find_element("tag name", "html")
    (browser.find_element("css selector", target) if isinstance(target, str) else target).click()
    if confirm:
        browser.switch_to.alert.accept()
    WebDriverWait(browser, 180, poll_frequency=0.2).until(expected_conditions.staleness_of(page))


def _after_post(browser, css: str = "#message, #error") -> str:
    """The done or error line of the page a form's post led to (waits for that page to load)."""
    from selenium.webdriver.support.ui import WebDriverWait

    found = WebDriverWait(browser, 180, poll_frequency=0.2).until(
        lambda d: d.find_elements("css selector", css))
    return found[0].get_attribute("id") + ": " + found[0].text


def _quarantined_rows(browser):
    return [r.get_attribute("id")[2:] for r in _all(browser, "table.review tbody tr")
            if "quarantined" in r.text]


def test_approve_and_decline_a_quarantined_memory(browser, served, shots):
    path = served[2]
    _open(browser, served, "/review")
    first, second = _quarantined_rows(browser)[:2]
    _click_and_load(browser, f'tr[id="r-{first}"] form.approve button')
    assert _after_post(browser).startswith(f"message: approved {first}: active, user-stated")
    browser.find_element("css selector", f'tr[id="r-{second}"] form.decline input[name=reason]').send_keys("wrong")
    _click_and_load(browser, f'tr[id="r-{second}"] form.decline button')
    assert _after_post(browser).startswith(f"message: declined {second}: archived with a tombstone")
    browser.save_screenshot(str(shots / "review-after.png"))
    after = _query(path, f"""from consolidate.store import archive
from consolidate.store.forgotten import tombstones
lt = store.longterm().get([{first!r}, {second!r}])
out = {{"first": lt[{first!r}]["metadata"], "second": {second!r} in lt,
       "archived": (archive.load(store, {second!r}) or {{}}).get("metadata", {{}}).get("status"),
       "tombstoned": {second!r} in {{t["id"] for t in tombstones(store)}}}}""")
    assert after["first"]["status"] == "active" and after["first"]["evidence"] == "user-stated"
    assert after["second"] is False and after["archived"] == "declined" and after["tombstoned"]
    ids = [r.get_attribute("id")[2:] for r in _all(browser, "table.review tbody tr")]
    assert first not in ids and second not in ids


def test_a_stale_form_changes_nothing(browser, served):
    path = served[2]
    _open(browser, served, "/review")
    mid = _quarantined_rows(browser)[0]
    env = {**os.environ}
    subprocess.run([sys.executable, "-m", "consolidate", "review", "--store", str(path), "--approve", mid],
                   check=True, capture_output=True, env=env, timeout=300)
    runs_before = _query(path, "from consolidate.store.snapshots import list_runs\nout = len(list_runs(store))")
    _click_and_load(browser, f'tr[id="r-{mid}"] form.decline button')
    assert "changed since the page was shown" in _after_post(browser, "#error")
    assert _statuses(path)[mid] == "active"  # the other process's approval stands; the decline wrote nothing
    assert _query(path, "from consolidate.store.snapshots import list_runs\nout = len(list_runs(store))") == runs_before
    _open(browser, served, "/memory/mem-0000000000000000")
    assert "unknown memory" in _text(browser, "#error")


def test_undo_a_run(browser, served, shots):
    path = served[2]
    runs = _query(path, "from consolidate.store.snapshots import list_runs, load\n"
                        "out = [[r['run_id'], r['session_id'], load(store, r['run_id'])['added']] for r in list_runs(store)]")
    rid, _, added_ids = next(r for r in runs if r[1] == "sp-jetski")
    added = len(added_ids)
    assert added > 0
    before = set(_statuses(path))
    _open(browser, served, "/runs")
    _click_and_load(browser, f'tr[id="{rid}"] form.undo button', confirm=True)  # the page asks first
    assert _after_post(browser).startswith(f"message: undid {rid}: removed {added} entries")
    assert "undone" in _text(browser, f'tr[id="{rid}"]')
    browser.save_screenshot(str(shots / "runs-after-undo.png"))
    after = set(_statuses(path))
    assert before - after == set(added_ids) & before and not after - before
    undone = _query(path, f"from consolidate.store.snapshots import load\nout = bool(load(store, {rid!r}).get('undone'))")
    assert undone
