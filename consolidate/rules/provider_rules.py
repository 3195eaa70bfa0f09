"""Provider secret formats from gitleaks' maintained rule set, loaded as pinned data.

``consolidate/rules/data/gitleaks.toml`` is gitleaks' default configuration (``config/gitleaks.toml``),
copied unchanged from upstream commit :data:`UPSTREAM_COMMIT` (MIT licence: the notice is kept in
``consolidate/rules/data/LICENSE-gitleaks``). It holds one rule per provider format (about 200: Adafruit
to Zendesk), each with a Go (RE2) regex, the lower-case ``keywords`` one of which every match
contains, an optional Shannon ``entropy`` floor, a ``secretGroup`` and per-rule allowlists; and a
global allowlist. Updating is a copy of a newer upstream file and a new :data:`UPSTREAM_COMMIT`.

How the rules are run (:func:`find`), as gitleaks runs them (``detect/detect.go``):

* a rule runs only on a text that holds one of its keywords (lower-cased): that keeps it fast;
* the secret is the ``secretGroup``, else the first non-empty unnamed capture group, else the match
  (jwt-base64's named groups label the JOSE header field and are not the secret);
* a secret whose Shannon entropy is not above the rule's ``entropy`` is dropped; for ``generic-*``
  rules also one without a digit;
* the global allowlist and the rule's allowlists (``regexes`` on the secret, the match or the
  line as ``regexTarget`` says, ``stopwords`` contained in the lower-cased secret, ``condition``
  OR/AND) drop the rest. ``paths`` and ``commits`` never match: a note is neither a file nor a commit.

What is not used, and why (counted in :func:`stats`, never silent):

* rules that only apply to files of a given name (``path``: ``*.tf`` passwords, ``nuget.config``,
  Kubernetes ``*.yaml`` secrets, PHP Freemius keys, PKCS#12 files): a note is not a file;
* :data:`EXCLUDED` rules, which the gate's own contextual rules replace (see there);
* rules whose regex does not compile after translation (none in the pinned file; a newer file
  may bring some: they are listed by :func:`stats` and by ``benchmarks/secrets_bench.py``).

Go's regex syntax differs from Python's ``re`` in a few places; :func:`translate` rewrites them
mechanically at load: a flag group ``(?i)`` in the middle of a pattern (Go scopes it to the rest
of the enclosing group; Python only takes global flags at the start) becomes a scoped ``(?i:...)``
up to the end of that group; ``\\z`` becomes ``\\Z``; POSIX classes ``[:alpha:]`` become ranges.
Patterns are compiled with ``re.ASCII``: Go's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII-only.
A leading lazy ``[\\w.-]{0,50}?`` (the variable-name prefix of the keyword-assignment rules) is
dropped unless a ``match``-target allowlist reads it: it can match the empty string, so it never
decides whether a secret is found, and without it Python's backtracking engine does not retry up
to 50 characters at every position of the text.

Loading is lazy and once per process: the TOML is parsed and translated on the first :func:`find`
(under 0.1 s); each rule's regex is compiled the first time one of its keywords occurs in a scanned
text (compiling all 200 would cost about 0.2 s). :func:`stats` compiles them all, to report those
Python's ``re`` refuses.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Pattern

__all__ = ["UPSTREAM_COMMIT", "RULES_FILE", "EXCLUDED", "VendorFinding", "find", "stats", "translate"]

#: The gitleaks commit ``consolidate/rules/data/gitleaks.toml`` was copied from (github.com/gitleaks/gitleaks).
UPSTREAM_COMMIT = "420a0f55f4a7a03dfe701ceb1f4f66a7c68b26b4"
RULES_FILE = Path(__file__).resolve().parent / "data" / "gitleaks.toml"

#: Rules left to the gate's own contextual rules, with the reason.
EXCLUDED = {
    # Any variable named *key*, *token*, *auth*, *access*, *secret*, *password* given a 10+ character
    # value: the gate's secret-assignment rule covers the same ground with its placeholder, reference,
    # path and identifier filters, and the prose rules in ~20 languages (consolidate/rules/secrets/).
    "generic-api-key": "covered by the gate's secret-assignment rule and its placeholder filters",
    # Curl commands: the gate's bearer-token, basic-auth-header and cli-password rules read the same
    # headers and -u user:password pairs; gitleaks' patterns nest lazy .*? loops that Python's
    # backtracking engine can take seconds on in a long note.
    "curl-auth-header": "covered by the gate's bearer-token/basic-auth-header rules",
    "curl-auth-user": "covered by the gate's cli-password rule",
}


@dataclass(frozen=True)
class VendorFinding:
    """One secret found by a gitleaks rule: ``rule`` is its id, ``start``/``end`` the secret's span."""

    rule: str
    start: int
    end: int


