"""The word tables of the secret gate: placeholders, type and status words, copulas, connectors and
the secret-named words of ~30 languages (see the package docs), read at import from the data file
``consolidate/rules/data/secret_words.toml``, where each table is documented.

A table written as a string is a set of words split on white space (:func:`_words`: a ``frozenset``
of ``str``); one written as an array keeps its entries, which may hold spaces, in order
(:func:`_entries`: a ``tuple`` of ``str``). A missing table raises ``KeyError`` at import."""

from __future__ import annotations

import tomllib
from pathlib import Path

WORDS_FILE = Path(__file__).resolve().parents[1] / "data" / "secret_words.toml"
_TABLES = tomllib.loads(WORDS_FILE.read_text(encoding="utf-8"))


def _words(name: str) -> frozenset[str]:
    """The table ``name`` (a string of words) as a set of its white-space separated words."""
    return frozenset(_TABLES[name].split())


def _entries(name: str) -> tuple[str, ...]:
    """The table ``name`` (an array) as a tuple of its entries, in the file's order."""
    return tuple(_TABLES[name])


_PLACEHOLDER_WORDS = _words("placeholder_words")
_PATH_ROOTS = _words("path_roots")
_METADATA_SUFFIXES = _words("metadata_suffixes")
_PASSWORD_PLACEHOLDER_WORDS = _words("password_placeholder_words")
_TYPE_WORDS = _words("type_words")
_PROSE_STATUS_WORDS = _words("prose_status_words")
_PASSPHRASE_STOP_WORDS = _words("passphrase_stop_words")
_CLAUSE_CONNECTORS = _words("clause_connectors")
_URI_SCHEMES = _words("uri_schemes")
_PROSE_PASSWORD_WORDS = _entries("prose_password_words")
_ZERO_COPULA_WORDS = frozenset(_entries("zero_copula_words"))
_PROSE_KEY_WORDS = _entries("prose_key_words")
_PROSE_COPULAS = _words("prose_copulas")
_FINAL_COPULAS = _words("final_copulas")
_PROSE_METADATA = _words("prose_metadata")
