"""Faithfulness (issue 31 item 3): a judge's keep may only state the specifics its notes hold.

consolidate/rules/faithful.py finds the specifics of a statement (paths, file names, URLs, numbers,
versions, backticked identifiers, CamelCase/snake_case names, flags); the write policy quarantines a
keep that adds one (reason ``statement adds '<x>' found in no note``), checked here as a pure rule,
as the stage, and through the CLI with a scripted judge."""

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.cli.main import main
from consolidate.model.plan import Candidate, Note, Plan
from consolidate.pipeline.stages import write_policy
from consolidate.core.normal import text_key
from consolidate.rules.faithful import reason, specifics, unfaithful

#: Notes in several scripts, each with specifics of its own.
NOTES = [
    "Run `pytest -q` from src/app before pushing; the cache lives in ~/.cache/app and expires after 30s",
    "Решили хранить конфиг в config/settings.toml, версия схемы v3.2, таймаут 45 секунд",
    "決定：ログは logs/app.log に書く、保持期間は 14 日、ライブラリは structlog 24.1",
    "Η βάση δεδομένων τρέχει στη θύρα 5432 και το αρχείο είναι docker-compose.yml",
    "La función parse_config lee ConfigLoader desde https://example.org/spec y usa --strict",
]

#: Specifics no note above holds, one of each kind.
ADDED = ["lib/worker.py", "setup.cfg", "8080", "v4.7", "`make deploy`", "https://example.com/other",
         "FooBarClient", "load_all_rows", "--no-verify", "/etc/app/hosts"]


def _forms(text: str, form: str, case: str) -> str:
    out = unicodedata.normalize(form, text)
    return {"upper": out.upper(), "lower": out.lower(), "keep": out}[case]


def _words(note: str) -> list[str]:
    """The note's whitespace-separated tokens as written, backticks aside (a backticked span is one
    specific: its words shuffled make another)."""
    return note.replace("`", "").split()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NOTES), st.randoms(use_true_random=False), st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]),
       st.sampled_from(["upper", "lower", "keep"]), st.integers(min_value=1, max_value=12))
def test_a_statement_of_the_notes_own_words_in_any_order_passes(note, rnd, form, case, k):
    """A rewrite made only of the note's own words (whitespace-separated, as written), in any order,
    case or Unicode form, adds nothing."""
    words = _words(note)
    picked = rnd.sample(words, min(k, len(words)))
    statement = _forms(" ".join(picked), form, case)
    assert unfaithful(statement, [note]) == []


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NOTES), st.randoms(use_true_random=False), st.sampled_from(["NFC", "NFD", "NFKC"]),
       st.sampled_from(["upper", "lower", "keep"]), st.sampled_from([" ", ", ", " - "]))
def test_the_notes_text_key_words_in_any_order_pass(note, rnd, form, case, sep):
    """The note's words as the normalizer reads them (text_key: letters, digits, marks), shuffled,
    joined by spaces or punctuation, in any case or Unicode form, add nothing."""
    words = text_key(note).split()
    rnd.shuffle(words)
    assert unfaithful(_forms(sep.join(words), form, case), [note]) == []


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NOTES), st.sampled_from(ADDED), st.randoms(use_true_random=False),
       st.sampled_from(["NFC", "NFD"]), st.sampled_from(["lower", "keep"]))
def test_a_statement_adding_a_specific_is_flagged(note, added, rnd, form, case):
    """The note's words plus one specific found in no note: that specific is named, whatever the
    script of the note, the place of the specific or the Unicode form of the note."""
    words = _words(note)
    at = rnd.randrange(len(words) + 1)
    statement = " ".join(words[:at] + [added] + words[at:])
    got = unfaithful(statement, [_forms(note, form, case)])
    assert [g.strip("`") for g in got] == [added.strip("`")]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(NOTES), st.sampled_from(["\u200b", "\ufeff", "\u00ad", ""]))
def test_invisible_characters_and_fullwidth_forms_in_the_statement_do_not_count(note, invisible):
    """The statement's specifics in fullwidth forms or with invisible characters pasted in are the
    note's specifics (core/normal.py's canonical form)."""
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in note)
    assert unfaithful(invisible.join(fullwidth), [note]) == []


