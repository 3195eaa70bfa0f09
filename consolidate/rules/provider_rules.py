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
* rules whose regex RE2 refuses (none in the pinned file; a newer file may bring some: they are
  listed by :func:`stats` and by ``benchmarks/secrets_bench.py``).

The patterns are Go regexes, and Go's ``regexp`` package is RE2: they are compiled as written with
google-re2 (the RE2 library's own Python binding), so every construct means what it means to gitleaks
(flag groups scoped to the rest of their group, ``\\z``, POSIX classes, ASCII ``\\w``/``\\d``/``\\s``/``\\b``,
Unicode classes) and no pattern can backtrack: RE2 matches in time linear in the text, also for the
lazy ``[\\w.-]{0,50}?`` name prefixes and nested loops of the keyword-assignment rules. Offsets are
character offsets of the ``str`` scanned (a text that is ASCII is handed to RE2 as bytes, the same
offsets, without the binding re-encoding it for every rule).

Loading is lazy and once per process: the TOML is parsed on the first :func:`find` (under 0.1 s);
each rule's regex is compiled the first time one of its keywords occurs in a scanned text (compiling
all 200 costs about 0.05 s). :func:`stats` compiles them all, to report those RE2 refuses.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import re2

__all__ = ["UPSTREAM_COMMIT", "RULES_FILE", "EXCLUDED", "VendorFinding", "find", "stats"]

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
    regex: Any  # the allowlist's regexes as one alternation (an RE2 pattern), or None
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
    source: str  # the pattern as the rule file writes it (Go's RE2 syntax)
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[_Allowlist, ...]
    _regex: Any = field(default=None, repr=False)
    error: str | None = None  # set when RE2 refuses the pattern

    @property
    def regex(self) -> Any:
        """The compiled RE2 pattern, compiled on first use; None (and :attr:`error` set) when RE2
        refuses it."""
        if self._regex is None and self.error is None:
            try:
                self._regex = re2.compile(self.source)
            except re2.error as exc:
                self.error = f"does not compile in RE2: {exc}"
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
# Loading
# --------------------------------------------------------------------------------------------


def _one_of(patterns) -> Any:
    """Go patterns as one RE2 alternation (one search instead of one per pattern), each in a group of its
    own, so that a flag group such as ``(?i)`` keeps to its pattern as it does in Go. Raises
    ``re2.error`` when RE2 refuses one."""
    parts = [f"(?:{p})" for p in patterns]
    return re2.compile("|".join(parts)) if parts else None


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
        try:  # the rule's regex is compiled on the first note that holds a keyword (stats() compiles all)
            lists = tuple(_allowlist(a) for a in allowlists)
        except re2.error as exc:
            skipped[rid] = f"does not compile in RE2: {exc}"
            continue
        keywords = tuple(sorted({k.lower() for k in spec.get("keywords", ())}))
        if not keywords:
            skipped[rid] = "no keywords: would run on every note"
            continue
        rules.append(_Rule(rid, spec["regex"], keywords, float(spec.get("entropy", 0.0)), int(spec.get("secretGroup", 0)),
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


def _secret_span(rule: _Rule, span: Any, named: set[int]) -> tuple[int, int]:
    """The secret of a match (``span``: the match's ``span`` method; ``named``: the numbers of the
    regex's named groups): the rule's ``secretGroup``, else the first unnamed group that matched
    something, else the whole match."""
    if rule.secret_group:
        return span(rule.secret_group)
    for g in range(1, rule.regex.groups + 1):
        if g not in named:
            start, end = span(g)
            if end > start:
                return start, end
    return span()


def find(text: str, low: str | None = None, present: set[str] | None = None) -> Iterator[VendorFinding]:
    """The secrets gitleaks' rules find in ``text`` (``low``: ``text`` lower-cased, same length), as
    :class:`VendorFinding` objects with character offsets into ``text``.

    Only rules one of whose keywords occurs in ``low`` run (``present``: the keywords of
    :func:`keywords` that occur, when the caller has looked for them already, e.g. with one
    Aho-Corasick pass as consolidate/rules/secrets/providers.py does); each rule is compiled on its first run."""
    rs = _load()
    if low is None:
        low = text.lower()
    if present is None:
        present = {kw for kw in rs.keywords if kw in low}
    # RE2 reads UTF-8: an ASCII text is encoded once here (its byte offsets are its character offsets),
    # not by the binding once per rule; any other text goes as str and the binding maps the offsets
    subject: str | bytes = text.encode("ascii") if present and text.isascii() else text
    seen: set[str] = set()
    for kw in present:
        for rule in rs.by_keyword.get(kw, ()):
            if rule.id not in seen:
                seen.add(rule.id)
                yield from _run(rule, text, subject, rs.global_allowlist)


def _run(rule: _Rule, text: str, subject: str | bytes, global_allowlist: _Allowlist) -> Iterator[VendorFinding]:
    regex = rule.regex
    if regex is None:  # does not compile: left out, and named by stats()
        return
    named: set[int] | None = None
    for m in regex.finditer(subject):
        if named is None:
            named = set(regex.groupindex.values())
        start, end = _secret_span(rule, m.span, named)
        if end <= start:
            continue
        secret = text[start:end]
        if rule.entropy:
            if _entropy(secret) <= rule.entropy:
                continue
            if rule.id.startswith("generic") and not any(c.isdigit() for c in secret):
                continue
        m_start, m_end = m.span()
        line_start = text.rfind("\n", 0, m_start) + 1
        line_end = text.find("\n", m_end)
        line = text[line_start : line_end if line_end != -1 else len(text)]
        match = text[m_start:m_end]
        if global_allowlist.allows(secret, match, line):
            continue
        if any(a.allows(secret, match, line) for a in rule.allowlists):
            continue
        yield VendorFinding(rule.id, start, end)
