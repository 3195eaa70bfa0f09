"""The secret gate: find secret material in a note before it reaches a judge or the store.

:func:`scan` returns one :class:`Finding` per secret; an empty list means the text is clean.
A finding never carries the secret itself, only a redacted :attr:`Finding.preview` (its kind and
length, and for a value of 16+ characters at most its first eighth, see :func:`redact_preview`) and the offsets of the secret in the text, so that
:func:`redact` can print a note safely in logs.

Rules, from most to least specific (when two findings overlap, the more specific rule wins):

==============================  ===============================================================
kind                            source
==============================  ===============================================================
``private-key``                 PEM armour (RFC 7468); labels from detect-secrets'
                                ``PrivateKeyDetector.denylist`` plus ``ENCRYPTED PRIVATE KEY``
``jwt``                         RFC 7519 compact form; validated by detect-secrets'
                                ``JwtTokenDetector.is_formally_valid``
``anthropic-key``               Anthropic's documented key prefix ``sk-ant-``
``openai-key``                  OpenAI's documented prefixes ``sk-``, ``sk-proj-``, ...
``aws-access-key``              detect-secrets' ``AWSKeyDetector.denylist[0]``
``aws-secret-key``              detect-secrets' ``AWSKeyDetector.denylist[1]``, plus a 40-char
                                base64 value next to an access key id (AWS IAM docs)
``github-token``                detect-secrets' ``GitHubTokenDetector``, plus ``github_pat_``
``slack-token``/``slack-webhook``  detect-secrets' ``SlackDetector.denylist``
``stripe-key``                  detect-secrets' ``StripeDetector.denylist``
``google-api-key``              Google's documented ``AIza`` + 35 characters
``slack-token`` (``xapp-``),    documented prefixes with no detect-secrets plugin: Slack
``stripe-webhook-secret``,      app-level tokens, Stripe ``whsec_``, npm ``npm_``, Hugging
``npm-token``,                  Face ``hf_``, Groq ``gsk_``, Replicate ``r8_``, DigitalOcean
``huggingface-token``,          ``dop_v1_``/``doo_v1_``/``dor_v1_``
``groq-key``, ``replicate-token``,
``digitalocean-token``
``<plugin class name>``         other detect-secrets regex plugins, used as they are
``<gitleaks rule id>``          ~200 provider formats of gitleaks' maintained rule set, pinned data
                                (consolidate/rules/provider_rules.py: keywords, entropy floors and
                                allowlists as gitleaks applies them; compiled lazily, per rule)
``connection-string-password``  RFC 3986 userinfo, widened from detect-secrets'
                                ``BasicAuthDetector``; also ``user:password@host`` with no scheme
``bearer-token``                RFC 6750 ``Authorization: Bearer``
``basic-auth-header``           RFC 7617 ``Authorization: Basic``
``secret-assignment``           keyword list adapted from detect-secrets' ``KeywordDetector``,
                                values judged by shape and Shannon entropy; also
                                ``--password``/``--token`` command-line flags, and prose
                                (``the password is X``, ``with password X``)
``cli-password``                ``curl -u user:password`` (RFC 7617 credentials), ``mysql -u u
                                -pPASS``, ``docker login -u u -p PASS``, ``sshpass -p``,
                                ``redis-cli -a``
``netrc-password``              ``machine HOST login USER password PASS`` (~/.netrc)
``cookie``                      ``Cookie:`` header values of session/auth/token cookies
``credential-pair``             ``user:password``, ``user / password`` or ``user/Passw0rd!`` on a
                                line about logging in or a database (RFC 7617's user-pass, written
                                in prose), and ``user=app, VALUE`` on a credentials line
``key-material``                a base64/base64url/hex/base32 run with no keyword beside it (a PEM
                                body line, an account key), the last resort: every rule above wins
                                an overlap (consolidate/rules/key_material.py: lengths, entropy, the
                                word test, and what passes: commit SHAs, hashes and ids named as
                                such, UUIDs, digests, SSH public keys, paths, identifiers)
==============================  ===============================================================

A value explicitly given to a password-named word (``password = letmein``, ``the root password is
correcthorsebatterystaple``, ``Das Passwort ist sonnenblume``, ``пароль: подсолнух``, ``パスワード:
ひまわり``, ``密码是向日葵``) is a password whatever it looks like, letters of any script only
included, 2+ characters in a CJK script (:func:`_password_is_secret`, :func:`_cjk_value_is_prose`), except placeholders and
prose about the password ("the password is rotated monthly", "password is required"). The words
of ~30 languages are listed with their copulas and word orders (:data:`_PROSE_PASSWORD_WORDS`,
:data:`_PROSE_COPULAS`): a value after the copula (``Heslo k databázi je slunečnice``), right after the
keyword where the language has no present-tense copula (``Şifre ayçiçeği``, ``Пароль подсолнух``,
:data:`_ZERO_COPULA_WORDS`), before a closing copula (``पासवर्ड सूरजमुखी है``), in right-to-left text
with its bidi marks (``كلمة المرور هي عباد الشمس``). A value of several words is a passphrase
(:func:`_passphrase_span`: ``the root password for staging is correct horse battery staple``,
``password: "correct horse battery staple"``) unless it reads as a description ("stored in the vault",
"case sensitive", "use SSO"). The short names ``pw``, ``pwd``, ``passwd``, ``pass``, ``creds`` and the
bare ``secret``, ``token``, ``api key`` take a value too, judged more strictly
(:func:`_prose_value_ok`, :func:`_bare_name_value_ok`: ``tests pass: 12/12``, ``pw:e2e``, ``token:
string`` pass). ``changeme``
stays a placeholder: it names itself as the value to replace. Weak and vendor-default passwords
(``letmein``, ``admin``, ``123456``) are passwords. A Slack webhook URL is a secret as a whole, also
with a masked token, unless the token is a template slot (``<token>``, ``${HOOK}``).

What is deliberately *not* a secret (see :func:`_is_placeholder` and :func:`_value_is_secret`):
empty values, placeholders (``<API_KEY>``, ``${API_KEY}``, ``$TOKEN``, ``xxxx``, ``sk-...``,
``your-key-here``, ``changeme``, ``<REDACTED_SECRET kind=...>``), references to where a secret
lives (``os.environ["API_KEY"]``, paths such as ``~/.ssh/id_rsa``), and hashes, commit SHAs and
ids named as such, and UUIDs: detect-secrets' high-entropy plugins are not used because they flag
exactly those (consolidate/rules/key_material.py tells a key standing alone from them). A hex string or
UUID *is* a secret when it is assigned to a secret-named variable.

detect-secrets is imported lazily, on the first call to :func:`scan` (importing it costs
~0.1-0.2 s because it pulls in ``requests``). Only class attributes of its plugins are used (their
``denylist`` regexes and ``JwtTokenDetector.is_formally_valid``): ``analyze_line`` and the
baseline/settings machinery, which keep global state, are never touched.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Pattern

if TYPE_CHECKING:
    import ahocorasick

__all__ = ["Finding", "scan", "redact", "redact_preview"]


@dataclass(frozen=True)
class Finding:
    """One secret found in a text.

    ``kind`` names the rule that fired; ``preview`` is :func:`redact_preview` of the secret;
    ``start``/``end`` are the character offsets of the secret value in the scanned text
    (``text[start:end]`` is the secret, e.g. only the password of a connection string).
    """

    kind: str
    preview: str
    start: int
    end: int


#: Values shorter than this show no character at all in a preview: only their kind and length.
PREVIEW_MIN_CHARS = 16
#: At most this fraction of a value's characters, and at most PREVIEW_MAX_SHOWN, appear in a preview.
PREVIEW_FRACTION = 1 / 8
PREVIEW_MAX_SHOWN = 4


def redact_preview(value: str, kind: str = "secret") -> str:
    """What may be shown of a secret: its kind and length, and for long values a few leading characters.

    ``"hunter22"`` -> ``"<secret, 8 chars>"``; a 51-character OpenAI key -> ``"sk-p…<openai-key, 51
    chars>"``. A value under :data:`PREVIEW_MIN_CHARS` characters shows none of them; a longer one
    shows its first ``min(PREVIEW_MAX_SHOWN, len * PREVIEW_FRACTION)`` characters (at most 1/8 of
    it, the documented prefix of a provider key rather than its random part), never its end. The
    preview is a placeholder to the gate: ``redact(redact(x)) == redact(x)`` and ``scan(redact(x))``
    is empty."""
    n = len(value)
    shown = min(PREVIEW_MAX_SHOWN, int(n * PREVIEW_FRACTION)) if n >= PREVIEW_MIN_CHARS else 0
    label = f"<{kind}, {n} chars>"
    return f"{value[:shown]}…{label}" if shown else label


def redact(text: str) -> str:
    """The text with every finding replaced by its preview; safe to write to logs."""
    findings = scan(text)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for finding in findings:  # sorted and non-overlapping
        parts.append(text[pos : finding.start])
        parts.append(finding.preview)
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Entropy and the shape of values
# --------------------------------------------------------------------------------------------


def user_reason(text: str | None, default: str, limit: int = 500) -> str:
    """A reason a user typed (``forget --reason``, ``review --approve/--decline --reason``) as it is
    kept in events, archives and notes.md: whitespace folded, at most ``limit`` characters, and any
    secret material the gate finds replaced by its redacted preview (:func:`redact`), so a reason never
    stores a secret a note could not store. ``default`` when ``text`` is empty."""
    why = " ".join((text or "").split()) or default
    if text and scan(why):
        why = redact(why)
    return why[:limit]


def shannon_entropy(value: str) -> float:
    """Shannon entropy in bits per character of ``value`` (0.0 for the empty string)."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


