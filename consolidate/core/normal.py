"""The one normalizer for comparing texts and paths (issue 28, concern 4).

Two texts that read the same are the same text wherever the store compares them: a memory said
again in another Unicode form (NFD as macOS writes it, fullwidth forms as an IME types them, with a
zero-width space or a BOM pasted in) re-confirms the memory instead of becoming a second one, and a
forgotten memory said so stays forgotten. Two paths that name the same file are the same path
(``./src/a.py``, ``src//a.py/``, ``src\\a.py``, a file name in NFD). Every module that compares
texts or paths takes its key from here; :data:`COMPARERS` lists them (tests/unit/core/test_normalizer.py walks it
through the installed command, and fails when another module calls ``unicodedata.normalize`` or
``casefold``).

The forms, each idempotent (``f(f(s)) == f(s)``):

- :func:`canonical` -- invisible characters removed (:func:`strip_invisible`: format characters,
  category Cf: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi marks and embeddings;
  variation selectors; the combining grapheme joiner), NFC, and of NFKC only the forms users mean
  as the same text: fullwidth and halfwidth forms, the ideographic space, the Latin ligatures
  (``x²``, ``H₂O``, ``½``, ``①``, ``Ⅳ``, ``℃`` stay as they are). Case and spacing kept: the form
  embedded and lexically indexed.
- :func:`disguise_fold` -- tag characters read as the ASCII they encode (:func:`tag_text`), other
  invisible characters removed, full NFKC, the Cyrillic, Greek and Latin small-capital lookalikes of
  Latin letters in Latin words read as Latin (:func:`confusable_fold`, :data:`CONFUSABLES`), the
  combining marks on Latin letters dropped (:func:`drop_marks`): what a disguised word reads as (the
  guard's second look), never a comparison key.
- :func:`fold_map` -- :func:`canonical` with the way back: each character of the view knows the span of
  the original it came from (:class:`FoldMap`), so a detector scanning the view (the secret gate) finds
  ``AKIA\u200bQ3EG...`` as ``AKIAQ3EG...`` and removes the whole original span. For detection only.
- :func:`join_lines` -- a run of white space holding a line break between words read as one space, with
  the way back (:class:`FoldMap`): how the secret gate's context rules read ``password\nis X``. For detection only.
- :func:`fold` -- :func:`canonical`, case-folded (``casefold``: ``Straße`` is ``strasse``).
- :func:`text_key` -- the words of :func:`fold` (letters, digits, marks, ``_``) joined by one space,
  a number's minus sign and the relations ``< > <= >= != ==`` kept: other punctuation, symbols and
  spacing folded. How two statements are compared (duplicates,
  re-confirmation, echoes, tombstones, a memory's id).
- :func:`name_key` -- :func:`fold` with whitespace runs one space: entity names.
- :func:`search_fold` -- :func:`fold` without the Latin/Greek/Cyrillic diacritics (``café`` is
  ``cafe``): the lexical index's terms, for search only.
- :func:`path_key` -- a path as compared: invisible characters removed, NFC (not NFKC: a fullwidth
  file name is another file), ``\\`` as ``/``, ``.`` parts, repeated and trailing ``/`` dropped,
  ``..`` resolved lexically where it can be. Case is kept (Linux file names are case-sensitive).
- :func:`nfc` -- NFC alone: the form a text is kept or measured in, not a comparison key.

Standard library only (``re``, ``unicodedata``, ``posixpath``): the fast hook and the session tier
import it.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from typing import Callable, NamedTuple

#: Characters outside category Cf that render as nothing: variation selectors (U+FE00-FE0F and the
#: supplement U+E0100-E01EF), the combining grapheme joiner U+034F, the Hangul fillers; and the Arabic
#: tatweel U+0640 (kashida), which only stretches the letter before it: the same word with or without.
_INVISIBLE_EXTRA = frozenset([0x034F, 0x0640, 0x115F, 0x1160, 0x3164, 0xFFA0, *range(0xFE00, 0xFE10),
                              *range(0xE0100, 0xE01F0)])
#: Latin, Greek and Cyrillic combining diacritics (removed by :func:`search_fold` only).
_DIACRITICS = re.compile("[\u0300-\u036f]+")


class _Invisible(dict):
    """A ``str.translate`` table deleting invisible characters (built lazily per code point)."""

    def __missing__(self, cp: int):
        gone = cp in _INVISIBLE_EXTRA or unicodedata.category(chr(cp)) == "Cf"
        self[cp] = None if gone else cp
        return self[cp]


_TABLE = _Invisible()


def is_invisible(ch: str) -> bool:
    """Whether the one character ``ch`` renders as nothing (see :func:`strip_invisible`)."""
    return _TABLE[ord(ch)] is None


def strip_invisible(s: str) -> str:
    """``s`` without its invisible characters: format characters (Unicode category Cf: U+200B-U+200F,
    U+202A-U+202E, U+2060-U+2064, U+2066-U+2069, U+FEFF, U+00AD, U+061C, tags), variation selectors,
    the combining grapheme joiner, Hangul fillers, the Arabic tatweel. Everything else is kept as it is."""
    if s.isascii():
        return s
    return s.translate(_TABLE)


def blank(s: str) -> bool:
    """Whether ``s`` holds nothing visible (whitespace and invisible characters only)."""
    return not strip_invisible(s).strip()


def nfc(s: str) -> str:
    """``s`` in NFC (a letter and its accent one character, however it was typed): the form a text
    is kept or measured in. Not a comparison key (see :func:`text_key`)."""
    return s if s.isascii() else unicodedata.normalize("NFC", s)


#: The compatibility forms :func:`canonical` folds: fullwidth and halfwidth forms (U+FF00-U+FFEF:
#: ``ｐｎｐｍ``, halfwidth katakana), the ideographic space U+3000 (the fullwidth space an IME types)
#: and the Latin ligatures U+FB00-U+FB06 (``ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ``, as PDFs paste them). Nothing else of
#: NFKC: superscripts and subscripts (``x²``, ``H₂O``), circled digits, vulgar fractions, roman
#: numerals, letterlike symbols (``℃``) and mathematical letters say something else and stay.
_COMPAT = re.compile("[\u3000\ufb00-\ufb06\uff00-\uffef]")


def _fold_compat(s: str) -> str:
    return _COMPAT.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), s)


def canonical(s: str) -> str:
    """``s`` without invisible characters (:func:`strip_invisible`), in NFC, with the fullwidth and
    halfwidth forms and the Latin ligatures folded (fullwidth ``ｐｎｐｍ`` is ``pnpm``, ``ﬁ`` is ``fi``,
    halfwidth ``ﾊﾞ`` is ``バ``, NFD is composed). Not NFKC: ``x²`` is not ``x2``, ``H₂O`` not
    ``H2O``, ``½`` not ``1⁄2``, ``Ⅳ`` not ``IV`` (see :data:`_COMPAT`). Case and spacing kept."""
    if s.isascii():
        return s
    out = unicodedata.normalize("NFC", strip_invisible(s))
    if _COMPAT.search(out):
        out = unicodedata.normalize("NFC", _fold_compat(out))
    return out


class FoldMap(NamedTuple):
    """A text as a detector reads it (:func:`fold_map`), and the way back to the text it was folded from.

    ``text`` is the folded view; ``starts[i]`` and ``ends[i]`` the offsets in the original of the first
    character and just past the last visible character behind ``text[i]`` (``None``: the view is the
    original, character for character)."""

    text: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The ``(start, end)`` offsets in the original of the view's ``text[start:end]``: the whole
        original span, with the invisible characters inside it (a character folded from several, or
        several from one, are taken whole)."""
        if self.starts is None or self.ends is None or end <= start:
            return start, end
        return self.starts[start], self.ends[end - 1]