def test_each_kind_is_found():
    found = specifics("Edit ./src/a.py and setup.cfg, see https://x.io/a, run `make all --fast` with --dry-run, "
                      "FooBar and foo_bar, v2.3.1 and 30 ms")
    assert sorted(found) == sorted([("path", "./src/a.py"), ("file", "setup.cfg"), ("url", "https://x.io/a"),
                                    ("code", "make all --fast"), ("flag", "--dry-run"), ("name", "FooBar"),
                                    ("name", "foo_bar"), ("number", "v2.3.1"), ("number", "30")])


def test_prose_is_no_specific():
    """Slash pairs of words, e.g./i.e., the numbers 0 and 1 and ordinary words are not specifics."""
    assert specifics("Use one and/or the other, e.g. the MIME type/extension, 1 file, i.e. no errors") == []


@pytest.mark.parametrize("statement,note,added", [
    ("The filter uses 30 kg per arroba, not the usual 15 kg", "usando 30 kg por arroba", ["15"]),
    ("Keep `.node-version` and the engines field of package.json", "add `.node-version` file; root `engines`",
     ["package.json"]),
    ("Python 3.11 is required", "we need Python 3.12", ["3.11"]),
    ("Logs go to store/logs/app.log", "logs go to app.log", ["store/logs/app.log"]),
])
def test_added_specifics(statement, note, added):
    assert unfaithful(statement, [note]) == added


@pytest.mark.parametrize("statement,note", [
    ("Processes 1,000 rows in two batches", "processes 1000 rows in 2 batches"),
    ("Config is read from src/app/config.toml", "config: ./src/app/config.toml (read once)"),
    ("The kToken balance is checked", "the kTokens balance"),
    ("Timeout is 30s", "timeout 30 seconds"),
    ("Uses Node 20", "node v20 on Render"),
])
def test_rewordings_pass(statement, note):
    assert unfaithful(statement, [note]) == []


def test_fields_count_too():
    """A required field the judge wrote (a recipe's command) is checked like the statement."""
    note = "Run the tests with pytest -q before pushing"
    assert unfaithful("Run the tests before pushing", [note], {"command": "pytest -q"}) == []
    assert unfaithful("Run the tests before pushing", [note], {"command": "pytest -q --maxfail=1"}) == ["--maxfail=1"]


def test_reason_names_the_specifics():
    assert reason(["a.py"]) == "statement adds 'a.py' found in no note"
    assert reason(["a", "b", "c", "d", "e"]) == "statement adds 'a', 'b', 'c' and 2 more found in no note"


def _plan(statement: str, notes: list[tuple[str, str]], source: str = "judge:scripted", fields=None) -> Plan:
    plan = Plan(session_id="s1", scope="shop-api")
    for i, (session, text) in enumerate(notes):
        plan.notes.append(Note(id=i, session_id=session, content=text))
    plan.candidates.append(Candidate(note_ids=[0], statement=statement, type="fact", source=source,
                                     evidence="observed-success", confidence="high", reason="r",
                                     fields=fields or {}))
    return plan


def test_write_policy_quarantines_an_added_path_with_the_reason():
    plan = write_policy.run(_plan("The export job writes its report to reports/daily.csv every night",
                                  [("s1", "the export job writes its report every night")]), None)
    [c] = plan.candidates
    assert c.status == "quarantined" and c.outcome == "write" and c.provenance["unfaithful"] == ["reports/daily.csv"]
    [e] = [e for e in plan.events if e["event"] == "candidate.quarantined"]
    assert e["reason"] == "statement adds 'reports/daily.csv' found in no note"


def test_write_policy_reads_the_session_and_the_project_name_but_not_other_sessions():
    """A specific from another note of the same session (the judge saw it in its batch) or the
    project's name is grounded; one from another session's note is not."""
    statement = "In shop-api the export job writes reports/daily.csv"
    same = write_policy.run(_plan(statement, [("s1", "the export job writes a report"),
                                              ("s1", "the report file is reports/daily.csv")]), None)
    assert same.candidates[0].status == "active"
    other = write_policy.run(_plan(statement, [("s1", "the export job writes a report"),
                                               ("s2", "the report file is reports/daily.csv")]), None)
    assert other.candidates[0].status == "quarantined"


