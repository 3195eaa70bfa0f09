"""Shared fixtures: a store in a temporary folder, scripted judges, the path of ../shared."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from consolidate import Store

#: ../shared beside the repository (present on developers' machines and in CI).
SHARED = Path(os.environ.get("CONSOLIDATE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
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
    """A stand-in ``claude`` first on PATH (tests/fake_cli/envelope.py: checks the preset's flags and
    prints Claude Code's print-mode envelope); the shim's path."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "claude"
    envelope = Path(__file__).resolve().parent / "fake_cli" / "envelope.py"
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


def keep(statement, type_="fact", evidence="observed-success", confidence="high", **fields):
    """A scripted keep verdict."""
    return {"verdict": "keep", "statement": statement, "type": type_, "evidence": evidence,
            "confidence": confidence, "reason": "scripted keep", "fields": fields}


DROP = {"verdict": "drop", "reason": "scripted drop"}