@dataclass
class _Allowlist:
    condition: str  # "OR" | "AND"
    target: str  # "secret" | "match" | "line"
    regex: Pattern[str] | None  # the allowlist's regexes as one alternation
    stopwords: tuple[str, ...]
    has_paths: bool  # paths/commits: never match a note

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regex is not None:
            checks.append(self.regex.search(subject) is not None)
        if self.stopwords:
            low = secret.lower()
            checks.append(any(w in low for w in self.stopwords))
        if self.has_paths:
            checks.append(False)
        if not checks:
            return False
        return all(checks) if self.condition == "AND" else any(checks)


@dataclass
class _Rule:
    id: str
    source: str  # the translated pattern
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[_Allowlist, ...]
    _regex: Pattern[str] | None = field(default=None, repr=False)
    error: str | None = None  # set when the translated pattern does not compile

    @property
    def regex(self) -> Pattern[str] | None:
        """The compiled pattern, compiled on first use; None (and :attr:`error` set) when Python's re
        refuses it."""
        if self._regex is None and self.error is None:
            try:
                self._regex = re.compile(self.source, re.ASCII)
            except re.error as exc:
                self.error = f"does not compile in Python re: {exc}"
        return self._regex


@dataclass
class _RuleSet:
    rules: tuple[_Rule, ...]
    by_keyword: dict[str, tuple[_Rule, ...]]
    keywords: tuple[str, ...]
    global_allowlist: _Allowlist
    skipped: dict[str, str]  # rule id -> why it is not used
    total: int


# --------------------------------------------------------------------------------------------
# Go (RE2) syntax to Python re
# --------------------------------------------------------------------------------------------

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_INLINE_FLAGS = re.compile(r"\(\?([imsU-]+)\)")
_LAZY_NAME_PREFIX = r"[\w.-]{0,50}?"


def translate(pattern: str, keep_prefix: bool = False) -> str:
    """A Go RE2 pattern as a Python ``re`` pattern with the same matches (see module docs).

    Raises ``ValueError`` for a construct it cannot translate (Unicode classes ``\\p{...}``, the
    ``U`` flag)."""
    if "\\p{" in pattern or "\\P{" in pattern:
        raise ValueError("Unicode classes \\p{...} have no Python re equivalent")
    for name, chars in _POSIX.items():
        pattern = pattern.replace(f"[:{name}:]", chars).replace(f"[:^{name}:]", "")  # [:^x:] rare
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group (the pattern itself first): flags opened inside it
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            out.append("\\Z" if nxt == "z" and not in_class else ch + nxt)
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            j = i + 2 if pattern.startswith("[^", i) else i + 1
            out.append(pattern[i:j])
            if j < n and pattern[j] == "]":  # a leading ] is a literal
                out.append("\\]")
                j += 1
            i = j
            continue
        if ch == "(":
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags is not None:
                if "U" in flags.group(1):
                    raise ValueError("the ungreedy flag U has no Python re equivalent")
                if i == 0:
                    out.append(flags.group())
                else:
                    out.append(f"(?{flags.group(1)}:")
                    scoped[-1].append(flags.group(1))
                i = flags.end()
                continue
            scoped.append([])
            out.append(ch)
            i += 1
            continue
        if ch == ")":
            out.append(")" * len(scoped.pop() if len(scoped) > 1 else ()))
            out.append(ch)
            i += 1
            continue
        if ch == "|" and scoped[-1]:
            # Go keeps a flag set by (?i) to the end of its group, across "|": close the scoped
            # groups before the bar and open them again after it
            out.append(")" * len(scoped[-1]) + "|" + "".join(f"(?{f}:" for f in scoped[-1]))
            i += 1
            continue
        out.append(ch)
        i += 1
    out.append(")" * len(scoped[0]))
    result = "".join(out)
    if not keep_prefix:
        result = _drop_lazy_prefix(result)
    return result


def _drop_lazy_prefix(p: str) -> str:
    """Drop leading lazy ``[\\w.-]{0,50}?`` prefixes (also right after a leading ``(?i)`` or inside a
    leading ``(?i:`` group): each can match the empty string, so no secret depends on them."""
    head = ""
    if p.startswith("(?i)"):
        head, p = "(?i)", p[4:]
    while p.startswith(_LAZY_NAME_PREFIX):
        p = p[len(_LAZY_NAME_PREFIX):]
    if p.startswith("(?i:" + _LAZY_NAME_PREFIX):
        p = "(?i:" + p[4 + len(_LAZY_NAME_PREFIX):]
    return head + p


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _one_of(patterns) -> Pattern[str] | None:
    """Go patterns as one Python alternation (one search instead of one per pattern); a leading global
    flag group of a member becomes a scoped one."""
    parts = []
    for p in patterns:
        p = translate(p, keep_prefix=True)
        flags = _INLINE_FLAGS.match(p)
        parts.append(f"(?{flags.group(1)}:{p[flags.end():]})" if flags else f"(?:{p})")
    return re.compile("|".join(parts), re.ASCII) if parts else None


def _allowlist(spec: dict) -> _Allowlist:
    return _Allowlist(
        condition=str(spec.get("condition", "OR")).upper(),
        target=spec.get("regexTarget", "secret"),
        regex=_one_of(spec.get("regexes", ())),
        stopwords=tuple(w.lower() for w in spec.get("stopwords", ())),
        has_paths=bool(spec.get("paths") or spec.get("commits")),
    )


