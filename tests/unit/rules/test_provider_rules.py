"""gitleaks' provider rules in the secret gate (issue 14, item 5): the pinned rule file, its Go regexes
compiled as written with RE2 (issue 27 item 6; rules that do not compile are counted, never silent), keywords, entropy and allowlists as
gitleaks applies them, and a sample of providers the gate did not know blocked at note-write time and
at consolidation. Recall and false positives over the whole corpus: tests/unit/rules/test_secret_corpus.py;
speed: benchmarks/secrets_bench.py."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
import re2
from hypothesis import assume, given, settings, strategies as st

from consolidate.rules import provider_rules as pr
from consolidate.pipeline.run import run_session
from consolidate.rules.secrets import scan
from consolidate.store.sessions.write_gate import REDACTED_KEY
from consolidate.judges.chain import JudgeChain
from consolidate.judges.scripted import ScriptedJudge
from secret_corpus import SECRET_KINDS, _Gen

from conftest import keep

import random

# Providers the gate had no rule for before gitleaks' set (a sample; the corpus holds 32)
NEW_KINDS = ("age", "databricks", "doppler", "linear", "postman", "pulumi", "rubygems", "shopify",
             "sendinblue", "vault", "grafana_sa", "terraform")


def fake(kind: str, seed: int = 0) -> str:
    return SECRET_KINDS[kind](_Gen(random.Random(f"provider-{kind}-{seed}")))


# --- the pinned file --------------------------------------------------------------------------


def test_pinned_file_is_the_upstream_file_with_its_licence():
    text = pr.RULES_FILE.read_text(encoding="utf-8")
    assert text.startswith("# This file has been auto-generated.") and len(text) == 93711
    config = tomllib.loads(text)
    assert len(config["rules"]) == 209
    notice = (pr.RULES_FILE.parent / "LICENSE-gitleaks").read_text(encoding="utf-8")
    assert pr.UPSTREAM_COMMIT in notice and "MIT License" in notice and "Zachary Rice" in notice


def test_every_rule_is_used_or_left_out_with_a_reason():
    stats = pr.stats()
    assert stats["used"] + len(stats["skipped"]) == stats["total"] == 209
    assert stats["used"] >= 200
    assert stats["not_compiled"] == []  # RE2 compiles the pinned file whole
    assert set(pr.EXCLUDED) <= set(stats["skipped"])
    assert all(reason for reason in stats["skipped"].values())


# --- Go's regexes, compiled as written with RE2 ---------------------------------------------------


def test_every_pattern_of_the_pinned_file_compiles_as_written():
    """All 208 content regexes and every allowlist regex of gitleaks' file, byte for byte as upstream
    writes them (no translation), also those of the rules the gate leaves out."""
    config = tomllib.loads(pr.RULES_FILE.read_text(encoding="utf-8"))
    patterns = [r["regex"] for r in config["rules"] if "regex" in r]
    lists = [config["allowlist"]] + [a for r in config["rules"]
                                      for a in ([r["allowlist"]] if "allowlist" in r else []) + r.get("allowlists", [])]
    patterns += [p for a in lists for p in a.get("regexes", ())]
    assert len([r for r in config["rules"] if "regex" in r]) == 208
    for pattern in patterns:
        re2.compile(pattern)
    rs = pr._load()
    assert all(rule.source == next(r["regex"] for r in config["rules"] if r["id"] == rule.id) for rule in rs.rules)


def _rules_file(tmp_path, **patterns: str):
    path = tmp_path / "rules.toml"
    path.write_text("".join(f"[[rules]]\nid = \"{rid}\"\nregex = '''{rx}'''\nkeywords = [\"{rid}\"]\n\n"
                            for rid, rx in patterns.items()), encoding="utf-8")
    return pr._load(path)


@pytest.mark.parametrize("go, hits, misses", [
    (r"live_(?i)[a-z]{3}", ["live_ABC"], ["LIVE_abc"]),  # a flag group mid-pattern scopes to the rest
    (r"(?:live_(?i)[a-z]{3})x", ["live_AbCx"], ["live_abcX"]),  # ... of its group
    (r"(a(?i)b|c)", ["C", "aB"], ["Ab"]),  # Go keeps the flag across "|" within the group
    (r"x(?:[^a-z]|\z)", ["x"], ["xa"]),  # \z: the end of the text
    (r"[^]]+", ["abc"], ["]"]),  # a leading ] in a class is a literal
    (r"[[:alpha:]]{3}", ["abc"], ["a1b"]),  # POSIX classes
    (r"\bp8e-(?i)[a-z0-9]{4}\b", ["p8e-AbC1"], ["P8E-abc1", "ép8e-abc1"]),  # ASCII \b, flag scope
    (r"uni_\p{L}{3}", ["uni_äöü"], ["uni_a1b"]),  # Unicode classes (Python re has none)
])
def test_go_syntax_means_what_it_means_in_go(tmp_path, go, hits, misses):
    rs = _rules_file(tmp_path, rule=go)
    [rule] = rs.rules
    for text in hits:
        assert [(f.start, f.end) for f in pr._run(rule, text, text, rs.global_allowlist)] == [(0, len(text))], text
    for text in misses:
        assert not [f for f in pr._run(rule, text, text, rs.global_allowlist) if (f.start, f.end) == (0, len(text))], text


def test_a_rule_that_does_not_compile_is_counted_not_silent(tmp_path):
    rs = _rules_file(tmp_path, ok="okay_[a-z0-9]{20}", broken="brk_([a-z", backref="(a)\\1")
    assert [r.id for r in rs.rules] == ["ok", "broken", "backref"] and not rs.skipped  # compiled on first use
    assert [f.rule for f in pr._run(rs.rules[1], "brk_(abc", "brk_(abc", rs.global_allowlist)] == []  # no error
    assert rs.rules[1].error.startswith("does not compile in RE2")
    assert rs.rules[2].regex is None and rs.rules[2].error.startswith("does not compile in RE2")  # RE2 has no \1
    assert rs.rules[0].regex is not None and rs.rules[0].error is None


_SURROUNDINGS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40).map(lambda s: s.strip() + " ")


@settings(max_examples=150, deadline=None)
@given(before=_SURROUNDINGS, after=_SURROUNDINGS, kind=st.sampled_from(NEW_KINDS), seed=st.integers(0, 50))
def test_offsets_are_character_offsets_in_any_script(before, after, kind, seed):
    """An ASCII note goes to RE2 as bytes, any other as str: either way the finding's span is the
    secret's span in characters (emoji, CJK, combining marks and astral characters before it)."""
    value = fake(kind, seed)
    core = f"token {value} "
    alone = {(f.start, f.end) for f in pr.find(core)}
    assume((core.index(value), core.index(value) + len(value)) in alone)  # a rule finds it (not every seed's value)
    text = before + core + after
    spans = {(f.start, f.end) for f in pr.find(text)}
    assert {(a + len(before), b + len(before)) for a, b in alone} <= spans
    assert all(0 <= a < b <= len(text) for a, b in spans)


