"""Passphrases: a value of several words given to a password word (``correct horse battery staple``),
told from a description of the password ("stored in the vault")."""

from __future__ import annotations

import re

from consolidate.rules.secrets.values import _BIDI_MARKS, _CJK_RUN, _ENGLISH_INFLECTION, _PASSPHRASE_META
from consolidate.rules.secrets.words import _CLAUSE_CONNECTORS, _FINAL_COPULAS, _PASSPHRASE_STOP_WORDS, _PASSWORD_PLACEHOLDER_WORDS, _PROSE_COPULAS, _PROSE_METADATA, _PROSE_STATUS_WORDS, _TYPE_WORDS


# a word of a passphrase: letters of any script (with combining marks), digits, an inner hyphen or apostrophe
_PASSPHRASE_WORD = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f\u0900-\u097f\u064b-\u065f'’-](?=\S))*", re.UNICODE)
_PASSPHRASE_MAX_WORDS = 8


def _passphrase_span(text: str, start: int, explicit: bool, stop: int | None = None,
                     max_words: int = _PASSPHRASE_MAX_WORDS) -> tuple[int, int] | None:
    """The span of a passphrase of 2-8 words given to a password word at ``start``: quoted (``password:
    "correct horse battery staple"``), or unquoted up to the end of its clause (the end of the line,
    sentence punctuation, or a connector such as "for": ``the root password for staging is correct horse
    battery staple``), or up to ``stop``. None when the words read as a description of the password
    rather than a password: a function word or imperative of :data:`_PASSPHRASE_STOP_WORDS` ("stored in
    the vault", "see below", "use SSO"), a status word after the first ("case sensitive"), a participle
    or adverb ("rotated monthly"), a word naming a secret or its store ("the vault token"), a capitalised
    word after the first in an unquoted value (product names: "Azure Key Vault"), a word that is not
    letters (and digits), a copula or connector inside (a sentence), half or more of its words status words
    ("case sensitive"), or more than ``max_words`` words before the clause ends."""
    while start < len(text) and text[start] in _BIDI_MARKS + " \t":
        start += 1
    if start >= len(text):
        return None
    quote = text[start]
    closers = {"\"": "\"", "'": "'", "`": "`", "«": "»", "„": "“", "“": "”", "「": "」", "『": "』"}
    if quote in closers:
        close = text.find(closers[quote], start + 1, min(len(text), start + 256))
        if close == -1 or "\n" in text[start + 1:close]:
            return None
        s, e = start + 1, close
        quoted = True
    else:
        s = start
        e = stop if stop is not None else _clause_end(text, start)
        quoted = False
    raw = text[s:e].strip(_BIDI_MARKS + " \t")
    if not raw:
        return None
    s = text.index(raw, s)
    e = s + len(raw)
    parts = raw.split()
    if not 2 <= len(parts) <= max_words:
        return None
    status = 0
    for part in parts:
        if not _PASSPHRASE_WORD.fullmatch(part) or part.isdigit():
            return None
        low = part.lower()
        if low in _PASSPHRASE_STOP_WORDS or low in _PASSWORD_PLACEHOLDER_WORDS or low in _TYPE_WORDS:
            return None
        if low in _PROSE_COPULAS or low in _FINAL_COPULAS or low in _CLAUSE_CONNECTORS:
            return None  # a sentence: "pentru server este floarea"
        if _PASSPHRASE_META.match(low) or low in _PROSE_METADATA or (not quoted and _ENGLISH_INFLECTION.match(part)):
            return None
        status += low in _PROSE_STATUS_WORDS
    if 2 * status >= len(parts):
        return None  # "case sensitive", "strong unique"
    if not quoted and (any(p.isupper() and len(p) > 1 for p in parts) or all(p[:1].isupper() for p in parts)):
        return None  # product names and acronyms: "Azure Key Vault", "AWS SSO"
    if sum(map(len, parts)) < 6 or _CJK_RUN.search(raw):
        return None
    return s, e


def _clause_end(text: str, start: int) -> int:
    """Where the clause that starts at ``start`` ends: before the end of the line, a sentence or clause
    mark followed by a space or the end, an aside in parentheses, or a connector word
    (:data:`_CLAUSE_CONNECTORS`)."""
    line_end = text.find("\n", start)
    limit = min(len(text), start + 200) if line_end == -1 else min(line_end, start + 200)
    for m in re.finditer(r"\S+", text[start:limit]):
        word = m.group()
        if m.start() and word.lower() in _CLAUSE_CONNECTORS:
            return start + m.start()
        if word[0] in "([{":
            return start + m.start()
        if word[-1] in ".,;:!?،؛؟。，；！？)" or word[-1] in _BIDI_MARKS:
            return start + m.end() - 1 if word[-1] not in _BIDI_MARKS else start + m.end()
    return limit