def _joins(cluster: str, ch: str) -> bool:
    """Whether ``ch`` composes with the cluster before it under NFC (a combining mark, a Hangul vowel
    or final jamo after its syllable), so that the two fold as one."""
    if unicodedata.combining(ch):
        return True
    if ch.isascii() and cluster[-1:].isascii():
        return False
    return unicodedata.normalize("NFC", cluster + ch) != unicodedata.normalize("NFC", cluster) + unicodedata.normalize("NFC", ch)


def fold_map(s: str) -> FoldMap:
    """``s`` as a detector reads it, with each character's place in ``s``: :func:`canonical` (invisible
    characters removed: format characters of category Cf such as U+200B, U+2060, U+FEFF, the soft hyphen,
    the tag characters; variation selectors; NFC; fullwidth and halfwidth forms and the Latin ligatures
    folded) taken character cluster by cluster, so that every character of the view knows the span of
    ``s`` it came from (:meth:`FoldMap.span`). ``AKIA\u00adQ3EG`` reads as ``AKIAQ3EG``, and the span of
    that view is the whole original, soft hyphen included. For detection only (the secret gate,
    consolidate/rules/secrets/gate.py), never a comparison key. The view is ``s`` itself (no map) for
    a text :func:`canonical` leaves as it is."""
    if s.isascii() or (strip_invisible(s) == s and not _COMPAT.search(s) and unicodedata.is_normalized("NFC", s)):
        return FoldMap(s)
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cluster, first, last = "", 0, 0

    def flush() -> None:
        piece = canonical(cluster)
        out.append(piece)
        starts.extend([first] * len(piece))
        ends.extend([last] * len(piece))

    for i, ch in enumerate(s):
        if _TABLE[ord(ch)] is None:
            continue  # invisible: part of no character of the view (inside a span, the span holds it)
        if cluster and not _joins(cluster, ch):
            flush()
            cluster = ""
        if not cluster:
            first = i
        cluster += ch
        last = i + 1
    if cluster:
        flush()
    return FoldMap("".join(out), tuple(starts), tuple(ends))



