"""Invisible characters do not hide a secret from the gate (issue 28, concern 3, a fresh reviewer's
finding): ``AKIAQ3EG`` + U+00AD + ``RTZ7XKMP4WJG`` passed the gate, became a memory and lay in clear (once
the soft hyphen is dropped, as the normalizer does for display and comparison) in the graph, the vector
store, the events, context.md and notes.md; a ``ghp_`` token split so was found only from the split on, and
its redacted text kept ``ghp_Ab1Cd2Ef3Gh4``: 12 characters of the token. The gate now scans the text's
folded view too (consolidate/core/normal.py ``fold_map``: invisible and format characters removed,
fullwidth forms folded) and maps each finding back to the whole original span, invisible characters
included. Ordinary text holding such characters (emoji ZWJ sequences, Persian ZWNJ, soft hyphens in words,
flag tags, variation selectors) is not flagged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.core.normal import fold_map
from consolidate.rules.secrets import redact, scan
from consolidate.rules.persisted import worth_scanning

_PEM_BODY = ("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Nr1Yb2bGZ3tK9KbQ5Xz0mPwL",
             "q8Zr7Yx4Vb2Nc6Md1Ke9Lf0Jg3Hh5Ii8Ju7Kk6Ll5Mm4Nn3Oo2Pp1Qq0Rr9Ss8Tt")
_PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"

#: (text before, the secret as written, text after, the key material of the secret no 8-run of which may survive)
CASES = (
    ("The staging key is ", "AKIAQ3EGRTZ7XKMP4WJG", "", ("AKIAQ3EGRTZ7XKMP4WJG",)),
    ("Deploy with ", "AKIAQ3EGRTZ7XKMP4WJF", " today", ("AKIAQ3EGRTZ7XKMP4WJF",)),
    ("The CI token is ", "ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2", " for now", ("ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2",)),
    ("Slack bot token ", "xoxb-2847561930-4829175038261-Kq7ZpR2mXw9LbT4vNc8YhJ3s", " works",
     ("xoxb-2847561930-4829175038261-Kq7ZpR2mXw9LbT4vNc8YhJ3s",)),
    ("The deploy key:\n", _PEM, "\nkeep it safe", _PEM_BODY),
    ("Connect with postgres://app:", "Vq7mZr2Lx9Wt", "@db.internal:5432/prod today", ("Vq7mZr2Lx9Wt",)),
)

#: The kinds of invisible character: format characters (category Cf: zero-width space and joiners,
#: word joiner, BOM, soft hyphen, bidi marks and isolates, the Arabic letter mark), variation selectors
#: and their supplement, tag characters, the combining grapheme joiner.
INVISIBLE = st.one_of(
    st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u202a", "\u2066",
                     "\u061c", "\u034f", "\ufe0f", "\ufe00", "\U000e0100", "\U000e0020", "\U000e0041"]),
    st.characters(categories=["Cf"]),
    st.characters(min_codepoint=0xFE00, max_codepoint=0xFE0F),
    st.characters(min_codepoint=0xE0020, max_codepoint=0xE007F),
)


def _runs(material: tuple[str, ...], n: int = 8) -> set[str]:
    return {m[i:i + n] for m in material for i in range(len(m) - n + 1)}


def _planted(case, inserts) -> str:
    before, secret, after, _ = case
    for at, ch in inserts:
        at = 1 + at % (len(secret) - 1)  # strictly inside the secret: it is split
        secret = secret[:at] + ch + secret[at:]
    return before + secret + after


def test_the_clean_secrets_are_found():
    for case in CASES:
        text = case[0] + case[1] + case[2]
        assert scan(text), text
        assert not _runs(case[3]) & _runs((redact(text),)), text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.lists(st.tuples(st.integers(0, 10_000), INVISIBLE), min_size=1, max_size=3))
def test_invisible_characters_inside_a_secret_do_not_hide_it(case, inserts):
    text = _planted(case, inserts)
    assert worth_scanning(text), repr(text)
    assert scan(text), repr(text)
    out = redact(text)
    # read as the normalizer shows it: the invisible characters left outside a finding dropped
    left = fold_map(out).text
    assert not _runs(case[3]) & _runs((left,)), (repr(text), repr(out))
    assert scan(out) == [] and redact(out) == out


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CASES[:4]), st.lists(st.tuples(st.integers(0, 10_000), INVISIBLE), min_size=1, max_size=3))
def test_a_preview_shows_at_most_four_characters_and_never_an_invisible_one(case, inserts):
    (finding,) = scan(_planted(case, inserts))
    shown = finding.preview.split("…")[0] if "…" in finding.preview else ""
    assert len(shown) <= 4 and fold_map(shown).text == shown
    assert shown == case[1][:len(shown)]


def test_the_issue_repro_notes():
    for text in ("The staging key is AKIAQ3EG\u00adRTZ7XKMP4WJG",
                 "Deploy with AKIA\u200bQ3EGRTZ7XKMP4WJF and secret wJalrXUtnFEMI/K7MDENG/bPxRfiCY\u200bZQ3EGRTZ7X",
                 "token ghp_Ab1Cd2Ef3Gh4\u200bIj5Kl6Mn7Op8Qr9St0Uv1Wx2"):
        out = redact(text)
        assert "Q3EG" not in out and "RTZ7" not in out and "Ab1Cd2" not in out and "bPxR" not in out, out


def test_a_fullwidth_key_is_found():
    wide = "".join(chr(ord(c) + 0xFEE0) for c in "AKIAQ3EGRTZ7XKMP4WJG")
    assert [f.kind for f in scan(f"the key {wide} here")] == ["aws-access-key"]


ORDINARY = (
    "The family emoji \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 goes in the release notes",
    "Use \U0001F3F3\uFE0F\u200D\U0001F308 and \u2764\uFE0F in the changelog header",
    "The flag \U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F marks the UK build",
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u0627\u06cc\u0646 \u067e\u0631\u0648\u0698\u0647 \u0631\u0627"
    " \u0628\u0627 pnpm \u0628\u0633\u0627\u0632\u0645",  # Persian with a ZWNJ
    "Die Kon\u00adfi\u00adgu\u00adra\u00adtions\u00addatei liegt unter config/app.toml",
    "The inter\u00adnation\u00adali\u00adzation module loads locales lazily",
    "\u0915\u094d\u200d\u0937 is rendered with a ZWJ in the Devanagari font test",
    "\u202bשלום\u202c the Hebrew greeting is shown right to left",
    "Ｕｓｅ ｐｎｐｍ ｆｏｒ ｅｖｅｒｙ ｉｎｓｔａｌｌ in this repository",
    "\ufeffThe build uses Vite because webpack builds took four minutes",
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ORDINARY), st.lists(st.tuples(st.integers(0, 10_000), INVISIBLE), max_size=3))
def test_ordinary_text_with_invisible_characters_is_not_flagged(text, inserts):
    for at, ch in inserts:
        at %= len(text) + 1
        text = text[:at] + ch + text[at:]
    assert scan(text) == [], repr(text)
    assert redact(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(max_codepoint=0x7f), INVISIBLE,
                                  st.sampled_from("éñ\u0301\u1100\u1161\u11a8ＡＢ１ﬁﾊﾞ")), max_size=40))
def test_the_fold_map_spans_cover_their_original(s):
    view = fold_map(s)
    for i in range(len(view.text)):
        a, b = view.span(i, i + 1)
        assert 0 <= a < b <= len(s)
        assert view.text[i] in fold_map(s[a:b]).text or fold_map(s[a:b]).text in view.text
    a, b = view.span(0, len(view.text))
    assert fold_map(s[a:b]).text == view.text


@given(INVISIBLE, st.sampled_from(["pwd = sunflower", "password: sunflower", "the root passwd is sunflower"]),
       st.integers(0, 10_000))
def test_a_password_word_split_by_an_invisible_character_is_still_scanned(ch, text, at):
    word = text.split()[-3].rstrip(":") if text.startswith("the") else text.split()[0].rstrip(":")
    i = text.index(word) + 1 + at % (len(word) - 1)
    text = text[:i] + ch + text[i:]
    assert worth_scanning(text), repr(text)  # the write-time prefilter reads the password word through the fold
    assert "sunflower" not in fold_map(redact(text)).text