@functools.cache
def _load(path: Path = RULES_FILE) -> _RuleSet:
    with open(path, "rb") as f:
        config = tomllib.load(f)
    glob = config.get("allowlist", {})
    rules: list[_Rule] = []
    skipped: dict[str, str] = {}
    for spec in config.get("rules", ()):
        rid = spec["id"]
        if rid in EXCLUDED:
            skipped[rid] = "excluded: " + EXCLUDED[rid]
            continue
        if "regex" not in spec:
            skipped[rid] = "file-name rule only (path), no content regex"
            continue
        if spec.get("path"):
            skipped[rid] = "applies to files named like " + spec["path"] + " only"
            continue
        allowlists = []
        if "allowlist" in spec:  # the older single-table form
            allowlists.append(spec["allowlist"])
        allowlists.extend(spec.get("allowlists", ()))
        keep_prefix = any(a.get("regexTarget") == "match" for a in allowlists)
        try:  # translated now; compiled on the first note that holds a keyword (stats() compiles all)
            source = translate(spec["regex"], keep_prefix=keep_prefix)
            lists = tuple(_allowlist(a) for a in allowlists)
        except (ValueError, re.error) as exc:
            skipped[rid] = f"does not compile in Python re: {exc}"
            continue
        keywords = tuple(sorted({k.lower() for k in spec.get("keywords", ())}))
        if not keywords:
            skipped[rid] = "no keywords: would run on every note"
            continue
        rules.append(_Rule(rid, source, keywords, float(spec.get("entropy", 0.0)), int(spec.get("secretGroup", 0)),
                           lists))
    by_keyword: dict[str, list[_Rule]] = {}
    for rule in rules:
        for kw in rule.keywords:
            by_keyword.setdefault(kw, []).append(rule)
    global_allowlist = _allowlist(glob)
    return _RuleSet(
        rules=tuple(rules),
        by_keyword={k: tuple(v) for k, v in by_keyword.items()},
        keywords=tuple(sorted(by_keyword, key=len, reverse=True)),
        global_allowlist=global_allowlist,
        skipped=skipped,
        total=len(config.get("rules", ())),
    )


def stats() -> dict:
    """``{"upstream_commit", "total", "used", "skipped": {rule id: reason}, "not_compiled": [ids]}``:
    what of the pinned rule file the gate runs and what it leaves out, with the reasons."""
    rs = _load()
    skipped = dict(rs.skipped)
    for rule in rs.rules:  # compiles every rule: only for reports (the benchmark, the tests)
        if rule.regex is None:
            skipped[rule.id] = rule.error or ""
    return {
        "upstream_commit": UPSTREAM_COMMIT,
        "total": rs.total,
        "used": rs.total - len(skipped),
        "skipped": skipped,
        "not_compiled": sorted(k for k, v in skipped.items() if v.startswith("does not compile")),
    }


def keywords() -> tuple[str, ...]:
    """Every keyword of the rules in use (lower case)."""
    return _load().keywords


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _secret_span(rule: _Rule, m: re.Match[str]) -> tuple[int, int]:
    if rule.secret_group:
        return m.span(rule.secret_group)
    named = set(m.re.groupindex.values())
    for g in range(1, (m.re.groups or 0) + 1):
        if g not in named and m.group(g):
            return m.span(g)
    return m.span()


def find(text: str, low: str | None = None, present: set[str] | None = None) -> Iterator[VendorFinding]:
    """The secrets gitleaks' rules find in ``text`` (``low``: ``text`` lower-cased, same length).

    Only rules one of whose keywords occurs in ``low`` run (``present``: the keywords of
    :func:`keywords` that occur, when the caller has looked for them already, e.g. with one
    Aho-Corasick pass as consolidate/rules/secrets/providers.py does); each rule is compiled on its first run."""
    rs = _load()
    if low is None:
        low = text.lower()
    if present is None:
        present = {kw for kw in rs.keywords if kw in low}
    seen: set[str] = set()
    for kw in present:
        for rule in rs.by_keyword.get(kw, ()):
            if rule.id not in seen:
                seen.add(rule.id)
                yield from _run(rule, text, rs.global_allowlist)


def _run(rule: _Rule, text: str, global_allowlist: _Allowlist) -> Iterator[VendorFinding]:
    regex = rule.regex
    if regex is None:  # does not compile: left out, and named by stats()
        return
    for m in regex.finditer(text):
        start, end = _secret_span(rule, m)
        if end <= start:
            continue
        secret = text[start:end]
        if rule.entropy:
            if _entropy(secret) <= rule.entropy:
                continue
            if rule.id.startswith("generic") and not any(c.isdigit() for c in secret):
                continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start : line_end if line_end != -1 else len(text)]
        match = m.group()
        if global_allowlist.allows(secret, match, line):
            continue
        if any(a.allows(secret, match, line) for a in rule.allowlists):
            continue
        yield VendorFinding(rule.id, start, end)
