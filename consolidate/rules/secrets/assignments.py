"""Secret-named variables given a value: ``API_KEY=...``, ``password: "..."``, ``--token ...``,
command-line passwords, cookies and ~/.netrc."""

from __future__ import annotations

import re
from typing import Iterator

from consolidate.rules.secrets.findings import _Candidate, _P_ASSIGNMENT
from consolidate.rules.secrets.passphrase import _passphrase_span
from consolidate.rules.secrets.values import _KEYWORD_FINDER, _PUBLIC_NAME, _bare_name_value_ok, _ends_clause, _name_is_metadata, _password_is_secret, _prose_password_ok, _value_is_secret


# Secret-named variables. Keywords adapted from detect-secrets' KeywordDetector.DENYLIST (which
# comes from bandit): api_key, auth_key, private_key, client_key, password, passwd, pwd, secret,
# plus token, passphrase, credential and common *_key names. The match starts at the keyword
# (not at the variable name) so that a long run of word characters cannot cause backtracking.
_PASSWORD_KEYWORD = re.compile(r"(?i)passw(?:or)?d|pwd|passphrase|contrase[ñn]a")
_ASSIGN_RE = re.compile(
    r"""(?ix)
    (?P<kw> api[-_ ]?key | secret | token | passw(?:or)?d | pwd | passphrase | credential
          | contrase[ñn]a
          | (?:private|access|auth|signing|encryption|master|client|session|app|account|service|secret)[-_ ]?key
          | (?-i:(?<=[A-Z0-9]_)KEY) )      # any upper-case env var ending in _KEY
    (?P<suffix>[A-Za-z0-9_.-]{0,40})
    (?P<close>["'`*\]]{0,3})
    (?: [ \t]*(?::=|=>|===?|=|:|>)[ \t]*         # >: <password>...</password>
      | [ \t]+(?-i:is|was)[ \t]+                 # prose: "the admin password is ..."
      | (?P<ws>[ \t]+) )                         # "password 'abc'", "with password abc"
    (?: (?P<q>["'`]) (?P<qval>[^"'`\r\n]{1,1024}) (?P=q)
      | (?P<uval>[^\s"'`,;<]{1,1024}) )
    """
)
_KEY_PREFIX = re.compile(
    r"(?:api|private|access|auth|signing|encryption|master|client|session|app|account|service|secret)[-_ ]?$"
)

# --flag forms on command lines: --password hunter22, --api-key=..., --token ... (starts with the
# literal "-" so the regex engine can skip ahead; the word boundary is checked in code)
_FLAG_RE = re.compile(
    r"(?i)--?(?P<kw>(?:[a-z]+-){0,4}(?:api-?key|secret|token|password|passwd|pass|pwd|passphrase))"
    r"(?:=|[ \t]+)(?P<q>[\"']?)(?P<value>[^\s\"'`,;]{1,1024})(?P=q)"
)

# curl -u user:password, --user user:password (RFC 7617 credentials on a command line)
_CLI_USER_RE = re.compile(r"-(?:u|-user)(?:=|[ \t]+)[\"']?[^\s:\"'$]{1,128}:(?P<pw>[^\s\"']{1,256})")

# mysql -u root -pS3cret, docker login -u ci -p TOKEN: a short -p after a -u user
# (mysql reads "-p VALUE" as a prompt for the password and VALUE as the database: with a space,
# only after "login", as in docker/podman/helm registry login)
_CLI_USER_P_RE = re.compile(
    r"(?<![\w-])-u(?:=|[ \t]*)[^\s\"'`-][^\s\"'`]{0,127}[ \t]+-p(?P<sp>=|[ \t]+)?[\"']?"
    r"(?P<pw>[^\s\"'`-][^\s\"'`]{0,255})"
)

# password flags of particular tools: sshpass -p PASSWORD, redis-cli -a PASSWORD
_TOOL_PASSWORD_RE = re.compile(
    r"\b(?:sshpass[ \t]+-p|redis-cli\b[^\n]{0,256}?[ \t]-a)(?:=|[ \t]*)[\"']?(?P<pw>[^\s\"'`-][^\s\"'`]{0,255})"
)

# Cookie: name=value; ... (RFC 6265) where the cookie's name says it holds a session or a token
_COOKIE_RE = re.compile(r"(?i)\b(?:set-)?cookie[\"']?[ \t]*:[ \t]*(?P<pairs>[^\r\n\"'`]{1,4096})")
_COOKIE_PAIR_RE = re.compile(r"(?P<name>[A-Za-z0-9_.-]{1,64})=(?P<value>[^;\s,]{1,2048})")
_COOKIE_SECRET_NAME = re.compile(r"(?i)sess|sid|auth|token|jwt|remember|login")

