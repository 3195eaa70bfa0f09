"""The public API is curated and pinned (issue 27 item 5): ``consolidate.__all__``,
``consolidate.judges.__all__`` and the shipped test doubles of ``consolidate.testing``. A name added or removed
here is a deliberate change of the API (say it in the changelog of the README)."""

from __future__ import annotations

import pytest
import os
import subprocess
import sys

import consolidate
from consolidate import judges, run_queue
from consolidate.testing import DROP, ScriptedJudge, crash_at, keep, temporary_store

CONSOLIDATE_API = ["Store", "Plan", "Note", "Candidate", "RunContext", "recall", "run_session", "run_queue",
                   "__version__", "ConsolidateError", "BadInput", "EmptyNote", "InvalidImportLine", "SecretBlocked",
                   "PathRefused", "ConfigError", "StaleForm", "UnknownSession", "StoreError", "StorePathError", "StoreCorrupt",
                   "EmbeddingMismatch", "EmbeddingUnavailable", "StoreLocked", "StoreReadOnly", "TeamError",
                   "TeamTimeout", "JudgeError", "JudgeUnavailable", "JudgeTimeout", "JudgeOutputInvalid",
                   "CassetteMiss"]
JUDGES_API = ["BaseJudge", "Judge", "JudgeContext", "JudgeNote", "ScriptedJudge", "Verdict", "as_judge",
              "validate_verdicts"]
TESTING_API = ["DROP", "ScriptedJudge", "crash_at", "keep", "temporary_store"]


def test_the_public_names_are_pinned():
    assert consolidate.__all__ == CONSOLIDATE_API
    assert judges.__all__ == JUDGES_API
    assert consolidate.testing.__all__ == TESTING_API


def test_every_public_name_resolves_and_says_what_it_is():
    for module, names in ((consolidate, CONSOLIDATE_API), (judges, JUDGES_API), (consolidate.testing, TESTING_API)):
        for name in names:
            value = getattr(module, name)
            if name not in ("__version__", "DROP"):
                assert (value.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"
    assert isinstance(consolidate.__version__, str) and consolidate.ConsolidateError.__module__ == "consolidate.core.errors"
    assert issubclass(consolidate.StoreReadOnly, consolidate.StoreError)


def test_an_unknown_name_is_an_attribute_error():
    try:
        consolidate.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("consolidate.NoSuchThing resolved")


def test_the_shipped_doubles_run_a_session_offline():
    with temporary_store() as store:
        folder = store.path
        store.sessions.add_note("s1", "Use pnpm, not npm: npm breaks the lockfile", flag=True, kind="decision")
        store.sessions.add_note("s1", "ran the tests twice", flag=False)
        store.sessions.end("s1", "success")
        judge = ScriptedJudge({"pnpm": keep("Use pnpm, not npm: npm breaks the lockfile", "decision",
                                            rationale="npm breaks the lockfile")}, default=DROP)
        plans = run_queue(store, judges=[judge])
        assert [p.session_id for p in plans] == ["s1"] and judge.calls >= 1
        docs = [hit["document"] for hit in consolidate.recall(store, "Use pnpm, not npm: npm breaks the lockfile").memories]
        assert docs == ["Use pnpm, not npm: npm breaks the lockfile"]
        assert isinstance(plans[0], consolidate.Plan)
    assert not folder.exists()  # the temporary folder is removed


@pytest.mark.spawns
def test_crash_at_arms_the_point_for_started_processes_and_restores_the_environment(monkeypatch):
    monkeypatch.delenv("CONSOLIDATE_CRASH_AT", raising=False)
    code = "from consolidate.core.faults import crash_point; crash_point('apply:journal'); print('alive')"
    with crash_at("apply:journal") as env:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == -9 and "alive" not in out.stdout
    assert "CONSOLIDATE_CRASH_AT" not in os.environ
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "alive"