#: A run of white space holding a line break, between two characters that are not white space.
_LINE_BREAK_RUN = re.compile(r"(?<=\S)\s*[\n\r\x0b\x0c\x85\u2028\u2029]\s*(?=\S)")


def join_lines(s: str, joins: Callable[[str, int, int], bool] | None = None) -> FoldMap:
    """``s`` with every run of white space that holds a line break between two words read as one space
    (only the runs ``s[start:end]`` for which ``joins(s, start, end)`` holds, when given), with each
    character's place in ``s`` (:class:`FoldMap`: the space's span is the whole run). How the secret
    gate's context rules read a keyword and its value that a line break separates (``the db
    password\nis X``, ``Passwort:\r\n  X``): a value found in the view maps back to its own characters,
    the line break before it staying outside. For detection only; the view is ``s`` itself (no map) for
    a text with no such run."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _LINE_BREAK_RUN.finditer(s):
        if joins is not None and not joins(s, m.start(), m.end()):
            continue
        out.append(s[pos:m.start()])
        starts.extend(range(pos, m.start()))
        ends.extend(range(pos + 1, m.start() + 1))
        out.append(" ")
        starts.append(m.start())
        ends.append(m.end())
        pos = m.end()
    if not out:
        return FoldMap(s)
    out.append(s[pos:])
    starts.extend(range(pos, len(s)))
    ends.extend(range(pos + 1, len(s) + 1))
    return FoldMap("".join(out), tuple(starts), tuple(ends))

#: The Cyrillic and Greek letters that read as a Latin one (the lookalikes of Unicode's confusables
#: list for these scripts, as a spoofed "ignоre" or "сurl" writes them), and the Latin small capitals
#: and letters that read as an ASCII one ("preᴠious", "ɪgnore"): the one table of them.
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "ӏ": "l",
    "м": "m", "н": "h", "о": "o", "р": "p", "ԁ": "d", "ԛ": "q", "ѕ": "s", "с": "c", "т": "t", "у": "y",
    "ԝ": "w", "х": "x", "ѵ": "v",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "Һ": "H", "І": "I", "Ї": "I", "Ј": "J", "К": "K", "Ӏ": "I",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "Ԛ": "Q", "Ѕ": "S", "С": "C", "Т": "T", "У": "Y", "Ԝ": "W",
    "Х": "X", "Ѵ": "V",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y", "ϳ": "j", "ς": "s",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin small capitals (U+1D00-U+1D2B and the IPA block's ɪ ʀ ɢ ʜ ʟ ɴ ʏ ʙ) and the Latin letters that
    # read as an ASCII one (ɑ ɡ ı ȷ ɩ ʋ ǀ): Latin themselves, so a word of them with ASCII letters ("preᴠious",
    # "ɪgnore") is a mixed word above
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j",
    "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴑ": "o", "ᴘ": "p", "ꞯ": "q", "ʀ": "r", "ꜱ": "s",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    "ɑ": "a", "ɡ": "g", "ı": "i", "ȷ": "j", "ɩ": "i", "ʋ": "v", "ǀ": "l",
}
_CONFUSABLE_TABLE = str.maketrans(CONFUSABLES)
#: A word: a run of letters (and the combining marks on them).
_LETTERS = re.compile(r"[^\W\d_]+")


def _latin(ch: str) -> bool:
    return ch.isascii() or unicodedata.name(ch, "").startswith("LATIN")


def confusable_fold(s: str) -> str:
    """``s`` with the Cyrillic and Greek lookalikes of Latin letters (:data:`CONFUSABLES`) written as
    the Latin letter in the words that are Latin in disguise: a word mixing Latin letters with
    lookalikes (``ignоre`` with a Cyrillic ``о``), and, in a text that holds such a word or whose
    letters are mostly Latin, a word made of lookalikes only (``ехес``, ``аӏӏ``). A word holding a Cyrillic or Greek letter that reads as
    no Latin one (``д``, ``λ``) is left as it is, and so is every word of a text mostly in those
    scripts: ordinary Russian or Greek is unchanged. For detection only (the guard's second look,
    through :func:`disguise_fold`), never a comparison key. Idempotent."""
    if s.isascii():
        return s
    words = _LETTERS.findall(s)
    lookalike = [w for w in words if not w.isascii() and all(_latin(c) or c in CONFUSABLES for c in w
                                                             if unicodedata.category(c)[0] == "L")]
    mixed = {w for w in lookalike if any(c.isascii() for c in w)}
    latin = sum(len(w) for w in words if all(_latin(c) for c in w))
    disguised = bool(mixed) or latin > sum(len(w) for w in words) - latin
    wanted = {w for w in lookalike if w in mixed or disguised}
    return _LETTERS.sub(lambda m: m.group(0).translate(_CONFUSABLE_TABLE) if m.group(0) in wanted else m.group(0), s)


#: Unicode tag characters U+E0020-U+E007E: invisible, each the ASCII character 0x20-0x7E it is offset
#: from (the "ASCII smuggling" of a text a model reads and a person does not see).
_TAG_RUN = re.compile("[\U000E0020-\U000E007E]+")
#: An emoji tag sequence (UTS #51): the black flag U+1F3F4, tag letters or digits, the cancel tag U+E007F
#: (the flags of England, Scotland, Wales): the one ordinary use of tag characters.
_EMOJI_TAGS = re.compile("\U0001F3F4[\U000E0030-\U000E0039\U000E0061-\U000E007A]{1,16}\U000E007F")


def _untag(run: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) for c in run)


def tag_text(s: str) -> str:
    """The text ``s`` hides in Unicode tag characters (U+E0020-U+E007E read as the ASCII characters
    0x20-0x7E), each run on its own, runs joined by one space; '' when ``s`` holds none. The tags of an
    emoji flag sequence (U+1F3F4, tag letters, U+E007F: the flag of England) hide nothing and are
    skipped."""
    if s.isascii() or not _TAG_RUN.search(s):
        return ""
    return " ".join(_untag(m.group(0)) for m in _TAG_RUN.finditer(_EMOJI_TAGS.sub(" ", s)))


#: Variation selectors (U+FE00-U+FE0F, U+E0100-U+E01EF): 256 invisible characters, so each can carry one
#: byte (U+FE00+b for b < 16, U+E0100+b-16 otherwise: "emoji smuggling"). Ordinary text puts one after a
#: base character (an emoji's U+FE0F, a CJK ideograph's variant): never two in a row, and the
#: supplement only after an ideograph.
_SELECTOR = "[\uFE00-\uFE0F\U000E0100-\U000E01EF]"
_SELECTOR_RUN = re.compile(_SELECTOR + "{2,}")
_STRAY_SUPPLEMENT = re.compile("(?:^|(?<=[^\u2E80-\u9FFF\uF900-\uFAFF\U00020000-\U0003FFFF]))"
                               "[\U000E0100-\U000E01EF]")


def selector_bytes(s: str) -> bytes:
    """The bytes ``s`` hides in Unicode variation selectors: each run of two or more selectors, and each
    selector of the supplement (U+E0100-U+E01EF) not after a CJK ideograph, read as one byte per
    selector (U+FE00-U+FE0F are 0-15, U+E0100-U+E01EF are 16-255), runs concatenated; ``b''`` when
    ``s`` holds none (one U+FE0F after an emoji, one ideographic variant selector after an ideograph
    hide nothing)."""
    out, end = bytearray(), 0
    for a, b in selector_spans(s):
        for c in s[max(a, end):b]:
            cp = ord(c)
            out.append(cp - 0xFE00 if cp < 0x10000 else cp - 0xE0100 + 16)
        end = max(end, b)
    return bytes(out)


def selector_spans(s: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` character offsets of the selectors :func:`selector_bytes` reads, in order
    (possibly overlapping); ``[]`` when ``s`` hides nothing so."""
    if s.isascii():
        return []
    return sorted({m.span() for m in _SELECTOR_RUN.finditer(s)} | {m.span() for m in _STRAY_SUPPLEMENT.finditer(s)})