# Entropy thresholds, measured on 20,000 random strings per length (random.Random, base62):
#
#   length 12: median 3.42 bits/char, 0.8 % below 3.0
#   length 16: median 3.75, 0.005 % below 3.0 (but 4.6 % below 3.5: too many misses for 3.5)
#   length 20: median 4.02, 0.1 % below 3.5
#   hex, 16:   median 3.20, 0.2 % below 2.5 (hex has only 16 symbols: at most 4 bits/char)
#
# English identifiers and words score 3.0-3.4 at these lengths ("development_secret" 3.41,
# "AccessTokenResponse" 3.09), so entropy alone cannot tell them apart from 12-19 character
# tokens: the shape filters below (word-like, identifier, path, placeholder) do that, and the
# entropy floor only removes repetitive values. Hence:
ENTROPY_MIN_SHORT = 3.0  # values of 12-19 characters
ENTROPY_MIN = 3.5  # values of 20 characters or more
ENTROPY_MIN_HEX = 2.5  # hex (and UUIDs) of 16+ hex digits, only when assigned to a secret name
ENTROPY_MIN_PASSWORD = 2.0  # values of 6+ characters assigned to a password-named variable
ENTROPY_MIN_TOKEN_BODY = 3.0  # the random part of a prefixed provider key

# Documentation placeholders and vendor defaults (RabbitMQ guest/guest, the postgres image,
# MySQL root) that, used as a password, reveal nothing. Compared lower-cased, whole value.
_PLACEHOLDER_WORDS = frozenset(
    """password passwd pass pwd pw secret secrets changeme change_me change-me xxx x
    postgres root admin guest test user username mysql redis default none null nil true false
    token apikey api_key api-key key mypassword yourpassword your_password your-password
    password123 password1 pass123 secret123 admin123 mysecret mysecretpassword supersecret
    s3cret s3cr3t p@ssw0rd p@ssword passw0rd 123456 12345678 qwerty letmein dev local
    1password lastpass bitwarden keepass keepassxc keychain""".split()
)
# A placeholder by its whole shape: <API_KEY>, [token], ${API_KEY}, ${{ secrets.X }}, $TOKEN,
# {token}, {{ token }}, %s, %(password)s, %TOKEN%, and runs of mask characters (xxxx, ****, ...).
_PLACEHOLDER_SHAPE = re.compile(
    r"""^(?:
        <.* | \[[^\[\]]*\]
      | \$\{.* | \$[A-Za-z_][A-Za-z0-9_]*
      | \{.*\}
      | %\(?[A-Za-z_]*\)?s | %[A-Za-z_][A-Za-z0-9_]*%
      | [xX*.•#_\-…0]+
    )$""",
    re.X | re.S,
)
# A placeholder by a marker inside it. Markers are 5+ characters (or anchored) so that a random
# 40-character token contains one by chance with probability below 1e-6.
_PLACEHOLDER_MARKER = re.compile(
    r"""(?ix)
      ^your | [^a-z]your[-_ ] | example | placeholder | redacted | changeme | change[-_ ]me
    | dummy | sample | replace[-_ ]?me | insert[-_ ] | [-_ ]here$ | ^fake | [-_]fake
    | \.\.\. | … | (?-i:x{5,}|X{5,}) | \*{3,}
    """
)


def _is_placeholder(value: str) -> bool:
    """True for values that stand in for a secret rather than being one (see module docs)."""
    if not value:
        return True
    if value.lower() in _PLACEHOLDER_WORDS:
        return True
    if _PLACEHOLDER_SHAPE.match(value):
        return True
    return _PLACEHOLDER_MARKER.search(value) is not None


def _is_template(value: str) -> bool:
    """A template slot rather than a value: ``<token>``, ``${HOOK}``, ``$HOOK``, ``{token}``."""
    return bool(re.match(r"^(?:<.*>|\$\{.*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{.*\})$", value))


_DIGIT = re.compile(r"\d")


def _char_classes(value: str) -> int:
    """How many of upper case, lower case and digits occur in ``value`` (each found by one C-level
    search, not a Python loop over a value that may be a 2 kB key)."""
    upper = value != value.lower() if value.isascii() else any(ch.isupper() for ch in value)
    lower = value != value.upper() if value.isascii() else any(ch.islower() for ch in value)
    return upper + lower + (_DIGIT.search(value) is not None)


_HEX_OR_UUID = re.compile(r"^(?:[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})$")
_LETTERS_AND_SEPARATORS = re.compile(r"^[A-Za-z]+(?:[-_./ :?!]+[A-Za-z]+)*$")
_CAMEL_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_SNAKE_IDENTIFIER = re.compile(r"^[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+$")
_CALL_OR_SUBSCRIPT = re.compile(r"^([A-Za-z_$][A-Za-z0-9_.:>?!-]*)[(\[]")
_NO_DIGITS = str.maketrans("", "", "0123456789")
_DATE_OR_NUMBER = re.compile(r"^[0-9.,:/_+\-TZ ]+$")
_DIGEST_PREFIX = re.compile(r"^(?:sha\d*|md5|blake2[bs]?|sha3-\d+|arn):", re.I)
_PATH_ROOTS = frozenset(
    "home users etc usr var tmp opt root srv mnt run app apps data workspace workspaces "
    "secrets config private keys certs ssl dev proc sys library volumes".split()
)


def _is_word_like(value: str) -> bool:
    """Letters and separators only, in segments averaging 3+ letters: ``AccessTokenResponse``,
    ``my-app-secrets``, ``secrets/prod``, ``token?.slice``. Random letters split into 1-2 letter
    segments."""
    value = value.strip("-_./:?!")
    if not _LETTERS_AND_SEPARATORS.match(value):
        return False
    segments = _CAMEL_SEGMENT.findall(value)
    return bool(segments) and sum(map(len, segments)) / len(segments) >= 3


def _is_path(value: str) -> bool:
    """``~/.ssh/id_rsa``, ``./secrets/prod.json``, ``/etc/ssl/private``, ``C:\\keys\\a.pem``.

    base64 never holds a dot, so a value with ``/`` is a path when its last segment has an
    extension; an absolute path without one must start with a well-known root directory.
    """
    if "/" not in value and "\\" not in value:
        return False
    if value.startswith(("~", "./", "../", ".\\", "..\\")) or re.match(r"^[A-Za-z]:\\", value):
        return True
    if value.startswith("/"):
        first = value[1:].split("/", 1)[0].lower()
        if first in _PATH_ROOTS:
            return True
    last = re.split(r"[/\\]", value.rstrip("/\\"))[-1]
    return "." in last.strip(".")


def _is_reference(value: str) -> bool:
    """Code or configuration that names where the secret lives instead of holding it:
    ``os.environ["API_KEY"]``, ``process.env.TOKEN``, ``getenv("TOKEN")``, ``$(cat file)``,
    ``!vault``, ``hashed_pw``, ``arn:aws:...``, ``sha256:...``, URLs. (Dotted names such as
    ``settings.SECRET_KEY`` are word-like and dropped by :func:`_is_word_like`.)"""
    if value[0] in "$<[{%!@&*(":
        return True
    if "://" in value or _DIGEST_PREFIX.match(value):
        return True
    call = _CALL_OR_SUBSCRIPT.match(value)
    # digits dropped: ``boto3.client(`` and ``s3.Bucket(`` are calls as much as ``getenv(``
    if call and _is_word_like(call.group(1).translate(_NO_DIGITS)):
        return True
    return bool(_SNAKE_IDENTIFIER.match(value))


def _token_body_is_random(body: str, min_classes: int = 2) -> bool:
    """The random part of a prefixed provider key: not a placeholder, mixed characters, and not
    repetitive (Shannon entropy >= :data:`ENTROPY_MIN_TOKEN_BODY`)."""
    return (
        not _is_placeholder(body)
        and _char_classes(body) >= min_classes
        and shannon_entropy(body) >= ENTROPY_MIN_TOKEN_BODY
    )


# Last segment of a secret-named variable that makes it metadata about a secret, not a secret:
# api_key_id, secret_name, token_url, password_hash, max_tokens, token_type, ...
_METADATA_SUFFIXES = frozenset(
    """id ids name names url urls uri endpoint path paths file files dir arn type types length
    len count limit limits size ttl expiry expires expiration expired format env var vars ref
    version header headers field fields prefix hash hashed digest checksum fingerprint sha sha1
    sha256 sha512 md5
    tokens usage budget index location store manager provider policy rotation required min max
    scope scopes label labels mode enabled""".split()
)
_NAME_SPLIT = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")


