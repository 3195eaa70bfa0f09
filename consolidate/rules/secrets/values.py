"""Whether a value is secret material: Shannon entropy, placeholders, references, paths, identifiers
and the shape of values given to secret-named and password-named words."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

from consolidate.rules.secrets.words import _CLAUSE_CONNECTORS, _METADATA_SUFFIXES, _PASSPHRASE_STOP_WORDS, _PASSWORD_PLACEHOLDER_WORDS, _PATH_ROOTS, _PLACEHOLDER_WORDS, _PROSE_STATUS_WORDS, _TYPE_WORDS


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


# A word in a value of several words that says what the value is, not what it holds
_PASSPHRASE_META = re.compile(
    r"(?i)^(?:\w*passw\w*|\w*secrets?|\w*tokens?|(?:api|private|secret|access|ssh|gpg|pgp|master)?[-_]?keys?"
    r"|vaults?|managers?|env|\.env|credentials?|creds|logins?"
    r"|accounts?|users?|usernames?)$")

# participles and adverbs: rotated, missing, monthly; stocké, guardada, almacenado, gespeichert
_ENGLISH_INFLECTION = re.compile(
    r"(?i)^(?:[a-z]{2,8}(?:ed|ing|ly|able|ible)|\w{2,12}(?:é|ée|és|ées|ado|ada|ido|ida)|ge\w{2,12}(?:t|en))$"
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


# Lower-case needles of _ASSIGN_RE's keywords, and the words that make "key" a keyword.
_KEYWORD_FINDER = re.compile(r"key|secret|token|passw|pwd|passphrase|credential|contrase")


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


_VERSION_TAG = re.compile(r"(?i)^v?\d+(?:[.\-_+][a-z0-9]+)*$")


def _prose_password_ok(value: str) -> bool:
    """``with password VALUE`` (no ``=`` or ``:``) reads like prose as often as like a
    credential: the value must also hold a letter and a digit, and not be a word in markdown."""
    return (
        any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and not _is_word_like(value.strip("*_`~"))
    )


_FILE_NAME = re.compile(
    r"(?i)[\w.-]+\.(?:sql|py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|sh|env|pem|key|crt|conf|cfg|ini|log|csv"
    r"|html|go|rs|java|rb|php|lock|xml|gradle|kt|swift|c|h|cpp)"
)
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]")

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
