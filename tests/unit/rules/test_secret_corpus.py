"""The secret gate against the secret corpus (tests/support/secret_corpus/).

Goals of issue 4: recall 100 % (every note holding a secret is blocked), at most 1 % of ordinary
notes blocked, and no finding preview or ``redact()`` output that holds a secret. The corpus is
filled with fresh fake values per seed, so three seeds run here (benchmarks/secrets_bench.py
runs more). Speed is measured by the benchmark, not asserted here.
"""

from __future__ import annotations

from collections import Counter

import pytest

from consolidate.rules.secrets import redact, scan
from secret_corpus import SECRET_KINDS, load, templates

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def corpus(request):
    entries = load(request.param)
    return [(entry, scan(entry.text)) for entry in entries]


def test_corpus_size_and_formats():
    entries = load(0)
    blocked = [e for e in entries if e.expect == "block"]
    allowed = [e for e in entries if e.expect == "allow"]
    assert {e.expect for e in entries} == {"block", "allow"}
    assert len(blocked) >= 60 and len(allowed) >= 300
    assert len({e.format for e in blocked}) >= 15
    # the look-alikes the issue names are all there
    assert {"empty-assignment", "placeholder", "policy", "secret-path", "commit-sha", "uuid",
            "content-hash", "conn-no-password"} <= {e.format for e in allowed}
    # every secret generator is used by some template, and every note is distinct
    used = {k for row in templates("secrets") for k in SECRET_KINDS if "{secret:" + k + "}" in row["text"]}
    assert used == set(SECRET_KINDS)
    assert len({e.text for e in entries}) == len(entries)


def test_corpus_is_deterministic_per_seed():
    assert load(7) == load(7)
    assert load(7) != load(8)


def test_recall_is_total(corpus):
    missed = [(e.id, e.format) for e, findings in corpus if e.expect == "block" and not findings]
    assert missed == []


def test_false_positive_rate_at_most_one_percent(corpus):
    allowed = [(e, findings) for e, findings in corpus if e.expect == "allow"]
    flagged = [(e.id, [(f.kind, f.preview) for f in findings]) for e, findings in allowed if findings]
    assert len(flagged) <= 0.01 * len(allowed), flagged


def test_no_preview_or_redaction_holds_a_secret(corpus):
    leaks = []
    for entry, findings in corpus:
        if entry.expect != "block":
            continue
        redacted = redact(entry.text)
        for secret in entry.secrets:
            if secret in redacted or any(secret in f.preview for f in findings):
                leaks.append((entry.id, entry.format))
        for finding in findings:
            n = finding.end - finding.start
            assert f"{n} chars" in finding.preview
            revealed = finding.preview.split("…<", 1)[0] if "…<" in finding.preview else ""
            assert len(revealed) <= n // 8 and (n >= 16 or not revealed)
            assert finding.preview in redacted
    assert leaks == []


def test_every_secret_is_covered_by_a_finding(corpus):
    """Not only is the note blocked: each secret value in it overlaps some finding (so the gate
    blocked it for the right reason, not for a neighbour)."""
    uncovered = []
    for entry, findings in corpus:
        for secret in entry.secrets if entry.expect == "block" else ():
            start = entry.text.find(secret)
            end = start + len(secret)
            if not any(f.start < end and start < f.end for f in findings):
                uncovered.append((entry.id, secret[:4] + "…"))
    assert uncovered == []


def test_findings_of_blocked_notes_by_kind(corpus):
    """Which rules carry the corpus: more than a handful, none of them a catch-all."""
    kinds = Counter(f.kind for e, findings in corpus if e.expect == "block" for f in findings)
    assert len(kinds) >= 15, kinds