# Keys that are public by design: Stripe publishable keys, VAPID/RSA public keys, ...
_PUBLIC_NAME = re.compile(r"(?i)publishable|public|(?<![a-z])pub[-_]?key")


def _name_is_metadata(name: str) -> bool:
    segments = [s for s in _NAME_SPLIT.split(name.strip("\"'`*[]")) if s]
    return bool(segments) and segments[-1].lower() in _METADATA_SUFFIXES


def _value_is_secret(value: str, password_named: bool, prose: bool | None = None) -> bool:
    """Whether a value assigned to a secret-named variable is secret material.

    * never: placeholders, references, paths, URLs, digits/dates, values with spaces
    * hex and UUIDs (16+ hex digits): entropy >= :data:`ENTROPY_MIN_HEX` (hashes and UUIDs are
      not secrets on their own, but ``API_KEY=<uuid>`` is how many services issue keys)
    * password-named variables: 6+ characters, letters and a digit or symbol, not an identifier,
      entropy >= :data:`ENTROPY_MIN_PASSWORD` (passwords are short and human-made); but an
      explicit assignment to a password-named word (``prose`` given: ``password = letmein``,
      ``the password is correcthorsebatterystaple``) is judged by :func:`_password_is_secret`
    * other secret names: 12+ characters, at least two of upper/lower/digits, not word-like,
      entropy >= :data:`ENTROPY_MIN_SHORT` below 20 characters, :data:`ENTROPY_MIN` from 20
    """
    if password_named and prose is not None:
        return _password_is_secret(value, prose)
    if not value or _is_placeholder(value) or any(ch.isspace() for ch in value):
        return False
    if _DATE_OR_NUMBER.match(value):
        return False
    # before the reference test: a UUID that starts with a letter has the shape of a kebab-case
    # identifier (``b3f39e4a-8dcb-...``), and 6 UUIDs in 16 start with a letter
    if _HEX_OR_UUID.match(value):
        return len(value.replace("-", "")) >= 16 and shannon_entropy(value) >= ENTROPY_MIN_HEX
    if _is_reference(value) or _is_path(value):
        return False
    if _is_word_like(value):
        return False
    if password_named and len(value) >= 6:
        has_letter = any(ch.isalpha() for ch in value)
        has_other = any(not ch.isalpha() for ch in value)
        return has_letter and has_other and shannon_entropy(value) >= ENTROPY_MIN_PASSWORD
    if len(value) < 12 or _char_classes(value) < 2:
        return False
    threshold = ENTROPY_MIN_SHORT if len(value) < 20 else ENTROPY_MIN
    return shannon_entropy(value) >= threshold


# What stands in for a password rather than being one, when a password-named word is given a value
# explicitly. Weak and vendor-default passwords (letmein, admin, postgres, 123456) are NOT here: they
# open real accounts, so ``password = letmein`` is a secret. ``changeme`` (and change-me/change_me)
# stays a placeholder: the value names itself as one to be replaced, the canonical stand-in of
# documentation and templates. Compared lower-cased, whole value.
_PASSWORD_PLACEHOLDER_WORDS = frozenset(
    """password passwd pass pwd pw passphrase secret secrets changeme change_me change-me x xx xxx
    none null nil undefined true false yes no empty blank unset n/a na tbd todo tba fixme redacted
    masked hidden omitted removed required optional mandatory same different
    1password lastpass bitwarden keepass keepassxc keychain vault""".split()  # where it lives
)
# Type names: ``password: str`` is a declaration, not an assignment.
_TYPE_WORDS = frozenset(
    """str string bytes int integer bool boolean any object text varchar char secretstr secretbytes
    securestring optional field charfield passwordfield base64 base64url utf8 hex sha256 bearer jwt""".split()
)
# Words that, after "the password is" (or "Passwort:"), say something about the password instead of
# being it: "password is required", "the password is rotated monthly", "Passwort ist falsch". Only
# letters-only values are checked against them (a value with a digit or symbol is judged as before).
_PROSE_STATUS_WORDS = frozenset(
    """a an the this that these those it its not never no now still also only just already always
    too very so then there here in on at of for to from by with without into via as if when
    set unset stored saved kept managed shared rotated changed reset expired locked disabled enabled
    hashed encrypted salted generated random unique known unknown correct incorrect wrong right
    valid invalid required optional mandatory empty blank missing needed necessary same different
    weak strong secure insecure long short new old default temporary permanent case sensitive
    available unavailable provided given stored configured updated hidden visible masked see ask
    in use being handled checked verified accepted rejected ignored sent shown printed logged
    nicht kein keine leer erforderlich falsch richtig geändert abgelaufen gesetzt gespeichert
    verschlüsselt gleich neu alt ungültig gültig zu sehr noch schon auch nur der die das ein eine
    no es la el un una obligatorio obligatoria vacío vacía incorrecto incorrecta correcto correcta
    nuevo nueva igual requis requise obligatoire vide pas le les une nouveau nouvelle faux fausse
    não é obrigatório obrigatória vazio vazia errado errada igual nova novo
    не нет пустой пустая обязателен обязательный неверный неправильный верный новый старый тот
    такой же
    vergessen ändern benötigt notwendig stark schwach zurückgesetzt fort faible fuerte débil fraca forte
    ok okay fine good bad secret private public unchanged enough
    gerekli zorunlu yanlış hatalı doğru boş değişti değiştirildi sıfırlandı eksik geçersiz geçerli yok var
    aynı yeni eski unutuldu kilitli şifreli gizli saklı güçlü zayıf nedir ne değiştir sıfırla gir girin
    giriniz değil
    правильный верный нужен нужна нужно требуется изменён изменен изменена сброшен сброшена истёк истек
    забыт забыли слабый сложный простой надёжный надежный скрыт зашифрован хранится сохранён сохранен задан
    установлен должен минимум сменить изменить ввести введите восстановить сбросить какой где
    невірний неправильний правильний порожній потрібен обов'язковий змінено скинуто забули слабкий
    надійний введіть змінити скинути немає
    مطلوبة مطلوب خاطئة خاطئ صحيحة صحيح فارغة فارغ قوية ضعيفة جديدة قديمة غير لا تم منتهية مشفرة مخفية
    أدخل ادخل تغيير إعادة نسيت هنا في من
    שגויה נכונה חובה ריקה חזקה חלשה חדשה ישנה
    salah benar wajib diperlukan kosong kuat lemah baru lama diubah direset lupa tidak belum sudah harus
    masukkan ganti tersimpan terenkripsi
    hibás helytelen helyes kötelező üres erős gyenge új régi megváltozott elfelejtett
    اشتباه نادرست درست الزامی خالی قوی ضعیف جدید
    गलत सही आवश्यक ज़रूरी जरूरी खाली मजबूत कमजोर नया पुराना बदला भूल
    nesprávné špatné správné povinné prázdné silné slabé nové staré změněno zapomenuté uloženo
    vyžadováno nutné neplatné platné
    nieprawidłowe błędne poprawne wymagane puste silne słabe nowe stare zmienione zapomniane
    onjuist fout juist verplicht vereist leeg sterk zwak nieuw oud gewijzigd vergeten opgeslagen
    errata sbagliata corretta obbligatoria richiesta vuota debole nuova vecchia cambiata dimenticata salvata
    sai đúng trống mạnh yếu mới cũ
    steht liegt befindet lies sits lives лежит хранится находится лежать disimpan tersimpan berada está están
    trouve fica sta trova znajduje leží staat ligt bulunuyor duruyor nằm موجود توجد""".split()
)
# Function words and imperatives of the languages above that never occur in a passphrase and often in a
# sentence about a password: "the password is stored in the vault", "password: see below", "password:
# use SSO", "Heslo je uloženo v trezoru". A value of several words holding one is a description.
_PASSPHRASE_STOP_WORDS = frozenset(
    """a an the this that these those it its is are was were be been being to of in on at for from by with
    without as and or but not no nor if then than so very too also only just still already your my our
    their his her we you they he she i me us them there here what which who whom where when how why all any
    some each every other another such both either neither enough more most less least many much few
    own same should must can could will would may might shall do does did done has have had get got
    use used using see ask check read set run enter type look contact find fetch copy paste generate
    rotate request reset change update store keep save send share call email ping refer follow open visit
    click via per min max minimum maximum least characters chars char digits letters symbols length long
    der die das den dem des ein eine einen einem und oder für mit im in zu von auf ist nicht aus bei nach
    el la los las de del y o en con por para un una es se lo al
    le les des du et ou avec pour par une est pas ne dans sur au aux
    os as do da dos das e em com um uma não ao
    il gli di della e o con per è non nel nella
    het een en of op met voor van niet naar
    и или в на с для по не из к от это у о об
    ve veya ile için bu bir değil da de
    في من على إلى و أو مع عن هذا هذه هو هي لا غير
    dan atau di ke dari untuk dengan ini itu yang
    a nebo v na s pro je není z do
    i lub w na z dla jest nie do
    में का की के को से पर और या भी ही तो दिया गया किया हो नहीं
    als wie como comme come как як gibi seperti như जैसा مثل مانند jako jak niż than like
    hetzelfde dasselbe derselbe dieselbe gleiche mismo misma même stesso stessa mesmo mesma такой такой же
    sama giống
    usar utilizar ver pedir preguntar revisar consultar utiliser voir demander vérifier usare vedere chiedere
    controllare benutzen verwenden nutzen sehen siehe fragen prüfen gebruiken zien vragen использовать
    используй смотри спроси kullan bak sor gunakan lihat tanya dùng xem hỏi
    viz patrz zie vedi veja bkz देखें انظر ببینید
    در به از با برای که این آن را یا
    jetzt noch ahora todavía maintenant encore agora ainda adesso ancora teraz nadal nyní stále nu nog şimdi
    hâlâ sekarang masih giờ vẫn сейчас теперь ещё зараз досі الآن
    something anything nothing whatever everything someone somewhere simple easy hard obvious complex
    complicated tricky behind under above below inside outside within between after before during until
    since through across near next beside over about around against except""".split()
)
# A word in a value of several words that says what the value is, not what it holds
_PASSPHRASE_META = re.compile(
    r"(?i)^(?:\w*passw\w*|\w*secrets?|\w*tokens?|(?:api|private|secret|access|ssh|gpg|pgp|master)?[-_]?keys?"
    r"|vaults?|managers?|env|\.env|credentials?|creds|logins?"
    r"|accounts?|users?|usernames?)$")
