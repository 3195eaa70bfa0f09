"""Shared fixtures: a store in a temporary folder, scripted judges, the path of ../shared."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

#: the support modules (tests/support/) are imported by bare name, by the tests and by each other
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from paths import REPO, SUPPORT, TESTS  # noqa: E402
#: and helpers of other test modules by bare name (from test_hook_lifecycle import fire)
sys.path += [str(d) for d in sorted(TESTS.glob("unit/*")) + [TESTS / f for f in ("integration", "scenarios", "docs")]
             if d.is_dir()]

#: PYTHONDONTWRITEBYTECODE=1 (set on the shared build machine) also turns off pytest's cache of the
#: rewritten test modules (collection rewrote every test file's asserts again: about 40 % of it) and
#: the .pyc files of consolidate/ and judges/, which every ``python -m consolidate`` process the suite
#: starts (about a thousand) then compiles again. This process and its xdist workers write them (the
#: children keep the setting: they only read them); see also pytest_configure.
sys.dont_write_bytecode = False

from consolidate import Store  # noqa: E402
from consolidate.testing import DROP, keep  # noqa: E402, F401 - the tests import them from here

#: ../shared beside the repository (present on developers' machines and in CI).
SHARED = Path(os.environ.get("CONSOLIDATE_SHARED", REPO.parent / "shared"))
REALNOTES = SHARED / "data" / "realnotes"


@pytest.fixture(autouse=True)
def _cli_cassettes_stay_in_tmp(tmp_path, monkeypatch):
    """A CLI judge in a test never records into, nor replays from, the repository's cassettes/ unless
    the test names a cassette itself: ``CONSOLIDATE_RECORD=1`` (set to re-record the HTTP cassettes)
    would otherwise write every fake CLI's exchanges there."""
    monkeypatch.delenv("CONSOLIDATE_CASSETTE", raising=False)
    monkeypatch.setenv("CONSOLIDATE_CASSETTE_DIR", str(tmp_path / "cli-cassettes"))


@pytest.fixture
def claude_on_path(tmp_path, monkeypatch) -> Path:
    """A stand-in ``claude`` first on PATH (tests/support/fake_cli/envelope.py: checks the preset's flags and
    prints Claude Code's print-mode envelope); the shim's path."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "claude"
    envelope = SUPPORT / "fake_cli" / "envelope.py"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(envelope))} \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return shim


@pytest.fixture
def store(tmp_path):
    """A fresh store with the fast hash embedding (tests that need semantics use ``minilm_store``)."""
    s = Store(tmp_path / ".memofs", embedding="hash", project="testproj")
    yield s
    s.close()


@pytest.fixture
def minilm_store(tmp_path):
    """A fresh store with the default offline MiniLM embedding."""
    s = Store(tmp_path / ".memofs", project="testproj")
    yield s
    s.close()




def pytest_configure(config):
    """Compile consolidate/ and judges/ once (``compileall``: only files changed since their .pyc),
    so the processes the tests start read them instead of compiling (see sys.dont_write_bytecode
    above); in the controller only, not again in each xdist worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    root = REPO
    for name in ("consolidate", "judges"):
        try:
            compileall.compile_dir(str(root / name), quiet=2)
        except OSError:  # a read-only checkout: the processes compile as before
            pass


# -- running in parallel (pytest-xdist, the README's ``-n auto --dist loadgroup``) ----------------------

#: Markers of the slow real-process tests: each also gets ``integration`` (``-m "not integration"``
#: is the quick loop; the README's command runs them all). ``spawns``: a test outside
#: tests/integration that starts a real process (the installed command, a hook, a worker, a fake CLI).
SLOW_MARKERS = ("processes", "chroma_server", "realnotes", "spawns")

#: Set on a test that is ``integration`` only through ``spawns``: the scheduler below keeps it in
#: its module's place (the placement measured for the README's command, issue 30).
_SPAWNS_ONLY = pytest.StashKey[bool]()


def _module_scoped(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in ("module", "package") for defs in info.name2fixturedefs.values() for d in defs)


def pytest_itemcollected(item):
    """``integration`` on the tests of SLOW_MARKERS (``-m "not integration"``: the quick loop)."""
    slow = [m for m in SLOW_MARKERS if item.get_closest_marker(m)]
    if slow:
        if slow == ["spawns"] and not item.get_closest_marker("integration"):
            item.stash[_SPAWNS_ONLY] = True
        item.add_marker(pytest.mark.integration)


def _scheduler_shares(total: int, workers: int) -> list[int]:
    """How many tests xdist's worksteal scheduler first sends each worker, in turn (an even split
    of the collection, in order; idle workers later steal half of a busy one's queue)."""
    shares = []
    for i in range(workers):
        share = total // (workers - i)
        shares.append(share)
        total -= share
    return shares


def pytest_collection_modifyitems(config, items):
    """Under xdist (``--dist worksteal``), the integration tests are spread over the workers' first
    shares and put at their fronts, so no worker gets them all and none starts a long one last.
    Integration tests of one module that share a module-scoped fixture (one replayed end-to-end run,
    one store) stay together, so the fixture is built on one worker, not on each; the other tests
    keep their order (a module's tests stay together, its module fixtures built once)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if not os.environ.get("PYTEST_XDIST_WORKER") or workers < 2:
        return
    units: dict[str, list] = {}
    rest = []
    for item in items:
        if not item.get_closest_marker("integration") or item.stash.get(_SPAWNS_ONLY, False):
            rest.append(item)
        elif _module_scoped(item):
            units.setdefault(item.module.__name__, []).append(item)
        else:
            units[item.nodeid] = [item]
    shares = _scheduler_shares(len(items), workers)
    fronts: list[list] = [[] for _ in range(workers)]
    for unit in sorted(units.values(), key=len, reverse=True):  # the largest unit first, to the emptiest front
        min(fronts, key=len).extend(unit)
    out = []
    for front, share in zip(fronts, shares):
        take = max(0, share - len(front))
        out += front + rest[:take]
        del rest[:take]
    items[:] = out + rest
