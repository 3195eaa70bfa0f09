"""What kinds of characters a token holds, for the write-time prefilter that decides whether a note
is worth loading the secret gate for (consolidate/store/sessions/tier.py). Only the standard library: the
prefilter runs on every note write."""

from __future__ import annotations

from typing import NamedTuple


class CharKinds(NamedTuple):
    """Which kinds of characters occur: letters (``alpha``, of them ``upper`` and ``lower`` case),
    ``digit`` (decimal digits) and ``other`` (anything that is not a letter: digits, symbols)."""

    alpha: bool
    upper: bool
    lower: bool
    digit: bool
    other: bool


def char_kinds(token: str) -> CharKinds:
    """The :class:`CharKinds` of ``token`` (Unicode categories: ``str.isalpha``, ``isupper``,
    ``islower``, ``isdigit``)."""
    alpha = upper = lower = digit = other = False
    for ch in token:
        if ch.isalpha():
            alpha = True
            if ch.isupper():
                upper = True
            elif ch.islower():
                lower = True
        else:
            other = True
            if ch.isdigit():
                digit = True
    return CharKinds(alpha, upper, lower, digit, other)