# participles and adverbs: rotated, missing, monthly; stocké, guardada, almacenado, gespeichert
_ENGLISH_INFLECTION = re.compile(
    r"(?i)^(?:[a-z]{2,8}(?:ed|ing|ly|able|ible)|\w{2,12}(?:é|ée|és|ées|ado|ada|ido|ida)|ge\w{2,12}(?:t|en))$"
)
# the next word after a value that still ends its clause: "the password is X for the staging db"
_CLAUSE_CONNECTORS = frozenset(
    """for on in at to of and but or so with from via when if und für auf im in bei oder aber para
    en de del y o pero pour sur dans et ou mais per su e ma для на в и но или от к у с
    ve veya için ile dan atau untuk di ke a nebo pro v na i lub dla w z en of voor op met
    و أو في على من ל ב""".split()
)


def _password_is_secret(value: str, prose: bool, clause_end: bool = True) -> bool:
    """Whether ``value``, explicitly given to a password-named word, is a password.

    Any value is, whatever it looks like (``letmein``, ``correcthorsebatterystaple``,
    ``sonnenblume``, ``123456``), except: placeholders (:func:`_is_placeholder`'s shapes and
    markers: ``<password>``, ``***``, ``xxx``, ``${DB_PASSWORD}``, ``$PASSWORD``,
    ``your-password-here``, ``changeme``; and :data:`_PASSWORD_PLACEHOLDER_WORDS`), type names
    (``password: str``), references and paths (``os.environ[...]``, ``~/.pgpass``), kebab or snake
    names of a secret (``db-password-secret``), dates and values under 4 characters.

    ``prose`` (a copula or an unquoted ``:`` in a sentence, not ``=`` or a quoted value): a
    letters-only value must also not be a status word (:data:`_PROSE_STATUS_WORDS`, "password is
    required", "Passwort ist falsch"), nor an English participle or adverb (``rotated``,
    ``missing``, ``monthly``), and must end its clause (``clause_end``: followed by the end of the
    line, punctuation, or a connector such as "for": "the password is rotated monthly" is a
    sentence about a password)."""
    if not value or any(ch.isspace() for ch in value):
        return False
    if _CJK_RUN.match(value):  # a value in a CJK script: a word is 2-4 characters (さくら, 向日葵)
        if len(value) < 2 or _cjk_value_is_prose(value):
            return False
    elif len(value) < (3 if _ABJAD_RUN.match(value) else 4):
        return False  # Arabic and Hebrew write no short vowels: قمر, קשת are words of 3 letters
    low = value.lower()
    if low in _PASSWORD_PLACEHOLDER_WORDS or low in _TYPE_WORDS:
        return False
    if _PLACEHOLDER_SHAPE.match(value) or _PLACEHOLDER_MARKER.search(value):
        return False
    if _DATE_OR_NUMBER.match(value) and not value.isdigit():
        return False  # 2024-01-01, 3.5, 10:30; but a PIN or "123456" is a password
    if _is_path(value) or _is_reference(value) and not _SNAKE_IDENTIFIER.match(value):
        return False
    if _SNAKE_IDENTIFIER.match(value) and _KEYWORD_FINDER.search(low):
        return False  # db-password-secret, api_token_name: the name of where it lives
    if not _letters_only(value):
        return not (value.isdigit() and len(value) < 6)
    if prose:
        if low in _PROSE_STATUS_WORDS or low in _PASSPHRASE_STOP_WORDS or _ENGLISH_INFLECTION.match(value) \
                or not clause_end:
            return False
    return True


# Unicode bidi controls (LRM, RLM, ALM, embeddings, overrides, isolates) that right-to-left text puts
# around a left-to-right value: never part of a value
_BIDI_MARKS = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_ABJAD_RUN = re.compile("[\u0590-\u05ff\u0600-\u06ff\u0750-\u077f\ufb1d-\ufdff\ufe70-\ufeff]+$")


def _letters_only(value: str) -> bool:
    """Letters of any script only, with their combining marks (Devanagari and Thai vowel signs, Arabic
    harakat are marks, not letters, to ``str.isalpha``)."""
    return all(ch.isalpha() or unicodedata.category(ch)[0] == "M" for ch in value)


_CJK_TAIL_AT = re.compile(r"でございます|でした|です|であり|である|だよ|だ|で|입니다|이에요|예요|이고|이다|임|요")


def _ends_clause(text: str, end: int) -> bool:
    """Whether the value ending at ``end`` ends its clause: then comes the end of the text or line,
    sentence punctuation, or a connector word (:data:`_CLAUSE_CONNECTORS`)."""
    i = end
    while i < len(text) and text[i] in " \t":
        i += 1
    while i < len(text) and text[i] in _BIDI_MARKS:
        i += 1
    if i >= len(text) or text[i] in "\r\n.,;:!?()[]{}。，；！？、\"'`」』（،؛؟":  # or an aside: "X (staging)"
        return True
    tail = _CJK_TAIL_AT.match(text, i)  # ひまわり|です。, 해바라기|입니다
    if tail is not None and (tail.end() >= len(text) or not _CJK_RUN.match(text[tail.end()])):
        return True
    j = i
    while j < len(text) and not text[j].isspace():
        j += 1
    return text[i:j].lower().strip(".,;:") in _CLAUSE_CONNECTORS


# --------------------------------------------------------------------------------------------
# Our own regexes (compiled at import; the detect-secrets ones are compiled on first scan)
# --------------------------------------------------------------------------------------------

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
# Lower-case needles of _ASSIGN_RE's keywords, and the words that make "key" a keyword.
_KEYWORD_FINDER = re.compile(r"key|secret|token|passw|pwd|passphrase|credential|contrase")
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


# --------------------------------------------------------------------------------------------
# detect-secrets, loaded on first use
# --------------------------------------------------------------------------------------------


class _Candidate(NamedTuple):
    priority: int
    kind: str
    start: int
    end: int


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
    import ahocorasick

    from consolidate.rules import provider_rules

    finder = ahocorasick.Automaton()
    for needle in {*needles, *provider_rules.keywords(), *_AWS_ID_NEEDLES, *_LOGIN_NEEDLES, "aws", *_PROSE_WORDS_ALL}:
        if len(needle) == 1:  # "." and ":" occur in most notes: looked for with `in` (see scan)
            continue
        finder.add_word(needle, needle)
    finder.make_automaton()
    return finder


@functools.cache
def _detect_secrets() -> _DetectSecrets:
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector

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


# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_P_PRIVATE_KEY, _P_JWT, _P_PROVIDER, _P_VENDOR, _P_CONNECTION, _P_HEADER, _P_ASSIGNMENT, _P_KEY_MATERIAL = range(8)