def test_a_flagged_keeper_is_never_checked():
    plan = write_policy.run(_plan("Reports go to reports/daily.csv", [("s1", "reports go somewhere")],
                                  source="flagged"), None)
    assert plan.candidates[0].status == "active"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")

    def run(*argv):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
        return code, *capsys.readouterr()

    return run


def test_cli_run_quarantines_a_keep_that_adds_a_path(cli, tmp_path):
    """Through the CLI: a scripted judge's keep adds a path no note holds; the run quarantines it with
    the reason, the review queue lists it, and the faithful keep of the same run is active."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "export job": {"verdict": "keep", "statement": "The nightly export job writes its report to "
                       "reports/daily.csv", "type": "fact", "evidence": "observed-success", "confidence": "high",
                       "reason": "scripted"},
        "lockfile": {"verdict": "keep", "statement": "The CI cache key includes the lockfile hash",
                     "type": "fact", "evidence": "observed-success", "confidence": "high", "reason": "scripted"},
    }), encoding="utf-8")
    assert cli("note", "--session", "s1", "The nightly export job writes its report somewhere under the bucket")[0] == 0
    assert cli("note", "--session", "s1", "The CI cache key includes the lockfile hash so installs are reproducible")[0] == 0
    assert cli("end", "--session", "s1", "--outcome", "success")[0] == 0
    code, out, err = cli("run", "--session", "s1", "--judge", f"scripted:{script}", "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert (summary["written_durable"], summary["written_quarantined"]) == (1, 1)
    code, out, err = cli("review", "--json")
    assert code == 0, err
    assert [(r["statement"], r["status"]) for r in json.loads(out)] == [
        ("The nightly export job writes its report to reports/daily.csv", "quarantined")]
    code, out, _ = cli("recall", "CI cache key lockfile", "--json")
    assert [m["statement"] for m in json.loads(out)] == ["The CI cache key includes the lockfile hash"]
    code, out, _ = cli("recall", "nightly export job report", "--all", "--json")
    held = [m for m in json.loads(out) if m["statement"].endswith("reports/daily.csv")]
    assert [m["provenance"].get("unfaithful") for m in held] == [["reports/daily.csv"]]
    logs = [p.read_text(encoding="utf-8") for p in (tmp_path / ".memofs").rglob("*.jsonl")]
    assert any("statement adds 'reports/daily.csv' found in no note" in text for text in logs)


def test_the_same_added_specific_in_another_session_does_not_promote_it(cli, tmp_path):
    """A quarantined keep seen again in another session is promoted (stages/contradiction.py), but
    not when the new keep adds the same specific its own notes lack: the judge repeating itself is no
    confirmation. A later session whose notes do hold it promotes it."""
    statement = "The nightly export job writes its report to reports/daily.csv"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"export job": {"verdict": "keep", "statement": statement, "type": "fact",
                                                 "evidence": "observed-success", "confidence": "high",
                                                 "reason": "scripted"}}), encoding="utf-8")

    def session(sid, text):
        assert cli("note", "--session", sid, text)[0] == 0
        assert cli("end", "--session", sid, "--outcome", "success")[0] == 0
        assert cli("run", "--session", sid, "--judge", f"scripted:{script}")[0] == 0
        return [(r["statement"], r["status"]) for r in json.loads(cli("review", "--json")[1])]

    assert session("s1", "The nightly export job writes its report under the bucket") == [(statement, "quarantined")]
    assert session("s2", "Again the nightly export job wrote its report") == [(statement, "quarantined")]
    assert session("s3", "The nightly export job report is reports/daily.csv") == []


def test_a_backticked_path_with_spaces_is_one_specific():
    """``My Documents/notes.txt`` in backticks is one specific, its spaces and all: held by a note
    that says it (backticked or not), added when the notes name only ``Documents/notes.txt``."""
    statement = "Notes live in `My Documents/notes.txt` on the laptop"
    assert ("code", "My Documents/notes.txt") in specifics(statement)
    assert unfaithful(statement, ["notes live in My Documents/notes.txt on the laptop"]) == []
    assert unfaithful(statement, ["notes live in `My Documents/notes.txt` on the laptop"]) == []
    assert unfaithful(statement, ["my notes live in Documents/notes.txt on the laptop"]) == ["My Documents/notes.txt"]
