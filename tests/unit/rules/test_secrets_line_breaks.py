"""A line break between a password word and its value hides nothing (issue 28, concern 3): the gate's
context rules read a run of white space holding a line break as one space (consolidate/core/normal.py
``join_lines``), so ``the staging db password\\nis X`` is found as ``the staging db password is X`` is,
and the redaction covers the value and nothing of the line break. Ordinary two-line notes (a sentence
ending in "password", then a next line) stay unflagged. A value split in its middle (``Sonnen\\nblume47``)
is not joined (out of scope)."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from consolidate.core.normal import join_lines
from consolidate.rules import persisted
from consolidate.rules.secrets import redact, scan
from consolidate.rules.secrets.gate import _copula_beside
from secret_corpus import load

#: A password word of a language the gate knows, and the copula or separator it takes.
SENTENCES = [
    ("the staging db password", "is"),
    ("the admin password", "="),
    ("db password", ":"),
    ("Das Passwort der DB", "ist"),
    ("Das Kennwort", ":"),
    ("la contraseña de la base", "es"),
    ("le mot de passe de la base", "est"),
    ("a senha do banco", "é"),
    ("het wachtwoord", "is"),
    ("пароль от базы", "—"),
]
BREAKS = ["\n", "\r\n", "\n\n", "  \n", " \n  ", "\t\r\n\r\n "]

values = st.builds(lambda a, b, c: a + b + c,
                   st.sampled_from(["Sonnenblume", "Girasol", "Tournesol", "Zonnebloem", "Himmelblau"]),
                   st.integers(1000, 99999).map(str), st.sampled_from(["", "!", "#x", "Qz"]))


def _no_run_of(value: str, out: str, n: int = 6) -> bool:
    return not any(value[i:i + n] in out for i in range(len(value) - n + 1))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SENTENCES), values, st.sampled_from(BREAKS), st.sampled_from(BREAKS),
       st.sampled_from(["before", "after", "both"]))
def test_a_line_break_between_the_password_word_and_its_value_hides_nothing(sentence, value, br1, br2, where):
    words, copula = sentence
    first = br1 if where in ("before", "both") else " "
    second = br2 if where in ("after", "both") else " "
    text = f"{words}{first}{copula}{second}{value}"
    assert persisted.worth_scanning(text)
    findings = scan(text)
    assert findings, repr(text)
    out = redact(text)
    assert _no_run_of(value, out), (text, out)
    # the line breaks stay outside the secret: the redacted text keeps them all
    assert [c for c in out if c in "\r\n"] == [c for c in text if c in "\r\n"], (text, out)
    assert out.startswith(words)


def test_the_reported_notes_are_found():
    for text in ["the staging db password\nis Sonnenblume4712", "Das Passwort der DB\nist Sonnenblume4720",
                 "login failed, the admin password\nis Sonnenblume4798", "db password\nis Sonnenblume4797"]:
        assert "Sonnenblume47" not in redact(text), text
        assert "\n" in redact(text)


def test_join_lines_maps_back_to_the_original():
    s = "a password\r\n\n  is  X9\nend"
    view = join_lines(s)
    assert view.text == "a password is  X9 end"
    assert join_lines(s, lambda t, a, b: t[b:b + 2] == "is").text == "a password is  X9\nend"
    i = view.text.index("X9")
    assert view.span(i, i + 2) == (s.index("X9"), s.index("X9") + 2)
    assert join_lines("one line").starts is None


ORDINARY_FIRST = ["We rotated the staging password", "Remember to change the admin password",
                  "Das ist das neue Passwort", "The deploy script no longer asks for a password",
                  "## Password"]
ORDINARY = [e.text for e in load(0) if e.expect == "allow" and re.match(r"[A-Za-z]", e.text)]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ORDINARY_FIRST), st.sampled_from(BREAKS), st.sampled_from(ORDINARY))
def test_ordinary_two_line_notes_stay_unflagged(first, br, second):
    if scan(second):
        return  # the corpus allows at most 1 % of its ordinary notes flagged: not this property's concern
    text = f"{first}{br}{second}"
    assert scan(text) == [], (text, [(f.kind, text[f.start:f.end]) for f in scan(text)])


def test_empty_variables_on_their_own_lines_stay_unflagged():
    for text in ["PASSWORD=\nAPI_KEY=\nleft blank on purpose", "DB_PASSWORD=\nDB_HOST=localhost",
                 "password:\n  username: admin", "the password\nhunter22 was the old one, now gone"]:
        assert scan(text) == [], text


def test_a_value_split_in_its_middle_is_not_joined():
    # out of scope (issue 28, concern 3): the gate reads "Sonnen" and "blume4713" as two words; only the
    # line breaks beside a copula or a separator are read as a space
    text = "the staging db password is Sonnen\nblume4713"
    assert "blume4713" in redact(text)
    assert join_lines(text, _copula_beside).starts is None


@settings(max_examples=40, deadline=None)
@given(marker=st.sampled_from(["-", "*", "+", "•", "1.", "2)", "10."]),
       first=st.sampled_from(["Test password comparison logic with known values",
                              "Check the password reset flow is", "Passwort-Prüfung mit bekannten Werten:",
                              "Rotate the admin password =", "パスワードの検証は"]),
       second=st.sampled_from(["Verify Supabase connection and query execution", "Deploy2024 to staging",
                               "Run the migration script once"]),
       br=st.sampled_from(["\n", "\r\n", "\n\n", "  \n"]))
def test_a_list_item_on_the_next_line_is_never_the_value(marker, first, second, br):
    """A line that starts a list item is an item of its own, not the value of the line before (the first
    version of the line-break rule read "- Test password comparison logic with known values\\n- Verify
    Supabase connection ..." of a real note as a password assignment: every capable cassette missed)."""
    text = f"{marker} {first}{br}{marker} {second}"
    assert not _copula_beside(text, text.index(br), text.index(br) + len(br))