def scan(text: str) -> list[Finding]:
    """Every secret in ``text``, sorted by position, never overlapping; ``[]`` means clean."""
    if not isinstance(text, str):
        raise TypeError(f"scan() takes a str, not {type(text).__name__}")
    if len(text) < 5:  # the shortest secret in a text: 口令:春天 (a password word, a separator, a 2-letter word)
        return []
    ds = _detect_secrets()
    # Every rule has needles: lower-case substrings one of which any match must contain. Looking
    # for them in the lower-cased text is a superset test, and costs far less than running the
    # regex: most notes skip most rules.
    low = text.lower()
    if len(low) != len(text):  # U+0130 lower-cases to two characters: keep offsets aligned
        low = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text).replace("\u0130", "i")
    candidates: list[_Candidate] = []
    add = candidates.append
    # every needle of the gate's rules and every keyword of gitleaks' rules, in one Aho-Corasick pass
    present = {needle for _, needle in ds.finder.iter(low)}
    present.update(c for c in ds.single_char_needles if c in low)

    for start, end in _private_keys(text, ds):
        add(_Candidate(_P_PRIVATE_KEY, "private-key", start, end))

    if "eyj" in low:
        for m in _JWT_RE.finditer(text):
            if ds.jwt_valid(m.group().rstrip(".")):
                add(_Candidate(_P_JWT, "jwt", m.start(), m.end()))

    # the provider rules one of whose needles occurs (most notes: none), in a fixed order
    for i in sorted({i for needle in present for i in ds.rules_by_needle.get(needle, ())}):
        kind, regex, span_of = ds.rules[i]
        for m in regex.finditer(text):
            span = span_of(m, text)
            if span is not None:
                add(_Candidate(_P_PROVIDER, kind, *span))

    candidates.extend(_aws(text, low, ds, present))
    candidates.extend(_vendor_rules(text, low, present, candidates))
    candidates.extend(_connection_strings(text))
    candidates.extend(_auth_headers(text, low))
    candidates.extend(_assignments(text, low))
    if not present.isdisjoint(_PROSE_WORDS_ALL):  # the secret-named words of prose, from the same pass
        candidates.extend(_prose_secrets(text, low))
    candidates.extend(_credential_pairs(text, low, present))
    candidates.extend(_userinfo_pairs(text))
    if not low.isascii():
        candidates.extend(_cjk_set_password(text))
    # key material with no keyword beside it (consolidate/rules/key_material.py): last, every rule above wins
    keys = list(_key_material().find(text, [(c.start, c.end) for c in candidates]))
    if keys:  # a run of key material holding a rule's match by chance: the whole run is the key
        candidates = [c for c in candidates if not any(a <= c.start and c.end <= b and (a, b) != (c.start, c.end)
                                                       for a, b in keys)]
        candidates.extend(_Candidate(_P_KEY_MATERIAL, _key_material().KIND, a, b) for a, b in keys)

    return _resolve(text, candidates)


@functools.cache
def _key_material():
    from consolidate.rules import key_material

    return key_material


def _resolve(text: str, candidates: list[_Candidate]) -> list[Finding]:
    """Keep the most specific finding where findings overlap; sort by position."""
    starts: list[int] = []  # kept spans, sorted by start and disjoint
    kept: list[_Candidate] = []
    for cand in sorted(candidates, key=lambda c: (c.priority, c.start, -c.end)):
        if cand.end <= cand.start:
            continue
        i = bisect.bisect_right(starts, cand.start)
        if i and kept[i - 1].end > cand.start:
            continue
        if i < len(kept) and kept[i].start < cand.end:
            continue
        starts.insert(i, cand.start)
        kept.insert(i, cand)
    return [Finding(c.kind, redact_preview(text[c.start : c.end], c.kind), c.start, c.end) for c in kept]


@functools.cache
def _provider_rules():
    from consolidate.rules import provider_rules

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


def _bare_name_value_ok(value: str, explicit: bool, clause_end: bool) -> bool:
    """A value given to a bare secret name (``secret``, ``token``, ``api key``, with no other name
    around it): password-shaped (6+ characters, letters and a digit or symbol, not an identifier, a
    version or another assignment: ``token: sunflower42``), or, after ``=`` or in quotes, a lower-case
    word of 6+ letters that ends its clause (``secret = sunflower``); never a placeholder, type or status
    word (``token = None``, ``token: string``, ``secret: required``)."""
    if "=" in value or _VERSION_TAG.match(value) or not clause_end:
        return False
    low = value.lower()
    if low in _PASSWORD_PLACEHOLDER_WORDS or low in _TYPE_WORDS or low in _PROSE_STATUS_WORDS:
        return False
    if _value_is_secret(value, password_named=True):
        return True
    return explicit and len(value) >= 6 and value.isalpha() and value == low and not _is_placeholder(value) \
        and not _ENGLISH_INFLECTION.match(value)


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
_VERSION_TAG = re.compile(r"(?i)^v?\d+(?:[.\-_+][a-z0-9]+)*$")
_URI_SCHEMES = frozenset("http https ftp ssh git file mailto urn data ws wss tcp udp jdbc s3 gs docker".split())


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


def _prose_password_ok(value: str) -> bool:
    """``with password VALUE`` (no ``=`` or ``:``) reads like prose as often as like a
    credential: the value must also hold a letter and a digit, and not be a word in markdown."""
    return (
        any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and not _is_word_like(value.strip("*_`~"))
    )


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


