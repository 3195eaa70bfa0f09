"""Faithfulness: a keep's statement may only say what its notes say (issue 31 item 3).

A judge's keep rewrites its notes into one standalone statement. The rewording of ordinary words is
the judge's job; a specific that no note holds (a path, a file name, a URL, a number or a version, an
identifier in backticks, a CamelCase or snake_case name, a ``--flag``, a command) is something the
model added, and a memory is read back into every later session as if the agent had seen it. This
rule finds those specifics; the write policy (consolidate/pipeline/stages/write_policy.py) quarantines
a keep that adds one, with the reason ``statement adds '<x>' found in no note``.

How a specific is compared (consolidate/core/normal.py, so case, Unicode form, fullwidth letters and
invisible characters never count):

- a number (any script's decimal digits; ``1,000`` and ``1000`` alike; its unit ignored, and an
  English number word up to twenty counts as its digits): its digit groups appear in the notes in that
  order;
- a name (CamelCase, snake_case): its words inside the notes' words, its singular too (``kToken`` in
  ``kTokens``, ``POSTs`` for ``POST``);
- a path of words only (not rooted, no extension: ``company/form/date``): each word in the notes;
- any other specific: its :func:`~consolidate.core.normal.text_key` words appear in the notes' words
  as one contiguous run (``src/a.py`` is found in ``./src/a.py``; ``layout.py`` in
  ``consolidate/store/layout.py``; ``store/layout.py`` is not found in a note that only says
  ``layout.py``).

Standard library only (``re``) and consolidate.core.normal: a pure text rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from consolidate.core.normal import canonical, text_key

#: The kinds of specifics, each a pattern over :func:`~consolidate.core.normal.canonical` text, tried
#: in this order (a span a kind took is not read again by a later one).
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"\b(?:https?|ftp|file)://[^\s`'\"<>()\[\]]+", re.I)),
    ("code", re.compile(r"`([^`\n]+)`")),
    # a path: rooted (``/``, ``~/``, ``./``, ``../``), or of three parts or more, or whose last part
    # has an extension; ``and/or``, ``type/extension``, ``user/team`` are prose, read word by word
    ("path", re.compile(r"(?<![\w/.~])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*\w"
                        r"|(?<![\w/.])[\w@+-][\w.@+-]*/(?:[\w.@+-]+/)+[\w.@+-]*\w"
                        r"|(?<![\w/.])[\w@+-][\w.@+-]*/[\w@+-]*\.[A-Za-z]\w*")),
    ("flag", re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=\S+)?")),
    ("file", re.compile(r"(?<![\w.])[\w-]*[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+(?:\(\))?(?![\w.])"
                        r"|(?<![\w.])\.[A-Za-z][\w-]+(?![\w.])")),
    ("number", re.compile(r"(?<![\w.])v?\d+(?:[.,:]\d+)*(?:[A-Za-z%]{0,4})?(?!\w)")),
    ("name", re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]+\w*|\w+_\w+)\b")),
)
#: Dotted words that are prose, not file names (``e.g.``, ``i.e.``, ``etc.``).
_PROSE_DOTS = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a", "n.b", "cf"})
#: English number words, counted as their digits.
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    " sixteen seventeen eighteen nineteen twenty".split())}
_DIGITS = re.compile(r"\d+")
_ROOTED = re.compile(r"[~.]*/")
_PLACEHOLDER = re.compile(r"[\W_xX]+")


def specifics(text: str) -> list[tuple[str, str]]:
    """The specifics of ``text`` as ``(kind, span)`` pairs in the order found (kinds: ``url``,
    ``code``, ``path``, ``flag``, ``file``, ``number``, ``name``), kind by kind, each span as written in the canonical text (NFC, fullwidth forms and ligatures folded,
    invisible characters removed). Ordinary words, ``0`` and ``1``, prose abbreviations (``e.g.``) and
    spans of x's only (a placeholder, or a span a cassette scrubber masked) are not specifics."""
    s = canonical(text)
    taken = [False] * len(s)
    out: list[tuple[str, str]] = []
    for kind, pattern in _KINDS:
        for m in pattern.finditer(s):
            start, end = m.span(1) if kind == "code" else m.span()
            if any(taken[start:end]):
                continue
            span = s[start:end].rstrip(".,;:")
            if kind == "file" and span.lower().rstrip("()") in _PROSE_DOTS:
                continue
            if not _PLACEHOLDER.sub("", span):
                continue  # x's only (``x_xxxx``, ``~/.xxxx``): a placeholder or a masked span, no specific
            if kind == "number" and len(_digit_groups(span)) == 1 and _digit_groups(span)[0] in {"0", "1"}:
                continue  # "1" and "0" are ordinary words ("one file", "no errors") more than specifics
            for i in range(m.start(), m.end()):
                taken[i] = True
            if text_key(span):
                out.append((kind, span))
    return out