def _latin_base(ch: str) -> bool:
    return bool(ch) and (ch.isascii() and ch.isalpha() or unicodedata.name(ch, "").startswith("LATIN"))


def drop_marks(s: str) -> str:
    """``s`` with the combining marks (category Mn) on Latin letters removed after NFD, then NFC
    (``i\u0307gnore`` and ``ígnore`` are ``ignore``, ``précédentes`` is ``precedentes``); the marks on
    letters of other scripts (Devanagari vowel signs, Arabic harakat, Cyrillic ``й``) are kept. For
    detection only (:func:`disguise_fold`), never a comparison key. Idempotent."""
    if s.isascii():
        return s
    out, base = [], ""
    for ch in unicodedata.normalize("NFD", s):
        if unicodedata.category(ch) == "Mn":
            if _latin_base(base):
                continue
        else:
            base = ch
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def disguise_fold(s: str, *, keep_marks: bool = False) -> str:
    """``s`` as a disguised text reads: Unicode tag characters read as the ASCII they encode
    (:func:`tag_text`: ``U+E0069 U+E0067 ...`` is ``ig...``), other invisible characters removed, in
    full NFKC (``𝐈𝐠𝐧𝐨𝐫𝐞`` is ``Ignore``, ``x²`` is ``x2``), the lookalikes of Latin letters in Latin words
    read as Latin (:func:`confusable_fold`: ``ignоre`` with a Cyrillic ``о`` is ``ignore``, ``preᴠious``
    with a small capital is ``previous``), and the combining marks on Latin letters dropped
    (:func:`drop_marks`: ``i\u0307gnore`` is ``ignore``) unless ``keep_marks`` (the guard also reads the
    text with its accents, for its rules written with them: ``précédentes``). For detection only
    (consolidate/rules/guard.py tries its rules on it); never a comparison key (two texts that differ
    in a superscript are two texts: :func:`canonical`)."""
    if s.isascii():
        return s
    if _TAG_RUN.search(s):
        s = _TAG_RUN.sub(lambda m: _untag(m.group(0)), _EMOJI_TAGS.sub("\U0001F3F4", s))
    out = unicodedata.normalize("NFKC", strip_invisible(s))
    if not out.isascii():
        out = unicodedata.normalize("NFKC", strip_invisible(out))
    out = confusable_fold(out)
    if not keep_marks and not out.isascii():
        bare = drop_marks(out)
        if bare != out:
            out = confusable_fold(bare)
    return out