# --------------------------------------------------------------------------------------------
# Secret-named words in prose, in the languages agents write in
# --------------------------------------------------------------------------------------------
#
# "Das Passwort für die Staging-Datenbank ist Qm7#vLx29pK": a secret-named word, up to six words
# about what it is for, a copula or separator, the value. The keywords and copulas are the common
# words of the languages most used on GitHub (its Octoverse reports name, after English, Chinese,
# Spanish, Portuguese, Russian, Japanese, German, French, Korean, Hindi, Indonesian, Turkish,
# Polish, Italian, Ukrainian, Vietnamese, Persian and Arabic as the largest developer populations);
# each list is the everyday word for a password (and for a key, token or secret), in lower case.
# Password words take a password (6+ characters, letters and a digit or symbol, see
# _value_is_secret); key/token/secret words take only a token-like value (12+ characters).
_PROSE_PASSWORD_WORDS = (
    # en, de, nl
    "password", "passwords", "passphrase", "pass phrase", "passcode", "passwort", "passwörter", "kennwort", "wachtwoord",
    # es, pt, fr, it
    "contraseña", "contrasena", "clave", "senha", "palavra-passe", "mot de passe", "mdp",
    "parola d'ordine", "parola chiave",
    # ru/uk/be (stem: пароль, пароля, паролем, ...), pl, tr
    "парол", "hasło", "hasła", "haslo", "hasla", "şifre", "sifre", "parola",
    # id/ms, vi, hi, ar, fa
    "kata sandi", "kata laluan", "sandi", "mật khẩu", "mat khau", "पासवर्ड", "कूटशब्द",
    "كلمة المرور", "كلمة السر", "كلمة مرور", "كلمة سر", "رمز عبور", "گذرواژه",
    # ja, zh (simplified, traditional), ko
    "パスワード", "暗証番号", "密码", "密碼", "口令", "비밀번호", "패스워드", "비번", "암호",
    # cs/sk, hu, sv, da/no, fi, el, he, ro, ur, bn, th
    "heslo", "hesla", "heslem", "jelszó", "jelszava", "lösenord", "adgangskode", "passord", "salasana",
    "κωδικός πρόσβασης", "κωδικός", "συνθηματικό", "סיסמה", "סיסמא", "סיסמת", "parolă", "پاس ورڈ", "پاسورڈ",
    "পাসওয়ার্ড", "รหัสผ่าน",
    # access codes, passcodes and PIN codes, and German "Zugangsdaten" (login data): de, en, fr, es, pt, it,
    # nl, ru, pl, tr, id, ja, zh
    "zugangscode", "zugangsdaten", "zugangskennwort", "access code", "pin code", "pin-code", "pincode",
    "code d'accès", "code d'acces", "código de acceso", "codigo de acceso", "código de acesso", "codice di accesso",
    "toegangscode", "код доступа", "kod dostępu", "kod dostepu", "erişim kodu", "kode akses", "アクセスコード",
    "访问码", "訪問碼", "접속 코드", "접근 코드",
    # short names: pw (letters-only values only with "=" or quotes), pass and creds (password-shaped
    # values only: "tests pass: 12", "pass = skip"), pwd/passwd
    "pw", "pwd", "passwd", "pass", "creds", "credentials",
)
# Without a copula, a verb or a case form after the keyword makes a sentence, not a value: Russian and
# Ukrainian verb endings and genitive case ("Пароль лежит ...", "Пароль администратора"), Turkish tense and
# mood suffixes ("Şifre değişti", "Şifre girilmeli"), Indonesian/Malay verb prefixes ("Kata sandi disimpan")
_ZERO_COPULA_VERB_FORM = re.compile(
    r"(?i)(?:ть|ться|ет|ит|ат|ят|ется|ится|ал|ала|ало|али|ли|ен|ена|ено|ан|ана|ано|ого|его|ов|ев|ей|ых|их|ора|ера|теля|ля"
    r"|ться|ує|ює|іть)$"
    r"|(?:[dt][ıiuü]|yor|m[ıiuü]ş|mal[ıi]|mel[ıi]|[ae]bilir|[ıi]n[ıi]z|l[ıi]d[ıi]r)$"
    r"|^(?:di|ter|ber|meng|mem|men|me|peng|pem)[a-z]{3,}$"
)
# Short English names that take no inflection ("pwa", "passport", "credentialsFile" are other words) and
# are judged more strictly than a full password word (see _prose_value_ok).
_SHORT_PASSWORD_WORDS = frozenset({"pw", "pwd", "passwd", "pass", "creds", "credentials"})
_CREDENTIAL_WORDS = frozenset({"zugangsdaten"})  # "credentials": may name the user before the password
_SHAPE_ONLY_WORDS = frozenset({"pass", "creds", "credentials"})  # a password-shaped value only
_EQ_FOR_LETTERS_WORDS = frozenset({"pw"})  # letters-only only after "=" or in quotes
# Password words that also mean something else (Spanish "la clave es ..." = "the key point is ...", Italian
# "parola" = word): never given a passphrase of several unquoted words
_AMBIGUOUS_PASSWORD_WORDS = frozenset({"clave", "chave", "parola", "mdp", "sandi", "pw"})
# Languages whose present tense needs no copula: "Şifre ayçiçeği", "Пароль подсолнух", "كلمة المرور عباد
# الشمس", "Kata sandi bunga matahari", "A jelszó napraforgó", "הסיסמה חמנייה": a letters-only value right
# after such a keyword at the start of its clause (or after a Turkish possessive: "Veritabanı şifresi X").
# (Turkish "parola" is left out: in Italian it means "word", "Parola riservata".)
_ZERO_COPULA_WORDS = frozenset(
    ("şifre", "sifre", "парол", "كلمة المرور", "كلمة السر", "كلمة مرور", "كلمة سر", "סיסמה", "סיסמא", "kata sandi", "sandi",
     "kata laluan", "jelszó", "jelszava", "пароль", "סיסמת")
)
_PROSE_KEY_WORDS = (
    # de, es, pt, fr, it, nl
    "schlüssel", "zugangstoken", "geheimnis", "secreto", "llave", "chave", "segredo", "clé", "jeton",
    "chiave", "segreto", "sleutel", "geheim",
    # ru/uk, pl, tr, id, vi
    "ключ", "токен", "секрет", "klucz", "sekret", "anahtar", "kunci", "khóa", "mã thông báo",
    # ja, zh, ko, hi, ar, fa
    "キー", "トークン", "シークレット", "秘密鍵", "密钥", "密鑰", "秘钥", "令牌", "私钥", "토큰", "시크릿",
    "키", "कुंजी", "टोकन", "مفتاح", "رمز", "کلید",
    # en: a description between the name and the value ("the api key for staging is X"; the adjacent forms
    # are secret-assignment's), judged like a bare name's value (_bare_name_value_ok)
    "api key", "api token", "access token", "auth token", "secret key", "token", "secret",
)
_ENGLISH_KEY_WORDS = frozenset({"api key", "api token", "access token", "auth token", "secret key", "token", "secret"})
_EN_VALUE_MARK = re.compile(r"[ \t](?:is|was|are|will be)[ \t]|[:=]")  # what must follow an English key word
# Copulas and separators between the description and the value ("ist", "es", "est", "é", "è",
# "jest"/"to", "это", "—", "adalah", "là", "है", "هي", ":" ...). In Chinese, Japanese and Korean the
# description comes before the keyword and a particle (は, 是, 为, 는) follows it.
_PROSE_COPULAS = frozenset(
    """is was are ist lautet lauten lautete lauteten war es era est était é è são jest brzmi это є является равен adalah ialah
    yaitu là है था هي هو است = : - — – -> → ＝ ：
    je zní är er on είναι este হল হলো היא הוא ہے كانت كان""".split()
)
# copulas that close the clause after the value (Hindi, Urdu, Persian): "पासवर्ड सूरजमुखी है"
_FINAL_COPULAS = frozenset("है था थी हैं ہے تھا است هست".split())
# Polish "hasło do bazy to X": "to" is a copula only after a Polish keyword ("according to X")
_POLISH_KEYWORDS = frozenset({"hasło", "hasła", "haslo", "hasla", "klucz", "sekret"})
_FILE_NAME = re.compile(
    r"(?i)[\w.-]+\.(?:sql|py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|sh|env|pem|key|crt|conf|cfg|ini|log|csv"
    r"|html|go|rs|java|rb|php|lock|xml|gradle|kt|swift|c|h|cpp)"
)
_PROSE_TWO_WORD_COPULAS = frozenset({("set", "to"), ("changed", "to"), ("geändert", "auf"), ("set", "ke"),
                                     ("reset", "to"), ("updated", "to"), ("will", "be"), ("is", "now"),
                                     ("ist", "jetzt"), ("es", "ahora"), ("est", "maintenant"), ("é", "agora")})
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PROSE_KW_RE = re.compile(
    "(?i)(?P<kw>" + "|".join(sorted(map(re.escape, _PROSE_PASSWORD_WORDS + _PROSE_KEY_WORDS), key=len, reverse=True))
    + ")(?P<inflect>[a-zà-ɏа-яёіїєґ]{0,6})"  # Passwortes, пароля, şifresi, hasła
)
_PROSE_WORDS_ALL = {w.lower() for w in _PROSE_PASSWORD_WORDS + _PROSE_KEY_WORDS}
# one finder for ASCII text (most notes: the non-ASCII keywords cannot occur), one for the rest
_PROSE_FINDER_ASCII = re.compile("|".join(sorted((re.escape(w) for w in _PROSE_WORDS_ALL if w.isascii()),
                                                 key=len, reverse=True)))
_PROSE_FINDER = re.compile("|".join(sorted(map(re.escape, _PROSE_WORDS_ALL), key=len, reverse=True)))
_PROSE_PASSWORD_SET = frozenset(_PROSE_PASSWORD_WORDS)
# right after the keyword: "=", ":", or a CJK particle (パスワードは, 密码是, 비밀번호는), then the value
# (a topic particle は/是/为/는/은 may also take a value in a CJK script: パスワードはひまわり; the subject
# and object markers が/を/이/가 only an ASCII one: "パスワードが必要" says a password is needed)
_PROSE_ATTACHED = re.compile(
    rf"[ \t]*(?:[:=：＝]|[はがを是为為는은이가](?=[ \t]*[!-~])|[は是为為는은](?=[ \t]*[「『\"'{_CJK_CLASS}]))[ \t]*"
)
_PROSE_TOKEN = re.compile(r"[^\s]+")
_PROSE_QUOTES = "\"'`«»„“”「」『』"
_PROSE_TRAIL = ".,;:)]}>!?…，；、。！？،؛؟" + "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]")
# A copula or polite ending after a value in a CJK script: ひまわりです, さくらでした, 해바라기입니다
_CJK_TAIL = re.compile(r"(?:でございます|でした|です|であり|である|だよ|だ|で|입니다|이에요|예요|이고|이다|임|요)$")
_CJK_STOP = re.compile(r"[、。，；：！？,;!?()（）]")
# Words that make a CJK "value" a sentence about the password rather than the password: status and
# policy words (required, not set, changed, reset, hashed, length, characters, same, empty), words
# that point elsewhere (here, below, see), question words, in Japanese, Chinese and Korean.
_CJK_PROSE_WORDS = re.compile(
    "必須|必要|不要|未設定|設定|変更|更新|再設定|リセット|初期化|空欄|空|なし|無し|ない|ありません|不明|ハッシュ|暗号|同じ|任意"
    "|省略|非表示|伏せ|忘れ|間違|正し|無効|有効|期限|定期|保存|管理|入力|確認|要件|ポリシー|長さ|文字|桁|以上|以下|下記|上記"
    "|こちら|ここ|これ|それ|あれ|別途|後で|どこ|なに|何|いつ|誰|どう|秘密|共有|送り|教え|聞い|使っ|使う|ください|します"
    "|ます|ません|れる|られ|した|して|する|という|について"
    "|必填|必需|需要|未设|设置|已|重置|更改|修改|为空|无|错误|正确|无效|有效|过期|相同|加密|隐藏|保密|长度|字符|位数|策略"
    "|要求|输入|确认|管理|定期|这里|如下|见下|下面|同上|什么|哪里|多少|怎么|不能|不要|请|吗|呢|吧|了"
    "|필수|없음|없습니다|미설정|변경|초기화|비어|암호화|동일|틀|잘못|만료|숨김|입력|확인|정책|길이|글자|자리|이상|이하|관리"
    "|필요|여기|아래|위|다음|무엇|뭐|어디|언제|합니다|하세요|했|됩니다|되었|있"
)


def _cjk_value_is_prose(value: str) -> bool:
    """A value in a CJK script given to a password word that is a phrase about the password (status,
    policy, a pointer, a question, a verb ending: :data:`_CJK_PROSE_WORDS`), or longer than a word
    (16+ characters): パスワードは必須, 密码已重置, 비밀번호는 필수입니다, パスワードは定期的に変更されます."""
    return len(value) > 16 or _CJK_PROSE_WORDS.search(value) is not None