# ~/.netrc (and _netrc): "machine HOST login USER password SECRET", on one line or several
_NETRC_RE = re.compile(
    r"\bmachine\s+\S+(?:\s+(?:login|account)\s+\S+)*\s+password\s+(?P<pw>\S{1,256})"
)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_IDENTIFIER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+$|^[a-z]+(?:[A-Z][a-z0-9]+)+$")
SPACED_VALUE_MIN_CHARS = 20  # a value after a variable name and a space: token-length only


def _spaced_identifier_value(text: str, name: str, vstart: int, vend: int) -> tuple[int, int] | None:
    """The span of the value in ``NAME VALUE`` (no ``=`` or ``:``, as in ``~/.aws/credentials`` pasted
    without its ``=``, or ``env`` output): ``name`` must be a variable name (snake, kebab, dotted or
    camelCase, :data:`_IDENTIFIER_NAME`) and the value token-like: :data:`SPACED_VALUE_MIN_CHARS`+
    characters that :func:`_value_is_secret` accepts (two character classes, entropy >= ENTROPY_MIN),
    ending its clause. Prose after such a name ("the session_token expires after...") is letters
    and is word-like, so it is never a value."""
    value = text[vstart:vend].rstrip(".,:)]}>")
    vend = vstart + len(value)
    if not _IDENTIFIER_NAME.match(name.strip("\"'`*[]")) or len(value) < SPACED_VALUE_MIN_CHARS:
        return None
    if not _ends_clause(text, vend) and not text.startswith(" ", vend):
        return None
    return (vstart, vend) if _value_is_secret(value, password_named=False) else None


def _assignments(text: str, low: str) -> Iterator[_Candidate]:
    """``API_KEY=...``, ``password: "..."``, ``"client_secret": "..."``, ``export TOKEN=...``,
    ``--password ...``: a secret-named variable (keywords after detect-secrets'
    KeywordDetector) given a value that :func:`_value_is_secret` accepts."""
    yield from _variable_values(text, low)
    yield from _command_line_values(text, low)


def _variable_values(text: str, low: str) -> Iterator[_Candidate]:
    """The values of secret-named variables and words (:data:`_ASSIGN_RE`, found by
    :func:`_assignment_matches`): ``API_KEY=...``, ``password: "..."``, ``the password is X``."""
    for m in _assignment_matches(text, low):
        start = m.start("kw")
        lo = start
        while lo > 0 and start - lo < 64 and text[lo - 1] in _NAME_CHARS:
            lo -= 1
        name = text[lo : m.end("suffix")]
        if _name_is_metadata(name) or _PUBLIC_NAME.search(name):
            continue
        group = "qval" if m.group("qval") is not None else "uval"
        password_named = bool(_PASSWORD_KEYWORD.match(m.group("kw")))
        if group == "uval" and m.group("ws") is not None and (m.group("suffix") or not password_named):
            # "token bucket", "secret santa": only "password VALUE" needs no separator; but a variable
            # name (snake_case or camelCase) followed by a space and a long high-entropy value is the
            # variable and its value ("aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLm3Tr9")
            span = _spaced_identifier_value(text, name, *m.span(group))
            if span is not None:
                yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
            continue
        vstart, vend = m.span(group)
        value = text[vstart:vend]
        if group == "uval":  # unquoted values end before sentence punctuation and closers
            stripped = value.rstrip(".:)]}>")
            vend -= len(value) - len(stripped)
            value = stripped
        if group == "uval" and m.group("ws") is not None and not _prose_password_ok(value):
            continue  # "**Password Hashing**", "password reset", "password manager"
        if password_named and m.group("ws") is None:
            # an explicit assignment: "password = letmein", "password: X", "the password is X"
            sep = text[m.end("close") : m.start(group)]
            prose = group == "uval" and "=" not in sep
            # "<password>VALUE</password>" is XML; "<password> goes in .env" is a placeholder
            clause_end = text.startswith("<", vend) if ">" in sep else _ends_clause(text, vend)
            ok = _password_is_secret(value, prose, clause_end)
            if not ok and group == "qval" and " " in value:  # "password": "correct horse battery staple"
                phrase = _passphrase_span(text, vstart - 1, explicit=True)
                if phrase:
                    yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
                    continue
        else:
            ok = _value_is_secret(value, password_named)
            if not ok and (m.group("ws") is None or group == "qval") and lo == start and not m.group("suffix"):
                # the bare name ("secret = sunflower", "token: sunflower42", "api key = ...", 'token "..."'):
                # the value is the secret itself, judged like a short password; a quoted one of several
                # words like a passphrase
                sep = text[m.end("close") : m.start(group)]
                if group == "qval" and " " in value:
                    phrase = _passphrase_span(text, vstart - 1, explicit=True)
                    if phrase:
                        yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
                    continue
                ok = _bare_name_value_ok(value, explicit=group == "qval" or "=" in sep,
                                         clause_end=_ends_clause(text, vend))
        if ok:
            yield _Candidate(_P_ASSIGNMENT, "secret-assignment", vstart, vend)


