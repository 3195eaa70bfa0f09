"""Provider formats: the gate's own prefixed-key rules, PEM private keys, JWTs, AWS key pairs,
detect-secrets' plugin regexes (loaded on first use) and gitleaks' rules (consolidate/rules/provider_rules.py)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Pattern

from consolidate.rules.secrets.credentials import _LOGIN_NEEDLES
from consolidate.rules.secrets.findings import _Candidate, _P_PROVIDER, _P_VENDOR
from consolidate.rules.secrets.prose import _PROSE_WORDS_ALL
from consolidate.rules.secrets.values import ENTROPY_MIN, _is_path, _is_placeholder, _is_template, _token_body_is_random, shannon_entropy

if TYPE_CHECKING:
    import ahocorasick


_B64URL = "A-Za-z0-9_-"

# Anthropic API docs: keys look like sk-ant-api03-<93 base64url chars>; admin keys sk-ant-admin01-.
_ANTHROPIC_RE = re.compile(r"(?<![A-Za-z0-9_-])sk-ant-(?:[a-z]+\d\d-)?(?P<body>[A-Za-z0-9_-]{20,512})")

# OpenAI API docs: legacy user keys sk-<48>, project keys sk-proj-..., service accounts
# sk-svcacct-..., admin keys sk-admin-... (detect-secrets' OpenAIDetector only knows legacy keys
# holding "T3BlbkFJ", base64 of "OpenAI", so this rule replaces it).
_OPENAI_RE = re.compile(
    r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?P<body>[A-Za-z0-9_-]{20,512})"
)

# GitHub docs, "About authentication to GitHub / GitHub's token formats": fine-grained personal
# access tokens are github_pat_<22>_<59>; detect-secrets' GitHubTokenDetector covers gh[pousr]_.
_GITHUB_PAT_RE = re.compile(r"(?<![A-Za-z0-9_])github_pat_(?P<body>[A-Za-z0-9_]{22,255})")

# Google Cloud docs ("API keys"; the pattern GitHub secret scanning uses): AIza + 35 chars.
_GOOGLE_RE = re.compile(r"(?<![A-Za-z0-9_-])AIza(?P<body>[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])")

# Other documented prefixed tokens that detect-secrets has no plugin for, each as the issuer (or
# GitHub secret scanning's partner pattern) describes it: Slack app-level tokens xapp-1-..., Stripe
# webhook signing secrets whsec_..., npm granular/automation tokens npm_<36>, Hugging Face hf_<34>,
# Groq gsk_<52>, Replicate r8_<37>, DigitalOcean dop_v1_/doo_v1_/dor_v1_<64 hex>.
_SLACK_APP_RE = re.compile(r"(?<![A-Za-z0-9-])xapp-\d-[A-Z0-9]{8,}-\d{8,}-(?P<body>[a-f0-9]{32,})")
_STRIPE_WHSEC_RE = re.compile(r"(?<![A-Za-z0-9_])whsec_(?P<body>[A-Za-z0-9+/]{24,}={0,2})")
_NPM_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_])npm_(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])")
_HF_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_])hf_(?P<body>[A-Za-z0-9]{30,40})(?![A-Za-z0-9])")
_GROQ_RE = re.compile(r"(?<![A-Za-z0-9_])gsk_(?P<body>[A-Za-z0-9]{48,56})(?![A-Za-z0-9])")
_REPLICATE_RE = re.compile(r"(?<![A-Za-z0-9_])r8_(?P<body>[A-Za-z0-9]{37})(?![A-Za-z0-9])")
_DIGITALOCEAN_RE = re.compile(r"(?<![A-Za-z0-9_])do[opr]_v1_(?P<body>[a-f0-9]{64})(?![A-Za-z0-9])")
_PROVIDER_RULES = (
    ("anthropic-key", _ANTHROPIC_RE, ("sk-ant-",)),
    ("openai-key", _OPENAI_RE, ("sk-",)),
    ("github-token", _GITHUB_PAT_RE, ("github_pat_",)),
    ("google-api-key", _GOOGLE_RE, ("aiza",)),
    ("slack-token", _SLACK_APP_RE, ("xapp-",)),
    ("stripe-webhook-secret", _STRIPE_WHSEC_RE, ("whsec_",)),
    ("npm-token", _NPM_TOKEN_RE, ("npm_",)),
    ("huggingface-token", _HF_TOKEN_RE, ("hf_",)),
    ("groq-key", _GROQ_RE, ("gsk_",)),
    ("replicate-token", _REPLICATE_RE, ("r8_",)),
    ("digitalocean-token", _DIGITALOCEAN_RE, ("_v1_",)),
)

# RFC 7519: three base64url segments; the JOSE header is a JSON object, so it starts "eyJ" ('{"').
_JWT_RE = re.compile(
    rf"(?<![{_B64URL}])eyJ[{_B64URL}]{{2,4096}}={{0,2}}\.[{_B64URL}]{{2,16384}}={{0,2}}"
    rf"\.[{_B64URL}]{{0,4096}}={{0,2}}"
)

# RFC 7468 private-key armour; the body may be on its own lines, on one line separated by spaces,
# JSON-escaped with literal "\n", or cut off before the END line. Encrypted PEM (RFC 1421) and
# PGP armour put "Name: value" headers before the body.
_PEM_SEP = r"""(?:\s|\\+[rnt]|["'])"""  # quotes: "...\n" "..." string concatenation
_PEM_BODY_RE = re.compile(
    rf"(?:{_PEM_SEP}*[A-Za-z][A-Za-z-]*:[^\n\\]*)*{_PEM_SEP}*"
    rf"(?P<body>[A-Za-z0-9+/=]{{16,}}(?:{_PEM_SEP}+[A-Za-z0-9+/=]{{16,}})*"
    rf"(?:{_PEM_SEP}+[A-Za-z0-9+/=]{{1,15}}(?={_PEM_SEP}*-----END))?)"
)
_PUTTY_PRIVATE_RE = re.compile(r"Private-Lines:[ \t]*\d+")
_AWS_SECRET_CANDIDATE_RE = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_ID_NEEDLES = ("a3t", "abia", "acca", "akia", "asia")  # detect-secrets' AWS id prefixes
_AWS_WINDOW = 256  # characters either side of an access key id searched for its secret key


def _aws_secret_ok(value: str) -> bool:
    """AWS secret access keys are 40 base64 characters of mixed case (IAM docs); requiring both
    cases rules out git SHAs (40 lower-case hex)."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not _is_placeholder(value)
        and not _is_path(value)
        and shannon_entropy(value) >= ENTROPY_MIN
    )


class _DetectSecrets(NamedTuple):
    aws_key_id: Pattern[str]
    aws_secret_quoted: Pattern[str]
    pem_header: Pattern[str]
    putty_header: Pattern[str]
    jwt_valid: Callable[[str], bool]
    token_rules: tuple[tuple[str, Pattern[str], tuple[str, ...], Callable[[str], bool]], ...]
    extra_rules: tuple[tuple[str, Pattern[str], tuple[str, ...]], ...]
    needles: tuple[str, ...]  # every rule's needles, each once
    #: the provider rules (our own, detect-secrets' token and extra rules) as (kind, regex, span_of):
    #: ``span_of(match, text)`` is the secret's span, or None when the match is rejected
    rules: tuple[tuple[str, Pattern[str], Callable[[re.Match[str], str], tuple[int, int] | None]], ...]
    rules_by_needle: dict[str, tuple[int, ...]]  # needle -> indexes into ``rules``
    single_char_needles: tuple[str, ...]  # needles of one character, left out of ``finder``
    finder: "ahocorasick.Automaton"  # the needles and gitleaks' keywords: (end, needle) per occurrence


def _bounded(pattern: Pattern[str], chars: str = "A-Za-z0-9") -> Pattern[str]:
    """A detect-secrets denylist regex with word boundaries added (theirs have none)."""
    return re.compile(rf"(?<![{chars}])(?:{pattern.pattern})(?![{chars}])", pattern.flags)


def _indexed_rules(token_rules, extra_rules):
    """The provider rules in one list, and for each needle the rules it opens, so that a note runs
    only the rules whose needles it holds (found in one pass by :func:`_finder`) instead of testing
    every rule's needles."""
    def body_is_random(m, text):
        return m.span() if _token_body_is_random(m.group("body")) else None

    def accepted_by(accept):
        return lambda m, text: m.span() if accept(m.group()) else None

    def extra_span(kind):
        def span_of(m, text):
            # NpmDetector captures the token in group 1 after "//registry/:_authToken="; the other
            # plugins' groups capture only a prefix (GitLab's "glpat")
            start, end = m.span(1) if kind == "NpmDetector" else m.span()
            return (start, end) if _token_body_is_random(text[start:end]) else None
        return span_of

    rules, by_needle = [], {}
    entries = ([(kind, regex, needles, body_is_random) for kind, regex, needles in _PROVIDER_RULES]
               + [(kind, regex, needles, accepted_by(accept)) for kind, regex, needles, accept in token_rules]
               + [(kind, regex, needles, extra_span(kind)) for kind, regex, needles in extra_rules])
    for i, (kind, regex, needles, span_of) in enumerate(entries):
        rules.append((kind, regex, span_of))
        for needle in needles:
            by_needle.setdefault(needle, []).append(i)
    return tuple(rules), {k: tuple(v) for k, v in by_needle.items()}


def _finder(needles: tuple[str, ...]):
    """One Aho-Corasick automaton (pyahocorasick) over the gate's needles and gitleaks' keywords
    (consolidate/rules/provider_rules.py): a text is read once, whatever the number of needles (looking
    for 290 needles one by one with ``in`` cost about 0.1 ms per note, several times the rest of the
    gate)."""
    import ahocorasick  # noqa: PLC0415 - third-party ahocorasick: only its callers load it

    from consolidate.rules import provider_rules  # noqa: PLC0415 - third-party re2: only its callers load it

    finder = ahocorasick.Automaton()
    for needle in {*needles, *provider_rules.keywords(), *_AWS_ID_NEEDLES, *_LOGIN_NEEDLES, "aws", *_PROSE_WORDS_ALL}:
        if len(needle) == 1:  # "." and ":" occur in most notes: looked for with `in` (see scan)
            continue
        finder.add_word(needle, needle)
    finder.make_automaton()
    return finder


@functools.cache
def _detect_secrets() -> _DetectSecrets:
    from detect_secrets.plugins.aws import AWSKeyDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.discord import DiscordBotTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.github_token import GitHubTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.mailchimp import MailchimpDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.npm import NpmDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.private_key import PrivateKeyDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.pypi_token import PypiTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.sendgrid import SendGridDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.slack import SlackDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.stripe import StripeDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector  # noqa: PLC0415 - heavy (detect_secrets): loaded only when used

    labels = [
        p.pattern[len("BEGIN ") :] for p in PrivateKeyDetector.denylist if p.pattern.startswith("BEGIN ")
    ]
    labels.append("ENCRYPTED PRIVATE KEY")  # PKCS#8 encrypted, RFC 7468 §11; missing upstream
    pem_header = re.compile(
        r"-----BEGIN (?:" + "|".join(map(re.escape, sorted(set(labels), key=len, reverse=True))) + r")-----"
    )
    putty = [p.pattern for p in PrivateKeyDetector.denylist if p.pattern.startswith("PuTTY")]
    putty_header = re.compile("|".join(re.escape(p).replace("2", "[23]") for p in putty) or r"(?!)")

    slack_token, slack_webhook = SlackDetector.denylist
    token_rules = (
        ("github-token", _bounded(GitHubTokenDetector.denylist[0], "A-Za-z0-9_"),
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), lambda v: _token_body_is_random(v[4:])),
        ("slack-token", _bounded(slack_token, "A-Za-z0-9-"), ("xox",),
         lambda v: not _is_placeholder(v.split("-", 1)[1])),
        # The webhook URL is the credential as a whole (workspace, channel and token): blocked even
        # when its last part is masked with X's, unless that part is a template (<token>, ${HOOK}).
        ("slack-webhook", slack_webhook, ("hooks.slack.com",),
         lambda v: not _is_template(v.rsplit("/", 1)[-1])),
        # Stripe keys grew past the 24 characters the plugin asks for: extended to the full key.
        ("stripe-key", re.compile(rf"(?<![A-Za-z0-9_])(?:{StripeDetector.denylist[0].pattern})[0-9a-zA-Z]*"),
         ("k_live_",), lambda v: _token_body_is_random(v[8:])),
    )
    # Kept out: TwilioKeyDetector (account/key SIDs are identifiers, not secrets),
    # ArtifactoryDetector (AP[0-9A-F]... matches words such as "APACHEKAFKA"), Cloudant, IBM and
    # SoftLayer (keyword assignments: covered by secret-assignment), KeywordDetector (flags any
    # value), the high-entropy plugins (flag hashes and UUIDs), IPPublicDetector (not a secret).
    plugin_needles = {  # lower-case substrings every match of the plugin's regexes contains
        AzureStorageKeyDetector: ("accountkey=",),
        DiscordBotTokenDetector: (".",),
        GitLabTokenDetector: ("gl", "gr1348941"),
        MailchimpDetector: ("-us",),
        NpmDetector: ("_authtoken",),
        PypiTokenDetector: ("pypi-",),
        SendGridDetector: ("sg.",),
        SquareOAuthDetector: ("sq0csp-",),
        TelegramBotTokenDetector: (":",),
    }
    extra_rules = tuple(
        (cls.__name__, pattern, needle) for cls, needle in plugin_needles.items()
        for pattern in cls.denylist  # type: ignore[attr-defined]  # a class attribute (tuple) in each plugin
    )
    needles = tuple(sorted({n for *_, needles in _PROVIDER_RULES for n in needles}
                           | {n for _, _, needles, _ in token_rules for n in needles}
                           | {n for *_, needles in extra_rules for n in needles}))
    rules, by_needle = _indexed_rules(token_rules, extra_rules)
    return _DetectSecrets(
        aws_key_id=_bounded(AWSKeyDetector.denylist[0]),
        aws_secret_quoted=AWSKeyDetector.denylist[1],
        pem_header=pem_header,
        putty_header=putty_header,
        jwt_valid=JwtTokenDetector.is_formally_valid,
        token_rules=token_rules,
        extra_rules=extra_rules,
        needles=needles,
        finder=_finder(needles),
        rules=rules,
        rules_by_needle=by_needle,
        single_char_needles=tuple(sorted(n for n in {*needles, *_provider_rules().keywords(), *_PROSE_WORDS_ALL}
                                         if len(n) == 1)),
    )


@functools.cache
def _provider_rules():
    from consolidate.rules import provider_rules  # noqa: PLC0415 - third-party re2: only its callers load it

    return provider_rules


def _vendor_rules(text: str, low: str, present: set[str], found: list[_Candidate]) -> list[_Candidate]:
    """Provider formats of gitleaks' maintained rule set (consolidate/rules/provider_rules.py: keywords,
    entropy floors and allowlists as gitleaks applies them), named by the gitleaks rule id; the
    gate's placeholder filter (:func:`_is_placeholder`) drops ``<token>``, ``xxxx``, ``...`` values.
    A secret that overlaps one the gate's own provider rules found (``found``: they win in
    :func:`_resolve`) is left out before that filter runs."""
    out = []
    for f in _provider_rules().find(text, low, present):
        if any(c.start < f.end and f.start < c.end for c in found):
            continue
        if not _is_placeholder(text[f.start:f.end].strip("\"'`")):
            out.append(_Candidate(_P_VENDOR, f.rule, f.start, f.end))
    return out


def _private_keys(text: str, ds: _DetectSecrets) -> Iterator[tuple[int, int]]:
    """PEM private keys: the span is the key body (headers excluded), which must hold at least
    one run of 16+ base64 characters, so a bare mention of the header, or a documentation
    sample with ``...`` as its body, is not a finding."""
    if "PRIVATE KEY" in text:
        for header in ds.pem_header.finditer(text):
            body = _PEM_BODY_RE.match(text, header.end())
            if body:
                yield body.span("body")
    if "PuTTY-User-Key-File" in text and ds.putty_header.search(text):
        for private in _PUTTY_PRIVATE_RE.finditer(text):
            body = _PEM_BODY_RE.match(text, private.end())
            if body:
                yield body.span("body")


def _aws(text: str, low: str, ds: _DetectSecrets, present: set[str]) -> Iterator[_Candidate]:
    """AWS access key ids (detect-secrets' AWSKeyDetector), and the secret access key next to
    one: a 40-character mixed-case base64 value within :data:`_AWS_WINDOW` characters, as in
    ``credentials`` files, ``.env`` files and the console's CSV download. detect-secrets' second
    AWS regex (``aws ... key ... "<40 chars>"``) catches quoted secrets without the id."""
    if not present.isdisjoint(_AWS_ID_NEEDLES):
        yield from _aws_pairs(text, ds)
    if "aws" in present:
        for m in ds.aws_secret_quoted.finditer(text):
            if _aws_secret_ok(m.group(1)):
                yield _Candidate(_P_PROVIDER, "aws-secret-key", *m.span(1))


def _aws_pairs(text: str, ds: _DetectSecrets) -> Iterator[_Candidate]:
    for m in ds.aws_key_id.finditer(text):
        if _is_placeholder(m.group()) or shannon_entropy(m.group()[4:]) < 2.5:
            continue
        yield _Candidate(_P_PROVIDER, "aws-access-key", m.start(), m.end())
        lo, hi = max(0, m.start() - _AWS_WINDOW), min(len(text), m.end() + _AWS_WINDOW)
        for s in _AWS_SECRET_CANDIDATE_RE.finditer(text, lo, hi):
            if _aws_secret_ok(s.group()):
                yield _Candidate(_P_PROVIDER, "aws-secret-key", s.start(), s.end())