def fold(s: str) -> str:
    """:func:`canonical`, case-folded (then :func:`canonical` again: folding may decompose)."""
    out = canonical(s).casefold()
    return out if out.isascii() else canonical(out)


def _word_char(ch: str) -> bool:
    return ch == "_" or unicodedata.category(ch)[0] in "LNM"


#: Relations written as symbols, in the ASCII spelling text_key keeps them in (a relation that differs
#: is another statement: ``x < 5`` is not ``x > 5``, ``a != b`` not ``a == b``, ``-5`` not ``5``).
_RELATIONS = str.maketrans({"\u2212": "-", "\u2260": "!=", "\u2264": "<=", "\u2265": ">="})


def _words_non_ascii(s: str) -> list[str]:
    """:data:`_ASCII_WORD`'s tokens for any script: words (letters, digits, marks, ``_``), a number's
    minus sign, the relations ``< > <= >= != ==``."""
    s = s.translate(_RELATIONS)
    out, i, n = [], 0, len(s)
    while i < n:
        ch = s[i]
        if _word_char(ch) or (ch == "-" and i + 1 < n and s[i + 1].isdecimal()
                              and not (i and (_word_char(s[i - 1]) or s[i - 1] == "."))):
            j = i + 1
            while j < n and _word_char(s[j]):
                j += 1
            out.append(s[i:j])
            i = j
        elif ch in "<>!=" and i + 1 < n and s[i + 1] == "=":
            out.append(ch + "=")
            i += 2
        else:
            if ch in "<>":
                out.append(ch)
            i += 1
    return out