def _command_line_values(text: str, low: str) -> Iterator[_Candidate]:
    """Passwords and tokens on command lines and in files that carry them: ``curl -u user:password``,
    ``mysql -u root -pPASS``, ``sshpass -p``, ``redis-cli -a``, ``Cookie:`` headers, ~/.netrc, and
    ``--password``/``--token`` flags."""
    for m in _CLI_USER_RE.finditer(text) if "-u" in low else ():
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
            continue
        if _value_is_secret(m.group("pw"), password_named=True):
            yield _Candidate(_P_ASSIGNMENT, "cli-password", *m.span("pw"))
    for m in _CLI_USER_P_RE.finditer(text) if "-u" in low else ():
        if m.group("sp") and m.group("sp") != "=":
            line_start = text.rfind("\n", 0, m.start()) + 1
            if "login" not in low[line_start : m.start()]:
                continue
        if _value_is_secret(m.group("pw"), password_named=True):
            yield _Candidate(_P_ASSIGNMENT, "cli-password", *m.span("pw"))
    for m in _TOOL_PASSWORD_RE.finditer(text) if "sshpass" in low or "redis-cli" in low else ():
        if _value_is_secret(m.group("pw"), password_named=True):
            yield _Candidate(_P_ASSIGNMENT, "cli-password", *m.span("pw"))
    for m in _COOKIE_RE.finditer(text) if "cookie" in low else ():
        for pair in _COOKIE_PAIR_RE.finditer(text, m.start("pairs"), m.end("pairs")):
            if _COOKIE_SECRET_NAME.search(pair.group("name")) and _value_is_secret(pair.group("value"), False):
                yield _Candidate(_P_ASSIGNMENT, "cookie", *pair.span("value"))
    for m in _NETRC_RE.finditer(text) if "machine" in low else ():
        if _value_is_secret(m.group("pw"), password_named=True):
            yield _Candidate(_P_ASSIGNMENT, "netrc-password", *m.span("pw"))
    for m in _FLAG_RE.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
            continue  # inside a word: not a command-line flag
        value = m.group("value")
        kw = m.group("kw").lower()
        password_named = bool(_PASSWORD_KEYWORD.search(kw)) or kw.endswith("pass")
        if password_named:  # --password letmein: explicit, like an assignment
            ok = _password_is_secret(value, prose=not m.group("q") and "=" not in m.group(),
                                     clause_end=_ends_clause(text, m.end("value")))
        else:
            ok = _value_is_secret(value, password_named)
        if ok:
            yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *m.span("value"))


def _assignment_matches(text: str, low: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_ASSIGN_RE` at every keyword, found fast: a case-insensitive
    alternation tried at every position costs ~0.17 s per MB, so keywords are first found in the
    lower-cased text with a plain alternation (~0.01 s per MB) and the full regex is only tried
    where one starts. Every keyword is tried, also inside the value of an earlier match, so that
    ``note: `export API_KEY=...` `` is not hidden by its rejected outer match."""
    for hit in _KEYWORD_FINDER.finditer(low):
        pos = hit.start()
        if hit.group() == "key":  # "key" is only a keyword after api/private/access/...
            prefix = _KEY_PREFIX.search(low, max(0, pos - 14), pos)
            if prefix is not None:
                pos = prefix.start()
            elif not (text.startswith("KEY", pos) and pos > 1 and text[pos - 1] == "_"):
                continue  # ... or at the end of an upper-case name: SERVICE_ROLE_KEY
        m = _ASSIGN_RE.match(text, pos)
        if m is not None:
            yield m