# A word after the keyword that makes the phrase about a secret, not a secret: "password policy is
# ...", "Passwort-Richtlinie ist", "la longitud de la contraseña es"...
_PROSE_METADATA = frozenset(
    """hash hashes hashing hashed policy policies manager reset length rules requirements rotation
    strength field prompt expiry change complexity hint hints
    richtlinie richtlinien länge regeln anforderungen zurücksetzen
    política longitud requisitos reglas gestor restablecer politique longueur règles exigences
    gestionnaire réinitialisation comprimento gerenciador redefinição politica lunghezza requisiti regole
    длина политика требования менеджер сброс хэш хеш długość polityka wymagania menedżer
    uzunluğu politikası gereksinimleri sıfırlama lengte beleid vereisten panjang kebijakan""".split()
)
# "set the router password to X", "changed the db password to X"
_SET_BEFORE = re.compile(r"\b(?:set|sets|setting|change[ds]?|changing|reset|update[ds]?)\b[^.\n]{0,48}$")
_TURKISH_SUFFIX = re.compile(r"['’][A-Za-zçğıöşüÇĞİÖŞÜ]{1,5}$")
_PROSE_WINDOW = 160  # characters after the keyword searched for the value
_PROSE_WORDS = 10  # words after the keyword searched for a copula


_HEBREW_ARABIC_PREFIX = "הושבלמכوفبل"  # one-letter prefixes written onto the next word (the, and, in, to)


def _prose_secrets(text: str, low: str) -> Iterator[_Candidate]:
    """A secret-named word of any language of :data:`_PROSE_PASSWORD_WORDS` and
    :data:`_PROSE_KEY_WORDS`, then within ten words a copula or separator
    (:data:`_PROSE_COPULAS`) and a value that :func:`_value_is_secret` accepts; or the value
    right after the word (``Passwort: X``, ``パスワードはX``, ``şifresi X``); or, in a language without a
    present-tense copula, a word value right after the keyword (``Şifre ayçiçeği``,
    :data:`_ZERO_COPULA_WORDS`); or, in Hindi, Urdu and Persian, the value before a closing copula
    (``पासवर्ड सूरजमुखी है``). A value of several words (``correct horse battery staple``, ``عباد الشمس``)
    is a passphrase when :func:`_passphrase_span` accepts it."""
    for hit in (_PROSE_FINDER_ASCII if low.isascii() else _PROSE_FINDER).finditer(low):
        pos = hit.start()
        m = _PROSE_KW_RE.match(low, pos)
        if m is None:
            continue
        kw = m.group("kw").lower()
        if pos and text[pos - 1].isalpha() and not _CJK_RUN.match(text[pos - 1]) and not _CJK_RUN.match(text[pos]):
            # inside a word ("Klavier" holds no "clave"), but a Hebrew/Arabic one-letter prefix may be
            # written onto the keyword: הסיסמה, وكلمة
            if not (text[pos - 1] in _HEBREW_ARABIC_PREFIX and (pos < 2 or not text[pos - 2].isalpha())):
                continue
        if (kw in _SHORT_PASSWORD_WORDS or kw in _ENGLISH_KEY_WORDS) and m.group("inflect"):
            continue  # "pwa", "passport", "passes", "tokens", "secretly": other words
        password_named = kw in _PROSE_PASSWORD_SET
        end = m.end()
        if kw in _ENGLISH_KEY_WORDS and not _EN_VALUE_MARK.search(text, end, min(len(text), end + 80)):
            continue  # "max token count", "secret sauce": no copula or separator after the name
        attached = _PROSE_ATTACHED.match(text, end)
        if attached is not None and attached.end() > end:
            span = _prose_value(text, attached.end())
            explicit = "=" in attached.group() or "＝" in attached.group()
            quoted = text[attached.end():attached.end() + 1] in _PROSE_QUOTES
            phrase = (_passphrase_span(text, attached.end(), explicit)
                      if quoted and password_named and kw not in _SHAPE_ONLY_WORDS else None)
            if phrase:
                yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
            elif span and _prose_value_ok(text, span, kw, prose=not explicit):
                yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
            elif password_named and kw not in _SHAPE_ONLY_WORDS and kw not in _AMBIGUOUS_PASSWORD_WORDS:
                phrase = _passphrase_span(text, attached.end(), explicit)
                if phrase:
                    yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
            continue
        if end < len(text) and text[end] not in " \t":
            continue
        limit = min(len(text), end + _PROSE_WINDOW)
        newline = text.find("\n", end, limit)
        tokens = list(_PROSE_TOKEN.finditer(text, end, newline if newline != -1 else limit))[:_PROSE_WORDS + 1]
        words = [t.group().lower().strip(_PROSE_QUOTES) for t in tokens]
        for j, word in enumerate(words):
            if word.strip("-_:*`") in _PROSE_METADATA:
                break
            value_at = None
            if j and word in _FINAL_COPULAS and password_named and j <= 4 and _ends_clause(text, tokens[j].end()):
                # Hindi, Urdu, Persian: the value comes before the copula ("पासवर्ड सूरजमुखी है")
                span = _prose_value(text, tokens[0].start()) if j == 1 else \
                    _passphrase_span(text, tokens[0].start(), False, stop=tokens[j].start())
                if span and (j > 1 or _password_is_secret(text[span[0]:span[1]], prose=True)):
                    yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
                break
            if word in _PROSE_COPULAS or (word == "to" and kw in _POLISH_KEYWORDS):
                value_at = j + 1
            elif j == 0 and word == "to" and _SET_BEFORE.search(low, max(0, pos - 60), pos):
                value_at = j + 1
            elif j and (words[j - 1], word) in _PROSE_TWO_WORD_COPULAS:
                value_at = j + 1
            elif word[-1:] in (":", "：", "=") and len(word) > 1:
                value_at = j + 1
            elif j == 0:  # "Passwort Qm7#vLx29pK": no copula, a password-shaped value only
                span = _prose_value(text, tokens[0].start())
                if span and _prose_password_ok(text[span[0]:span[1]]) and _value_is_secret(text[span[0]:span[1]], password_named):
                    yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
                    break
                if span and kw in _ZERO_COPULA_WORDS and _clause_starts_at(text, pos, m.group("inflect")) \
                        and not _ZERO_COPULA_VERB_FORM.search(text, span[0], span[1]):
                    # "Şifre ayçiçeği", "Пароль подсолнух", "كلمة المرور عباد الشمس"
                    if _prose_value_ok(text, span, kw, prose=True):
                        yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
                        break
                    phrase = _passphrase_span(text, tokens[0].start(), False, max_words=3)
                    if phrase:
                        yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
                        break
            if value_at is not None and value_at < len(tokens):
                span = _prose_value(text, tokens[value_at].start())
                explicit = word in ("=", "＝") or word.endswith("=")
                if span and _prose_value_ok(text, span, kw, prose=not explicit):
                    yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)
                    break
                if password_named and kw not in _SHAPE_ONLY_WORDS and (
                        kw not in _AMBIGUOUS_PASSWORD_WORDS or text[tokens[value_at].start()] in _PROSE_QUOTES):
                    phrase = _passphrase_span(text, tokens[value_at].start(), explicit)
                    if phrase:
                        yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *phrase)
                        break
            if tokens[j].group()[-1] in ".!?。！？" and word not in _PROSE_COPULAS:
                break  # end of the sentence


# "changed the password to VALUE" in Chinese, Japanese and Korean, where the verb follows the keyword
# (zh: 密码改为X, 密码已设为「X」) or closes the clause after the value (ja: パスワードを「X」に変更した,
# パスワードはXに設定; ko: 비밀번호를 X로 변경): a quoted value (「」『』""), or an unquoted one that is a
# password (:func:`_password_is_secret`) and not a description of one (a new one, the default, random)
_CJK_SET_VALUE = r"(?:[「『\"“'](?P<q>[^」』\"”'\n]{1,64})[」』\"”']|(?P<u>[^\s「」『』\"“”'、。，,；;：:]{2,64}?))"
_CJK_SET_RES = (
    re.compile(r"(?:パスワード|暗証番号|アクセスコード)(?:を|は|も)?[ \t]*" + _CJK_SET_VALUE
               + r"[ \t]*(?:に|へ)[ \t]*(?:変更|設定|再設定|変え|し(?:た|ま|て))"),
    re.compile(r"(?:密码|密碼|口令|访问码|訪問碼)[ \t]*(?:已经|已|被|都)?[ \t]*"
               r"(?:改为|改成|设为|设置为|设置成|设成|更改为|修改为|重置为|换成|改為|設為|設置為|設成|更改為|修改為|重置為|換成)"
               r"[ \t:：]*" + _CJK_SET_VALUE.replace("{2,64}?", "{2,64}")),
    re.compile(r"(?:비밀번호|패스워드|비번|암호)(?:를|을|는|은|도)?[ \t]*" + _CJK_SET_VALUE
               + r"(?:으로|로)[ \t]*(?:변경|설정|바꿈|바꿨|바꾸|바뀌|재설정)"),
)
# what a value of such a sentence is when it describes the password instead of being it
_CJK_SET_NOT_VALUE = re.compile(
    r"新|새|임의|랜덤|무작위|ランダム|任意|随机|隨機|もの|こと|之前|以前|原来|一样|同じ|初期|默认|默認|기본|デフォルト|強い|强|強|複雑|复杂"
    r"|自分|自己|本人|他的|彼の|それ|这个|那个|이것|그것|다른|別の|别的|什么|何|뭐|무엇"
    r"|至少|最少|不少于|以上|以下|位|桁|자리|글자|文字|字符|定期|주기|적$|的$|的に$|に$")


