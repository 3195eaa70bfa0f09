"""The secret gate's entry points: :func:`scan` runs every rule over a text, :func:`redact` and
:func:`user_reason` replace what it finds by redacted previews."""

from __future__ import annotations

import functools
import re

from consolidate.rules.secrets.assignments import _assignments
from consolidate.rules.secrets.credentials import _auth_headers, _connection_strings, _credential_pairs, _userinfo_pairs
from consolidate.core.normal import fold_map, join_lines
from consolidate.rules.secrets.findings import Finding, _Candidate, _P_JWT, _P_KEY_MATERIAL, _P_PRIVATE_KEY, _P_PROVIDER, _resolve, redact_preview
from consolidate.rules.secrets.prose import _PROSE_WORDS_ALL, _cjk_set_password, _prose_secrets
from consolidate.rules.secrets.words import _PROSE_COPULAS
from consolidate.rules.secrets.providers import _JWT_RE, _aws, _detect_secrets, _private_keys, _vendor_rules
from consolidate.rules import key_material


def redact(text: str) -> str:
    """The text with every finding replaced by its preview; safe to write to logs."""
    findings = scan(text)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for finding in findings:  # sorted and non-overlapping
        parts.append(text[pos : finding.start])
        parts.append(finding.preview)
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)


def user_reason(text: str | None, default: str, limit: int = 500) -> str:
    """A reason a user typed (``forget --reason``, ``review --approve/--decline --reason``) as it is
    kept in events, archives and notes.md: whitespace folded, at most ``limit`` characters, and any
    secret material the gate finds replaced by its redacted preview (:func:`redact`), so a reason never
    stores a secret a note could not store. ``default`` when ``text`` is empty."""
    why = " ".join((text or "").split()) or default
    if text and scan(why):
        why = redact(why)
    return why[:limit]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def scan(text: str) -> list[Finding]:
    """Every secret in ``text``, sorted by position, never overlapping; ``[]`` means clean.

    The rules run over the text as written and over its folded view (consolidate/core/normal.py
    :func:`~consolidate.core.normal.fold_map`: invisible and format characters removed, NFC, fullwidth
    forms folded), so a key with a zero-width space, a soft hyphen, a word joiner, a BOM or a tag
    character inside (``AKIA\u00adQ3EG...``) is found as the key it reads as. A finding in the view is
    mapped back to the whole original span, the invisible characters inside it included, so
    :func:`redact` leaves nothing of the key; its preview is taken from the view (what the key reads
    as, never an invisible character).

    The context rules (a keyword, a copula or separator, a value: ``password is X``, ``Passwort: X``,
    ``password = X``) also run over the folded view with each run of white space holding a line break
    read as one space (:func:`~consolidate.core.normal.join_lines`), so a line break between the keyword
    and its value (``the db password\nis X``, ``Das Passwort der DB\nist X``) hides nothing; the
    finding is the value's own span, the line break outside it. A value split by a line break in its
    middle (``Sonnen\nblume47``) is not joined: the gate reads it as two words."""
    if not isinstance(text, str):
        raise TypeError(f"scan() takes a str, not {type(text).__name__}")
    if len(text) < 5:  # the shortest secret in a text: 口令:春天 (a password word, a separator, a 2-letter word)
        return []
    view = fold_map(text)
    candidates = _candidates(text)
    if view.starts is not None:
        candidates.extend(c._replace(start=a, end=b) for c in _candidates(view.text)
                          for a, b in (view.span(c.start, c.end),))
    joined = join_lines(view.text, _copula_beside)
    if joined.starts is not None:
        candidates.extend(c._replace(start=a, end=b) for c in _context_candidates(joined.text)
                          for a, b in (view.span(*joined.span(c.start, c.end)),) if _joined_value(text, a))
    # the next lines of a value found as it is wrapped (a key's base64 after its name line): the key's too
    rest = _key_material().continued(text, [(c.start, c.end) for c in candidates])
    candidates.extend(_Candidate(_P_KEY_MATERIAL, _key_material().KIND, a, b) for a, b in rest)
    return [Finding(c.kind, redact_preview(fold_map(text[c.start:c.end]).text, c.kind), c.start, c.end)
            for c in _resolve(candidates)]


