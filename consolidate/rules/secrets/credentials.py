"""Credentials in URLs, HTTP headers and login lines: connection-string passwords, bearer tokens,
basic-auth headers, ``user:password`` pairs and ``user:password@host``."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Iterator

from consolidate.rules.secrets.findings import _Candidate, _P_CONNECTION, _P_HEADER
from consolidate.rules.secrets.values import _FILE_NAME, _NO_DIGITS, _SNAKE_IDENTIFIER, _VERSION_TAG, _char_classes, _is_placeholder, _is_word_like, _value_is_secret
from consolidate.rules.secrets.words import _URI_SCHEMES


# RFC 3986 §3.2.1 userinfo "user:password@" in any URL (postgres, mysql, mongodb+srv, redis,
# amqp, https...). detect-secrets' BasicAuthDetector needs a non-empty user and refuses passwords
# with sub-delimiters (!$&'()*+,;=), so it misses redis://:pass@host and p4ss!word: widened here.
# "?" and "#" should be percent-encoded in a password, but people paste them as they are
# (amqp://worker:Lim4#x@rabbit): the password then runs to the "@".
_CONN_RE = re.compile(
    r"://(?P<user>[^\s:/@?#\"'<>`]{0,128}):(?P<pw>[^\s/@\"'`]{1,256})@(?=[\w\[%-])"
)

# RFC 6750 §2.1 bearer credentials (b64token), RFC 7617 basic credentials.
_BEARER_RE = re.compile(r"\b[Bb]earer[ \t]+(?P<value>[A-Za-z0-9._~+/-]{8,4096}=*)")
_BASIC_RE = re.compile(
    r"(?i)authorization[\"']?\s*[:=]\s*[\"']?\s*basic[ \t]+(?P<value>[A-Za-z0-9+/]{8,2048}={0,2})"
)


def _connection_strings(text: str) -> Iterator[_Candidate]:
    """Passwords in URLs: ``postgres://user:pass@host``, ``redis://:pass@host``, ... The literal
    words password/pass/secret/changeme, vendor defaults (guest, postgres, root), ``xxx``,
    ``<...>``, ``${...}`` and ``$VAR`` are documentation placeholders (:func:`_is_placeholder`)."""
    if "://" not in text:
        return
    for m in _CONN_RE.finditer(text):
        pw = m.group("pw")
        if not _is_placeholder(pw) and not _is_placeholder(pw.strip("[]{}<>")):
            yield _Candidate(_P_CONNECTION, "connection-string-password", *m.span("pw"))


def _auth_headers(text: str, low: str) -> Iterator[_Candidate]:
    """``Bearer <token>`` (RFC 6750) with a high-entropy token, and ``Authorization: Basic``
    (RFC 7617) whose base64 decodes to ``user:password`` with a real password."""
    for m in _BEARER_RE.finditer(text) if "bearer" in low else ():
        value = m.group("value")
        if _value_is_secret(value, password_named=False) and len(value) >= 16:
            yield _Candidate(_P_HEADER, "bearer-token", *m.span("value"))
    if "authorization" in low:
        for m in _BASIC_RE.finditer(text):
            try:
                decoded = base64.b64decode(m.group("value"), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            _, sep, password = decoded.partition(":")
            if sep and password and not _is_placeholder(password):
                yield _Candidate(_P_HEADER, "basic-auth-header", *m.span("value"))


# user:password and "user / password" in a sentence about logging in: "Use admin:Gr4fanaRocks2026 to
# log into grafana", "the staging basic auth is ops:Blu3Whale!", "the login for grafana is admin /
# Gr4fanaRocks2026" (RFC 7617's user-pass form, written in prose). Only on a line that says it is
# about logging in (_LOGIN_CONTEXT), and only a password-shaped second half (letters and a digit or
# symbol, not a version tag such as postgres:16-alpine, not a name such as handlers:login_view).
_LOGIN_CONTEXT = re.compile(
    r"(?i)\blog(?:ging)?[ -]?(?:in|on)(?:to)?\b|\blogins?\b|\bsign(?:ing)?[ -]?in(?:to)?\b|\bbasic[ -]?auth|"
    r"\bcredentials?\b|\bcreds\b|\bauth(?:enticate)?\b|\busername\b|\buser/pass|\bpassword\b"
    r"|\bdb\b|\bdatabase\b|\bdsn\b"  # "DB: postgres / Camelia_31": a database login
    r"|\bbenutzer(?:name)?\b|\bzugangsdaten\b|\busuario\b|\butilisateur\b|\butente\b"
)
_LOGIN_NEEDLES = ("log", "sign", "auth", "cred", "user", "password", "db", "database", "dsn", "benutzer", "zugangsdaten",
                  "usuario", "utilisateur", "utente")  # one per match

# "user:password", "user / password", and "user/password" with no spaces (a slash pair only when
# the second half is password-shaped and not a path, branch or file: src/Main2.java, feature/login-2fa)
_CRED_PAIR_RE = re.compile(
    r"(?<![\w/:@.$%{-])(?P<user>[A-Za-z][A-Za-z0-9._@-]{0,63})(?P<sep>:|[ \t]+/[ \t]+|/)"
    r"(?P<pw>[^\s\"'`,;/<>()\[\]{}]{4,256}+)(?![/\\])"
)

# user:password@host with no scheme: "root:Kastanie42@db.internal" (RFC 3986 userinfo before a host)
_USERINFO_RE = re.compile(
    r"(?<![\w/:@.$%{-])(?P<user>[A-Za-z_][A-Za-z0-9._-]{0,63}):(?P<pw>[^\s:@/\"'`<>]{1,256})"
    r"@(?P<host>localhost\b|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|\[[0-9A-Fa-f:.]+\])"
)

# a credentials line that names the user and then gives a bare value: "credentials: user=app, S0nne2020"
_USER_THEN_VALUE_RE = re.compile(
    r"(?i)\b(?:(?:user(?:name)?|benutzer(?:name)?|usuario|utilisateur|utente)[ \t]*[=:]|login[ \t]*=)[ \t]*[^\s,;]{1,64}"
    r"[ \t]*[,;][ \t]*(?P<pw>[^\s\"'`,;<>()\[\]{}=:]{6,256})"
)


def _credential_pairs(text: str, low: str, present: set[str]) -> Iterator[_Candidate]:
    """The password of a ``user:password`` or ``user / password`` pair on a line about logging in
    (see :data:`_CRED_PAIR_RE`)."""
    if ":" not in text and "/" not in text and "=" not in text:
        return
    if present.isdisjoint(_LOGIN_NEEDLES):
        return
    for line_match in re.finditer(r"[^\n]+", text):
        line = line_match.group()
        if (":" not in line and "/" not in line and "=" not in line) or not _LOGIN_CONTEXT.search(line):
            continue
        offset = line_match.start()
        for m in _CRED_PAIR_RE.finditer(line):
            user, pw = m.group("user"), m.group("pw")
            end = m.end("pw")
            while pw and pw[-1] in ".,:;?":  # sentence punctuation; "!" may belong to a password
                pw, end = pw[:-1], end - 1
            if user.lower() in _URI_SCHEMES or line.startswith("//", m.start("pw")):
                continue
            if _VERSION_TAG.match(pw) or _is_word_like(pw) or _is_placeholder(pw):
                continue
            if not (any(ch.isalpha() for ch in pw) and any(not ch.isalpha() for ch in pw)):
                continue
            if m.group("sep") == "/" and (not _standalone(line, m.start(), m.end("pw"))
                                          or user.isupper() and len(user) > 1):
                continue  # inside a longer run (base64, a URL path), or an acronym pair (JWT/OAuth2, TCP/IP4)
            at = pw.find("@")
            if at >= 4 and _USERINFO_HOST.fullmatch(pw, at + 1):  # root:Kastanie42@db.internal
                pw, end = pw[:at], m.start("pw") + at
            if m.group("sep") == "/" and (_FILE_NAME.fullmatch(pw) or _SNAKE_IDENTIFIER.match(pw)
                                          or not _slash_password_shaped(pw)):
                continue  # src/Main2.java, feature/login-2fa, oauth/callback2: paths and branches
            if _value_is_secret(pw, password_named=True):
                yield _Candidate(_P_CONNECTION, "credential-pair", offset + m.start("pw"), offset + end)
        for m in _USER_THEN_VALUE_RE.finditer(line):
            pw = m.group("pw").rstrip(".!?")
            if _VERSION_TAG.match(pw) or _FILE_NAME.fullmatch(pw) or _is_word_like(pw):
                continue
            if _value_is_secret(pw, password_named=True):
                yield _Candidate(_P_CONNECTION, "credential-pair", offset + m.start("pw"),
                                 offset + m.start("pw") + len(pw))


def _standalone(line: str, start: int, end: int) -> bool:
    """Whether ``line[start:end]`` is a token of its own: white space, a quote or an opening bracket (or
    the line's start) before it, and white space, punctuation or the line's end after it."""
    before = line[start - 1] if start else " "
    after = line[end] if end < len(line) else " "
    return (before.isspace() or before in "\"'`([") and (after.isspace() or after in ".,;:!?)]\"'`")


_USERINFO_HOST = re.compile(r"localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def _slash_password_shaped(pw: str) -> bool:
    """The second half of ``user/password`` written with no spaces is read as a password only with
    letters and digits of both cases, or letters, digits and a symbol (``Tulipan!2024``): a path
    segment or branch (``callback2``, ``v2``, ``Readme``) is rarely so."""
    has_symbol = any(not ch.isalnum() for ch in pw)
    has_alpha = any(ch.isalpha() for ch in pw)
    has_digit = any(ch.isdigit() for ch in pw)
    if pw.isalnum() and not re.fullmatch(r"[A-Za-z]+\d+", pw) and _is_word_like(pw.translate(_NO_DIGITS)):
        return False  # V3Migration, OAuth2Client: a digit inside a name, not a word and a number
    if pw.isalnum() and re.fullmatch(r"[A-Za-z][a-z]*[A-Z][A-Za-z]*\d{1,2}", pw):
        return False  # OAuth2, IPv6, WebAuthn2: a protocol or version name
    return _char_classes(pw) >= 3 or (has_symbol and has_alpha and has_digit)


def _userinfo_pairs(text: str) -> Iterator[_Candidate]:
    """``user:password@host`` without a scheme (:data:`_USERINFO_RE`): the password, when
    password-shaped (:func:`_value_is_secret`), not a version (``node:18@sha256``) nor a URI scheme's
    address (``mailto:ops@example.com``)."""
    if "@" not in text or ":" not in text:
        return
    for m in _USERINFO_RE.finditer(text):
        pw = m.group("pw")
        if m.group("user").lower() in _URI_SCHEMES or _VERSION_TAG.match(pw) or _is_placeholder(pw):
            continue
        if _value_is_secret(pw, password_named=True):
            yield _Candidate(_P_CONNECTION, "connection-string-password", *m.span("pw"))
