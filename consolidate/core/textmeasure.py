"""Measuring note text in a way that holds for every script: words and English-equivalent length.

The write-policy rules ("too short to stand alone", "very short", the rules judge's "fragment") were
written as ``len(text.split())`` and ``len(text)``. Both are wrong outside spaced alphabetic scripts:
Chinese, Japanese, Thai, Lao, Khmer and Burmese are written without spaces between words, so a whole
Chinese sentence is one "word", and one Han character carries about as much as three or four
English letters, so a full Chinese sentence is "very short" in characters.

This module measures text by character class (Unicode general category and script ranges from the
standard library's ``unicodedata``), not by spaces:

* in spaced scripts (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Hangul, ...) a word is a
  maximal run of letters, digits and combining marks (an apostrophe or hyphen between two letters
  joins: ``don't``, ``read-only``); punctuation and symbols are not words;
* in scripts written without spaces, every base character (combining marks excluded) counts as
  ``1 / CHARS_PER_WORD[script]`` of a word: Han 1.6, Japanese kana 2.0, Thai/Lao/Khmer/Myanmar 4.0
  characters per word. These are rounded averages of word length in segmented running text
  (Chinese: about 1.5-1.7 characters per word in segmented corpora such as the PKU/MSR corpora of
  the SIGHAN 2005 bakeoff; Japanese: about 2 characters per word in segmented written text; Thai:
  about 4-5 base characters per word in the BEST/ORCHID corpora). They only have to put a sentence
  and a two-character reply on the right sides of thresholds of 3 to 5 words.

Why not a word segmentation library: UAX #29 word segmentation (PyPI ``uniseg``, 8 MB, measured here)
breaks Han and kana text into one segment per character and Thai into one segment per grapheme
cluster (the standard leaves those scripts to dictionaries), so it adds nothing over the character
classes above for these rules; dictionary segmenters (ICU through PyICU, jieba, pythainlp) need a C
library or a large dictionary per language, too heavy for the session-end path, which imports only
the standard library.

Lengths are reported in English-equivalent characters: a spaced-script character counts 1, a
character of a script without spaces counts ``ENGLISH_CHARS_PER_WORD / CHARS_PER_WORD[script]``
(English averages about 4.7 letters per word, 6 with the space and punctuation), so a threshold such
as "under 40 characters" means the same amount of text in every script. Korean is spaced (its words
are counted as runs), but a Hangul syllable block counts as ``HANGUL_SYLLABLE_CHARS`` characters.
"""

from __future__ import annotations

import unicodedata

from consolidate.core.normal import nfc

#: Average English characters per word, space and punctuation included (about 4.7 letters plus one).
ENGLISH_CHARS_PER_WORD = 6.0

#: English-equivalent characters of one Hangul syllable block (Korean is spaced, so words are counted
#: as runs; a block holds two or three jamo, about two Latin letters of romanised text).
HANGUL_SYLLABLE_CHARS = 2.0

#: Characters per word of the scripts written without spaces (see the module docstring for sources).
CHARS_PER_WORD = {"han": 1.6, "kana": 2.0, "southeast_asian": 4.0}

#: Code point ranges of the scripts written without spaces between words.
_UNSPACED_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0E00, 0x0E7F, "southeast_asian"),   # Thai
    (0x0E80, 0x0EFF, "southeast_asian"),   # Lao
    (0x0F00, 0x0FFF, "southeast_asian"),   # Tibetan (syllables are dot-separated, not spaced)
    (0x1000, 0x109F, "southeast_asian"),   # Myanmar
    (0x1780, 0x17FF, "southeast_asian"),   # Khmer
    (0x19E0, 0x19FF, "southeast_asian"),   # Khmer symbols
    (0x3040, 0x309F, "kana"),              # Hiragana
    (0x30A0, 0x30FF, "kana"),              # Katakana
    (0x31F0, 0x31FF, "kana"),              # Katakana phonetic extensions
    (0xFF66, 0xFF9F, "kana"),              # halfwidth Katakana
    (0x3400, 0x4DBF, "han"),               # CJK extension A
    (0x4E00, 0x9FFF, "han"),               # CJK unified ideographs
    (0xF900, 0xFAFF, "han"),               # CJK compatibility ideographs
    (0x20000, 0x3FFFF, "han"),             # CJK extensions B and later
    (0x3005, 0x3007, "han"),               # 々 〆 〇
)


#: Characters of a memory's statement, at most: a flagged note (kept as it is written) longer than
#: this is refused when it is written (consolidate.store.sessions.tier ``check_content``), and a judge's statement longer than
#: this is rejected by the write policy (consolidate.rules.memory_types.memorability_problem). About 1,500
#: words: above the longest memories the write policy keeps by design (a 9,175-character flagged
#: runbook and 2,000-character decisions, tests/unit/rules/test_text_policy.py); the 1,000,000 of a note is
#: scratch for a judge to condense, not a memory.
MAX_STATEMENT_CHARS = 10_000


def statement_length(text: str) -> int:
    """Characters of ``text`` as a memory's statement: stripped, in Unicode NFC (a letter with its
    accent counts once, however it was typed)."""
    return len(nfc(text.strip()))


def unspaced_script(ch: str) -> str | None:
    """The group (``han``, ``kana``, ``southeast_asian``) of a character of a script written without
    spaces between words, or None for any other character."""
    cp = ord(ch)
    if cp < 0x0E00:
        return None
    for lo, hi, group in _UNSPACED_RANGES:
        if lo <= cp <= hi:
            return group
    return None


def _is_word_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in "LNM"  # letters, numbers, combining marks


def measure(text: str) -> tuple[float, float]:
    """``(words, english_chars)`` of ``text``: the estimated number of words and the length in
    English-equivalent characters (module docstring). Whitespace runs count as one character;
    leading and trailing whitespace as none. Raises TypeError for a non-string."""
    if not isinstance(text, str):
        raise TypeError(f"measure takes a string, got {type(text).__name__}")
    words = 0.0
    length = 0.0
    in_word = False
    prev_space = True
    s = text.strip()
    n = len(s)
    for i, ch in enumerate(s):
        group = unspaced_script(ch)
        if group is not None:
            in_word = False
            prev_space = False
            if unicodedata.category(ch)[0] == "M":  # a Thai vowel or tone mark: part of the character
                continue
            words += 1.0 / CHARS_PER_WORD[group]
            length += ENGLISH_CHARS_PER_WORD / CHARS_PER_WORD[group]
            continue
        if ch.isspace():
            in_word = False
            if not prev_space:
                length += 1
            prev_space = True
            continue
        prev_space = False
        length += HANGUL_SYLLABLE_CHARS if 0xAC00 <= ord(ch) <= 0xD7AF else 1
        if _is_word_char(ch):
            if not in_word:
                words += 1
                in_word = True
        elif ch in "'’-_" and in_word and i + 1 < n and _is_word_char(s[i + 1]) and unspaced_script(s[i + 1]) is None:
            continue  # don't, read-only, snake_case: one word
        else:
            in_word = False
    return words, length


def word_count(text: str) -> float:
    """Estimated number of words of ``text`` in any script (see :func:`measure`)."""
    return measure(text)[0]


def english_length(text: str) -> float:
    """Length of ``text`` in English-equivalent characters (see :func:`measure`)."""
    return measure(text)[1]