# --- how the rules run --------------------------------------------------------------------------


def test_a_rule_runs_only_when_one_of_its_keywords_occurs():
    text = f"pulumi login in the runner uses {fake('pulumi')}"
    assert [f.rule for f in pr.find(text)] == ["pulumi-api-token"]
    assert [f.rule for f in pr.find(text, present=set())] == []  # no keyword: the regex is not even run


@pytest.mark.spawns
def test_rules_compile_lazily_once_per_process():
    code = ("from consolidate.rules import provider_rules as pr, secrets;"
            " secrets.scan('the build is green again after the cache fix, 42 tests pass');"
            " n = sum(r._regex is not None for r in pr._load().rules);"
            " secrets.scan('databricks job ran with dapi' + 'ab12' * 8);"
            " m = sum(r._regex is not None for r in pr._load().rules);"
            " print(n, m, len(pr._load().rules))")
    n, m, total = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True, timeout=120).stdout.split())
    assert n < 10 and m == n + 1 and total >= 200


def test_entropy_floor_and_allowlists_apply():
    assert not list(pr.find("databricks token dapi" + "0" * 32))  # entropy 0 <= 3: dropped
    assert not list(pr.find("aws key AKIAIOSFODNN7EXAMPLE"))  # the rule's allowlist: .+EXAMPLE$
    assert not list(pr.find("vault s.abcdefghijklmnopqrstuvwx"))  # letters only: allowlisted