def _cjk_set_password(text: str) -> Iterator[_Candidate]:
    """The value of "set/changed the password to X" in Chinese, Japanese and Korean (:data:`_CJK_SET_RES`)."""
    for regex in _CJK_SET_RES:
        for m in regex.finditer(text):
            group = "q" if m.group("q") is not None else "u"
            s0, e0 = m.span(group)
            if group == "u":
                span = _prose_value(text, s0) if e0 - s0 >= 2 else None
                if span is None:
                    continue
                s0, e0 = span[0], min(span[1], e0)
            value = text[s0:e0].strip()
            if not value or _CJK_SET_NOT_VALUE.search(value):
                continue
            if _password_is_secret(value, prose=group == "u"):
                yield _Candidate(_P_ASSIGNMENT, "secret-assignment", s0, s0 + len(value))


def _clause_starts_at(text: str, pos: int, inflect: str) -> bool:
    """Whether the keyword at ``pos`` opens its clause (only list marks, markup or an article before it
    on its line or since the last sentence mark), or carries a Turkish possessive (``Veritabanı şifresi``:
    "the database's password")."""
    if inflect in ("si", "sı", "i", "ı", "leri", "ları"):
        return True
    i = pos
    while i > 0 and text[i - 1] not in "\n.!?;:،؛؟。！？":
        i -= 1
    before = text[i:pos].strip(" \t-*•>#_`" + _BIDI_MARKS).lower()
    return before in ("", "a", "az", "the", "my", "our")


def _prose_value_ok(text: str, span: tuple[int, int], kw: str, prose: bool) -> bool:
    """A value given to a secret-named word ``kw`` of :func:`_prose_secrets`: a password word takes any
    value :func:`_password_is_secret` accepts; ``pass``/``creds`` (:data:`_SHAPE_ONLY_WORDS`) only a
    password-shaped one; ``pw`` a letters-only one only after ``=`` or in quotes; other words a token-like
    one."""
    value = text[span[0]:span[1]]
    if kw in _SHAPE_ONLY_WORDS:
        if prose and span[0] > 0 and text[span[0] - 1] not in " \t\"'":
            return False  # "pass:ci-check": a name, not "pass: X"
        return "=" not in value and not _VERSION_TAG.match(value) and _value_is_secret(value, password_named=True)
    if kw in _EQ_FOR_LETTERS_WORDS:
        quoted = span[0] > 0 and text[span[0] - 1] in _PROSE_QUOTES
        if prose and not quoted and _letters_only(value):
            return False
        if prose and not quoted and (text[span[0] - 1] not in " \t" or _SNAKE_IDENTIFIER.match(value)):
            return False  # "npm run pw:biweekly-auto": a script name
        return not _VERSION_TAG.match(value) and _password_is_secret(value, prose, _ends_clause(text, span[1]))
    if kw in _PROSE_PASSWORD_SET:
        if kw in _CREDENTIAL_WORDS and "=" in value:
            return False  # "Zugangsdaten: Benutzer=admin, ...": the user part of the credentials
        return _password_is_secret(value, prose, _ends_clause(text, span[1]))
    if kw in _ENGLISH_KEY_WORDS:
        return _value_is_secret(value, False) or _bare_name_value_ok(value, explicit=not prose,
                                                                      clause_end=_ends_clause(text, span[1]))
    return _value_is_secret(value, False)


# a word of a passphrase: letters of any script (with combining marks), digits, an inner hyphen or apostrophe
_PASSPHRASE_WORD = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f\u0900-\u097f\u064b-\u065f'’-](?=\S))*", re.UNICODE)
_PASSPHRASE_MAX_WORDS = 8


def _passphrase_span(text: str, start: int, explicit: bool, stop: int | None = None,
                     max_words: int = _PASSPHRASE_MAX_WORDS) -> tuple[int, int] | None:
    """The span of a passphrase of 2-8 words given to a password word at ``start``: quoted (``password:
    "correct horse battery staple"``), or unquoted up to the end of its clause (the end of the line,
    sentence punctuation, or a connector such as "for": ``the root password for staging is correct horse
    battery staple``), or up to ``stop``. None when the words read as a description of the password
    rather than a password: a function word or imperative of :data:`_PASSPHRASE_STOP_WORDS` ("stored in
    the vault", "see below", "use SSO"), a status word after the first ("case sensitive"), a participle
    or adverb ("rotated monthly"), a word naming a secret or its store ("the vault token"), a capitalised
    word after the first in an unquoted value (product names: "Azure Key Vault"), a word that is not
    letters (and digits), a copula or connector inside (a sentence), half or more of its words status words
    ("case sensitive"), or more than ``max_words`` words before the clause ends."""
    while start < len(text) and text[start] in _BIDI_MARKS + " \t":
        start += 1
    if start >= len(text):
        return None
    quote = text[start]
    closers = {"\"": "\"", "'": "'", "`": "`", "«": "»", "„": "“", "“": "”", "「": "」", "『": "』"}
    if quote in closers:
        close = text.find(closers[quote], start + 1, min(len(text), start + 256))
        if close == -1 or "\n" in text[start + 1:close]:
            return None
        s, e = start + 1, close
        quoted = True
    else:
        s = start
        e = stop if stop is not None else _clause_end(text, start)
        quoted = False
    raw = text[s:e].strip(_BIDI_MARKS + " \t")
    if not raw:
        return None
    s = text.index(raw, s)
    e = s + len(raw)
    parts = raw.split()
    if not 2 <= len(parts) <= max_words:
        return None
    status = 0
    for part in parts:
        if not _PASSPHRASE_WORD.fullmatch(part) or part.isdigit():
            return None
        low = part.lower()
        if low in _PASSPHRASE_STOP_WORDS or low in _PASSWORD_PLACEHOLDER_WORDS or low in _TYPE_WORDS:
            return None
        if low in _PROSE_COPULAS or low in _FINAL_COPULAS or low in _CLAUSE_CONNECTORS:
            return None  # a sentence: "pentru server este floarea"
        if _PASSPHRASE_META.match(low) or low in _PROSE_METADATA or (not quoted and _ENGLISH_INFLECTION.match(part)):
            return None
        status += low in _PROSE_STATUS_WORDS
    if 2 * status >= len(parts):
        return None  # "case sensitive", "strong unique"
    if not quoted and (any(p.isupper() and len(p) > 1 for p in parts) or all(p[:1].isupper() for p in parts)):
        return None  # product names and acronyms: "Azure Key Vault", "AWS SSO"
    if sum(map(len, parts)) < 6 or _CJK_RUN.search(raw):
        return None
    return s, e


def _clause_end(text: str, start: int) -> int:
    """Where the clause that starts at ``start`` ends: before the end of the line, a sentence or clause
    mark followed by a space or the end, an aside in parentheses, or a connector word
    (:data:`_CLAUSE_CONNECTORS`)."""
    line_end = text.find("\n", start)
    limit = min(len(text), start + 200) if line_end == -1 else min(line_end, start + 200)
    for m in re.finditer(r"\S+", text[start:limit]):
        word = m.group()
        if m.start() and word.lower() in _CLAUSE_CONNECTORS:
            return start + m.start()
        if word[0] in "([{":
            return start + m.start()
        if word[-1] in ".,;:!?،؛؟。，；！？)" or word[-1] in _BIDI_MARKS:
            return start + m.end() - 1 if word[-1] not in _BIDI_MARKS else start + m.end()
    return limit


def _prose_value(text: str, start: int) -> tuple[int, int] | None:
    """The span of the value that starts at ``start``: up to white space, without enclosing quotes,
    trailing punctuation, a Turkish case suffix (``'dir``) or a CJK tail (``です``, ``입니다``)."""
    m = _PROSE_TOKEN.match(text, start)
    if m is None:
        return None
    s, e = m.span()
    while s < e and (text[s] in _PROSE_QUOTES or text[s] in _BIDI_MARKS):
        s += 1
    cjk = _CJK_RUN.search(text, s, e)
    if cjk is not None and cjk.start() == s:
        # a value in a CJK script (パスワード: ひまわり, 密码：向日葵): up to the end of the token or its
        # first punctuation mark (ひまわり、ユーザー名は…), less a copula tail (ひまわりです, 해바라기입니다)
        stop = _CJK_STOP.search(text, s, e)
        if stop is not None:
            e = stop.start()
        while e > s and (text[e - 1] in _PROSE_QUOTES or text[e - 1] in _PROSE_TRAIL):
            e -= 1
        tail = _CJK_TAIL.search(text, s, e)
        if tail is not None and tail.start() > s:
            e = tail.start()
    elif cjk is not None:
        e = cjk.start()
    while e > s and (text[e - 1] in _PROSE_QUOTES or text[e - 1] in _PROSE_TRAIL):
        e -= 1
    suffix = _TURKISH_SUFFIX.search(text, s, e)
    if suffix is not None:
        e = suffix.start()
    if e <= s or _FILE_NAME.fullmatch(text, s, e):
        return None
    return s, e
