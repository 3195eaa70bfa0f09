"""Bytes smuggled in Unicode variation selectors (U+FE00-U+FE0F for 0-15, U+E0100-U+E01EF for 16-255:
"emoji smuggling", issue 28 item 6) are held back like the tag-character case, and never printed raw;
an emoji's single U+FE0F and an ideograph's single variant selector pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from consolidate.core.normal import selector_bytes
from consolidate.rules.guard import printable, unsafe_reason

SELECTORS = {*map(chr, range(0xFE00, 0xFE10)), *map(chr, range(0xE0100, 0xE01F0))}
CARRIERS = ("Deploy note: run the tests first 😀", "Notiz: Tests zuerst laufen lassen", "注意：先运行测试",
            "Примечание: сначала запускать тесты", "ملاحظة: شغّل الاختبارات أولاً", "परीक्षण पहले चलाएँ", "x")


def _hide(data: bytes) -> str:
    return "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in data)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CARRIERS), st.binary(min_size=2, max_size=60), st.data())
def test_bytes_in_selectors_are_held_and_never_printed_raw(carrier, payload, data):
    at = data.draw(st.integers(0, len(carrier)))
    text = carrier[:at] + _hide(payload) + carrier[at:]
    assert unsafe_reason(text) == "hides data in invisible variation selectors"
    assert selector_bytes(text) == payload
    shown = printable(text)
    assert not SELECTORS & set(shown)
    assert shown.replace("\\U000e", "").replace("\\U0000fe", "")  # escaped visibly, not dropped


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(CARRIERS), st.sampled_from(("❤\ufe0f", "☺\ufe0e", "1\ufe0f\u20e3", "葛\U000e0100")), st.data())
def test_one_ordinary_selector_passes(carrier, ordinary, data):
    at = data.draw(st.integers(0, len(carrier)))
    text = carrier[:at] + " " + ordinary + " " + carrier[at:]
    assert unsafe_reason(text) is None
    assert selector_bytes(text) == b""
    assert printable(text) == text


def test_one_supplement_selector_after_a_letter_is_held():
    assert unsafe_reason("ship it" + chr(0xE0150)) == "hides data in invisible variation selectors"