@pytest.mark.parametrize("text", [
    "Set VAULT_TOKEN=hvs.<your token> before running the migration script.",
    "SHOPIFY_TOKEN=shpat_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in .env.example",
    "Linear tickets for the release are in the Q3 launch project.",
    "Grafana dashboards for the API latency live under the backend folder.",
])
def test_vendor_talk_and_placeholders_pass(text):
    assert scan(text) == []


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_new_providers_are_found_with_the_secret_span(kind):
    value = fake(kind)
    text = f"note from the deploy: {value} works from CI now"
    [finding] = scan(text)
    assert text[finding.start:finding.end] == value
    assert value not in finding.preview


# --- at note-write time and at consolidation ----------------------------------------------------


@pytest.mark.parametrize("kind", NEW_KINDS[:6])
def test_new_providers_are_redacted_at_write_time(store, kind):
    value = fake(kind, seed=1)
    note_id = store.sessions.add_note("s", f"works from CI with {value}")
    assert note_id.notice and "held secret material" in note_id.notice
    [note] = store.sessions.notes("s")
    assert value not in note.content and note.metadata[REDACTED_KEY]["kinds"]
    blob = b"".join(p.read_bytes() for p in store.path.glob("sessions.sqlite3*"))
    assert value.encode() not in blob


def test_new_providers_are_blocked_at_consolidation(store, monkeypatch):
    """Notes that reach the consolidation without the write-time gate (a session tier written before
    it existed) are blocked by the consolidation's own gate, with the gitleaks rule ids as kinds."""
    import consolidate.store.sessions.tier as session_module

    values = {kind: fake(kind, seed=2) for kind in NEW_KINDS[6:]}
    with monkeypatch.context() as m:
        m.setattr(session_module, "secret_gate_at_write", lambda content, metadata: (content, dict(metadata or {}), None))
        for kind, value in values.items():
            store.sessions.add_note("s", f"{kind}: ran the job with {value}")
    assert all(v in n.content for v, n in zip(values.values(), store.sessions.notes("s")))
    judge = ScriptedJudge(lambda note: keep(note.content))
    store.sessions.end("s", "success")
    plan = run_session(store, "s", chain_factory=lambda: JudgeChain([judge]), time_box=None)
    blocked = [e for e in plan.events if e["event"] == "note.blocked"]
    assert len(blocked) == len(values) and judge.calls == 0 and not plan.writes()
    kinds = {k for e in blocked for k in e["kinds"]}
    assert {"sendinblue-api-token", "vault-service-token", "hashicorp-tf-api-token"} <= kinds
    assert all(v not in str(plan.events) for v in values.values())


@pytest.mark.spawns
def test_plain_note_loads_no_provider_rules(tmp_path):
    """The session-end path stays light: an ordinary note written through the API neither imports the
    gate nor parses gitleaks' rule file."""
    code = ("import sys; from consolidate import Store; s = Store(sys.argv[1], embedding='hash');"
            " s.sessions.add_note('s', 'Use pnpm, not npm: npm breaks the lockfile');"
            " print('consolidate.rules.provider_rules' in sys.modules, 'ahocorasick' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / ".memofs")], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["False", "False"]