#: The tokens of an ASCII text_key: a number with its minus sign (``-5``, not the hyphen of ``gpt-4``
#: or ``1-5``), a word, a relation (``<= >= != ==``, ``<``, ``>``).
_ASCII_WORD = re.compile(r"(?<![A-Za-z0-9_.])-(?=[0-9])[A-Za-z0-9_]+|[A-Za-z0-9_]+|[<>!=]=|[<>]")


def text_key(s: str) -> str:
    """The key two statements are compared by: the words (runs of letters, digits, combining marks
    and ``_``) of :func:`fold`, joined by one space, with what changes a number or a relation kept
    as tokens of their own: a number's minus sign (``-5``; ``−`` is ``-``) and the relations ``<``,
    ``>``, ``<=``, ``>=``, ``!=``, ``==`` (``≤ ≥ ≠`` are ``<= >= !=``). Equal keys: the same
    statement (NFC, NFD, fullwidth forms and ligatures, invisible characters, case, other
    punctuation and spacing aside); a differing number, sign, relation or word (``not``) is another
    key. '' for a text with no word. Raises TypeError for a non-string."""
    if not isinstance(s, str):
        raise TypeError(f"text_key takes a string, got {type(s).__name__}")
    f = fold(s)
    return " ".join(_ASCII_WORD.findall(f) if f.isascii() else _words_non_ascii(f))


#: The words of a :func:`text_key` that negate (``n't`` is the word ``t`` of ``don t``).
_NEGATIONS = frozenset("not no never nor none neither nothing without cannot t".split())
_RELATION_TOKENS = frozenset(["<", ">", "<=", ">=", "!=", "=="])


def fixed_words(key: str) -> list[str]:
    """The words of the :func:`text_key` ``key`` a near-identical statement may not change, in
    order: the numbers (a word holding a digit, with its sign), the relations (``< > <= >= != ==``)
    and the negations (``not``, ``never``, ``no``, ``n't``, ``without``, ...). Two statements whose
    keys are alike but whose fixed words differ say different things ("port 5432" / "port 5433")."""
    return [w for w in key.split() if w in _NEGATIONS or w in _RELATION_TOKENS or any(ch.isdigit() for ch in w)]


def name_key(s: str) -> str:
    """The key two entity names are compared by: :func:`fold`, whitespace runs one space, stripped."""
    return " ".join(fold(s).split())


def search_fold(s: str) -> str:
    """:func:`fold` without Latin, Greek and Cyrillic diacritics (``café`` is ``cafe``; the vowel
    signs of Indic scripts are kept): the lexical index's terms and queries, for search only."""
    out = fold(s)
    if out.isascii():
        return out
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", out)))


def path_key(p: str) -> str:
    """The key two paths are compared by: invisible characters removed, NFC (macOS writes file names
    in NFD), ``\\`` read as ``/``, surrounding whitespace, ``.`` parts, repeated and trailing ``/``
    dropped, ``a/../b`` as ``b`` (a leading ``..`` stays). Absolute stays absolute. '' for an empty
    path (or one of ``.`` parts only). Raises TypeError for a non-string."""
    if not isinstance(p, str):
        raise TypeError(f"path_key takes a string, got {type(p).__name__}")
    s = nfc(strip_invisible(p)).replace("\\", "/").strip()
    if not s:
        return ""
    absolute = s.startswith("/")
    while True:  # until nothing changes: a trailing "/" dropped may leave whitespace to strip ("a \\")
        t = posixpath.normpath(s).lstrip("/").strip()
        if t == s:
            break
        s = t
    if s == ".":
        s = ""
    return "/" + s if absolute else s