def _ungroup(text: str) -> str:
    """``text`` with the thousands separators of its numbers removed (``1,000`` -> ``1000``: a comma
    between a digit and exactly three digits)."""
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)


def _digit_groups(span: str) -> list[str]:
    """The digit groups of a number span, in ASCII digits: ``1,000`` is ``["1000"]``, ``3.12`` is
    ``["3", "12"]``, ``v2`` is ``["2"]``; an English number word up to twenty is its digits."""
    out: list[str] = []
    for word in text_key(_ungroup(span)).split():
        if word in _NUMBER_WORDS:
            out.append(_NUMBER_WORDS[word])
        out.extend("".join(str(int(ch)) for ch in g) for g in _DIGITS.findall(word))
    return out


@functools.lru_cache(maxsize=4096)
def _indexed(text: str) -> tuple[str, str]:
    """``(text_key words, digit groups joined by spaces)`` of one note text: a session's notes are
    the source of each of its keeps, so each is indexed once per process, not once per keep
    (measured on the 41 real-notes sessions end to end: 11.4 s of 33 s went to indexing again)."""
    return text_key(text), " ".join(_digit_groups(canonical(text)))


class Source:
    """The notes a statement may draw on, indexed once: their :func:`text_key` words and the digit
    groups of their numbers (:func:`_digit_groups`), each as one space-separated run."""

    def __init__(self, texts: Iterable[str]):
        indexed = [_indexed(t) for t in texts if t]
        self.words = " " + " ".join(k for k, _ in indexed if k) + " "
        self.numbers = " " + " ".join(g for _, g in indexed if g) + " "

    def holds(self, kind: str, span: str) -> bool:
        """Whether the notes hold the specific ``span`` of ``kind`` (module docstring)."""
        if kind == "number":
            return (" " + " ".join(_digit_groups(span)) + " ") in self.numbers
        key = text_key(span)
        if kind == "name":  # a name inside a longer identifier counts (kToken in kTokens), a plural too
            return key in self.words or (key.endswith("s") and key[:-1] in self.words)
        if kind == "path" and not _ROOTED.match(span) and "." not in span:
            # words joined by slashes (``company/form/date``): each a word of the notes
            return all(f" {w} " in self.words for w in key.split())
        return (" " + text_key(span) + " ") in self.words


def unfaithful(statement: str, notes: Iterable[str], fields: dict | None = None) -> list[str]:
    """The specifics of ``statement`` (and of the values of ``fields``, the judge's required fields:
    ``command``, ``context``, ...) that no text of ``notes`` holds, each once, as written; [] when the statement says only what its notes say. ``notes`` are the texts the
    judge saw (the candidate's notes and the other notes of their session: content, section and
    kind; the project's name)."""
    source = Source(list(notes))
    texts = [statement] + [str(v) for v in (fields or {}).values() if isinstance(v, str | int | float)]
    out: list[str] = []
    for text in texts:
        for kind, span in specifics(text):
            if span not in out and not source.holds(kind, span):
                out.append(span)
    return out


def reason(added: list[str]) -> str:
    """The decision's reason for the specifics ``added`` (non-empty): ``statement adds 'x' found in
    no note`` (up to three named, then how many more)."""
    shown = ", ".join(f"'{a}'" for a in added[:3])
    more = f" and {len(added) - 3} more" if len(added) > 3 else ""
    return f"statement adds {shown}{more} found in no note"