def _candidates(text: str) -> list[_Candidate]:
    """Every rule's candidate spans in ``text`` (overlapping; :func:`_resolve` picks among them)."""
    if len(text) < 5:
        return []
    ds = _detect_secrets()
    # Every rule has needles: lower-case substrings one of which any match must contain. Looking
    # for them in the lower-cased text is a superset test, and costs far less than running the
    # regex: most notes skip most rules.
    low = _lower(text)
    candidates: list[_Candidate] = []
    add = candidates.append
    # every needle of the gate's rules and every keyword of gitleaks' rules, in one Aho-Corasick pass
    present = {needle for _, needle in ds.finder.iter(low)}
    present.update(c for c in ds.single_char_needles if c in low)

    for start, end in _private_keys(text, ds):
        add(_Candidate(_P_PRIVATE_KEY, "private-key", start, end))

    if "eyj" in low:
        for m in _JWT_RE.finditer(text):
            if ds.jwt_valid(m.group().rstrip(".")):
                add(_Candidate(_P_JWT, "jwt", m.start(), m.end()))

    # the provider rules one of whose needles occurs (most notes: none), in a fixed order
    for i in sorted({i for needle in present for i in ds.rules_by_needle.get(needle, ())}):
        kind, regex, span_of = ds.rules[i]
        for m in regex.finditer(text):
            span = span_of(m, text)
            if span is not None:
                add(_Candidate(_P_PROVIDER, kind, *span))

    candidates.extend(_aws(text, low, ds, present))
    candidates.extend(_vendor_rules(text, low, present, candidates))
    candidates.extend(_connection_strings(text))
    candidates.extend(_auth_headers(text, low))
    candidates.extend(_assignments(text, low))
    if not present.isdisjoint(_PROSE_WORDS_ALL):  # the secret-named words of prose, from the same pass
        candidates.extend(_prose_secrets(text, low))
    candidates.extend(_credential_pairs(text, low, present))
    candidates.extend(_userinfo_pairs(text))
    if not low.isascii():
        candidates.extend(_cjk_set_password(text))
    # key material with no keyword beside it (consolidate/rules/key_material.py): last, every rule above wins
    keys = list(_key_material().find(text, [(c.start, c.end) for c in candidates]))
    if keys:
        candidates, keys = _absorb(candidates, keys)
        candidates.extend(_Candidate(_P_KEY_MATERIAL, _key_material().KIND, a, b) for a, b in keys)
    return candidates


def _absorb(candidates: list[_Candidate], keys: list[tuple[int, int]]) -> tuple[list[_Candidate], list[tuple[int, int]]]:
    """The candidates and key spans after a run of key material takes in the rules' matches found in it
    by chance: a match inside the run (a provider pattern in a long random run) is dropped, and one
    that overlaps its end or start (``...5Pw==\\r\\n`` read as the assignment ``Pw==\\r\\n``) is dropped
    and the run widened to cover it. The run's characters then stay inside a finding however the
    overlap is resolved (the most specific rule wins where spans overlap)."""
    spans = list(keys)
    changed = True
    while changed:  # a widened run may reach another match: widen until none overlaps a run's edge
        changed = False
        for c in candidates:
            for i, (a, b) in enumerate(spans):
                if c.start < b and a < c.end and not (c.start <= a and b <= c.end) and not (a <= c.start and c.end <= b):
                    spans[i] = (min(a, c.start), max(b, c.end))
                    changed = True
    kept = [c for c in candidates
            if not any(c.start < b and a < c.end and not (c.start <= a and b <= c.end) for a, b in spans)]
    return kept, spans


def _lower(text: str) -> str:
    """``text`` lower-cased, offset for offset (U+0130 lower-cases to two characters: read as ``i``)."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text).replace("\u0130", "i")
    return low


_LINE_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
#: A line that is an assignment of its own (``DB_HOST=localhost``, ``API_KEY=``, ``username: admin``)
_ASSIGNMENT_LINE = re.compile(r"[A-Za-z_][\w.-]*[ \t]*[:=]")


def _copula_beside(text: str, start: int, end: int) -> bool:
    """Whether the line break ``text[start:end]`` stands beside a copula or a separator, the word of a
    keyword and its value that may go on either line (``password\nis X``, ``Passwort:\n X``,
    ``パスワードは\nX``): only such a break is read as a space. A sentence ending in the keyword and a line
    after it (``We rotated the password\nThe script ...``, a heading ``## Password``) stay two."""
    if _LIST_ITEM.match(text, end):
        return False  # the next line is a list item of its own (``- Verify the connection``), never the value
    before = text[max(0, start - 64):start].rsplit(None, 1)[-1].strip("*_`\"'")
    after = text[end:end + 64].split(None, 1)[0].strip("*_`\"'")
    return (before.lower() in _PROSE_COPULAS or after.lower() in _PROSE_COPULAS
            or before[-1:] in _SEPARATOR_END or after[:1] in _SEPARATORS)


_SEPARATORS = ":=：＝"
#: A line that starts a list item: a bullet (``-``, ``*``, ``+``, ``•``) or a number (``1.``, ``2)``) and a space
#: (a real note: "- Test password comparison logic with known values\n- Verify Supabase connection ...").
_LIST_ITEM = re.compile(r"(?:[-*+•]|\d{1,3}[.)])[ \t]")
_SEPARATOR_END = _SEPARATORS + "はが是为為는은이가"  # a CJK particle after the keyword: パスワードは\nX


def _joined_value(text: str, start: int) -> bool:
    """Whether a value the context rules found at ``start`` in the line-joined view is one: a line that
    is an assignment of its own (``PASSWORD=\nAPI_KEY=``: two empty variables of an ``.env`` file;
    ``password:\n  username: admin``) is no value of the line before."""
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    return i == 0 or text[i - 1] not in _LINE_BREAKS or not _ASSIGNMENT_LINE.match(text, start)


def _context_candidates(text: str) -> list[_Candidate]:
    """The candidates of the rules that read a keyword and the value given to it (variables and prose,
    in every language of the gate), for the line-joined view of :func:`scan`."""
    low = _lower(text)
    candidates = list(_assignments(text, low))
    candidates.extend(_prose_secrets(text, low))
    if not low.isascii():
        candidates.extend(_cjk_set_password(text))
    return candidates


@functools.cache
def _key_material():
    return key_material