def path_forms(p: str) -> list[str]:
    """The spellings a file named by the path ``p`` may have on disk: its :func:`path_key` (NFC),
    then the NFD form when it differs (macOS HFS+ writes NFD names; Linux keeps the bytes given)."""
    key = path_key(p)
    nfd = unicodedata.normalize("NFD", key)
    return [key] if nfd == key else [key, nfd]


def spellings(p: str) -> list[str]:
    """``p`` as given, then its NFC and NFD forms where they differ (the names a folder may have on
    disk), nothing else changed: [p] for an ASCII path."""
    out = [p]
    for form in ("NFC", "NFD"):
        other = unicodedata.normalize(form, p)
        if other not in out:
            out.append(other)
    return out


def same_path(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` have one :func:`path_key`."""
    return path_key(a) == path_key(b)


class Comparer(NamedTuple):
    """One place that compares texts or paths: ``where`` (``module:function``), what it compares,
    the key it takes from here, and the command surface that reaches it (tests/unit/core/test_normalizer.py
    drives each surface through the installed ``consolidate`` command)."""

    where: str
    compares: str
    key: str
    surface: str


#: Every place that compares texts or paths. A new one is added here (tests/unit/core/test_normalizer.py checks
#: that each function named calls this module and that no other module normalizes on its own).
COMPARERS: tuple[Comparer, ...] = (
    Comparer("consolidate.pipeline.stages.contradiction:same_memory",
             "a keeper with the same-run keepers and the existing memories (duplicate, re-confirmation)",
             "text_key, canonical", "run"),
    Comparer("consolidate.pipeline.stages.contradiction:swapped",
             "the words of two near-identical statements (a swap is no duplicate)", "fold", "run"),
    Comparer("consolidate.pipeline.stages.contradiction:differing_regions",
             "the parts where two statements differ", "fold", "run"),
    Comparer("consolidate.pipeline.stages.provenance:memory_id",
             "a memory's id from its scope, type and statement (a replay overwrites)", "text_key", "run"),
    Comparer("consolidate.pipeline.stages.contradiction:_with_same_ids",
             "a keeper with the stored memory of its text_key's id (found whatever the embeddings say)",
             "text_key", "run"),
    Comparer("consolidate.store.echo:digest",
             "a memory text shown to a session and a note repeating it (an echo confirms nothing)",
             "text_key", "echo"),
    Comparer("consolidate.store.forgotten:forgotten_match",
             "a keeper with the forgotten statements (a tombstone holds; a near-identical one only with the"
             " same numbers and negations)", "text_key, fixed_words", "forget"),
    Comparer("consolidate.store.index.lexical:terms",
             "the lexical terms of memories and queries", "canonical, search_fold", "recall"),
    Comparer("consolidate.store.index.lexical:parse_query",
             "a recall query's lexical terms", "canonical", "recall"),
    Comparer("consolidate.store.relations:match_key",
             "entity names (consolidate graph NAME, recall's entity match, self-relations)", "name_key", "graph"),
    Comparer("consolidate.store.relations:_kind_key",
             "a judge's relation kind with the vocabulary", "fold", "run"),
    Comparer("consolidate.store.graph:extract_entities",
             "the file names a memory names (NFC, invisible characters removed)", "nfc, strip_invisible",
             "file-recall"),
    Comparer("consolidate.store.anchors:find_anchors",
             "a memory's file entities with the project's files (the anchored path)", "path_key", "file-recall"),
    Comparer("consolidate.agents.file_recall:matches",
             "a tool call's file with the entities and anchored paths", "path_key", "file-recall"),
    Comparer("consolidate.agents.file_recall:relative",
             "a tool call's file (absolute, relative to a nested cwd) with the project root", "path_key",
             "file-recall"),
    Comparer("consolidate.agents.file_recall:lexical_ids",
             "a tool call's file with the lexical terms of the memories", "path_key, search_fold", "file-recall"),
    Comparer("consolidate.rules.faithful:specifics",
             "a judge's keep's specifics (paths, names, numbers) with the words of its notes (faithfulness)",
             "canonical, text_key", "run"),
    Comparer("consolidate.judges.rules:guess",
             "a note's wording with the rules judge's keeper patterns (never, because, the user wants)",
             "canonical", "run"),
    Comparer("consolidate.store.sessions.tier:check_content",
             "a note with nothing (whitespace and invisible characters only: empty)", "blank", "note"),
)
