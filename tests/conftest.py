"""Shared fixtures: a store in a temporary folder, scripted judges, the path of ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from consolidate import Store

#: ../shared beside the repository (present on developers' machines and in CI).
SHARED = Path(os.environ.get("CONSOLIDATE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
REALNOTES = SHARED / "data" / "realnotes"


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
