"""The secret corpus: agent working notes that hold secrets, and ordinary notes that must pass.

The repository holds no secret: ``secrets.jsonl`` holds note *templates* with placeholders such as
``{secret:openai_project}``, and this module fills each one at load time with a fake value in the
real format (documented prefix, length and alphabet), drawn from a seeded ``random.Random``. Every
prefix below is built from pieces, so that no literal in the repository looks like a live credential
to a secret scanner or to GitHub push protection.

``ordinary.jsonl`` holds the notes the gate must let through: ordinary dev notes and the look-alikes
(empty assignments, placeholders, policy text, paths of secret files, commit SHAs, UUIDs, content
hashes, connection strings without a password, ...). Their random parts (``{value:sha40}``,
``{value:uuid}``, ...) are filled the same way, so each seed gives fresh hashes and ids.

Each line of either file is ``{"expect": "block"|"allow", "format": ..., "text": ...}``;
:func:`load` returns :class:`Entry` objects with an id, the filled text and, for a blocked note, the
secret values that must never show in a finding's preview or in ``redact()``'s output.

Used by ``tests/unit/rules/test_secret_corpus.py`` and ``benchmarks/secrets_bench.py``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import re
import string
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = ["Entry", "load", "SECRET_KINDS", "VALUE_KINDS"]

HERE = Path(__file__).resolve().parent
B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
BASE32 = string.ascii_uppercase + "234567"
LOWER_DIGITS = string.ascii_lowercase + string.digits

_PLACEHOLDER = re.compile(r"\{(secret|value):([a-z0-9_]+)\}")


@dataclass(frozen=True)
class Entry:
    """One corpus note. ``secrets`` are the strings that must never survive redaction (for a PEM
    key: its base64 lines); empty for an ``allow`` note."""

    id: str
    expect: str  # "block" | "allow"
    format: str
    text: str
    secrets: tuple[str, ...] = ()


class _Gen:
    """Fake values in real formats, from one seeded RNG."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def rand(self, n: int, alphabet: str = B62) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def digits(self, n: int) -> str:
        return str(self.rng.randint(1, 9)) + self.rand(n - 1, string.digits)

    def b64url(self, data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    def password(self) -> str:
        """A human-made password: a capitalised syllable run, digits and a symbol, shuffled a bit."""
        consonants, vowels = "bcdfghjklmnprstvwxz", "aeiou"
        word = "".join(self.rng.choice(consonants) + self.rng.choice(vowels) for _ in range(self.rng.randint(3, 5)))
        word = word.capitalize()
        tail = self.rand(self.rng.randint(2, 4), string.digits) + self.rng.choice("!#%&*+?~^")
        middle = self.rand(self.rng.randint(2, 5), B62)
        return word + middle + tail

    def jwt(self) -> str:
        header = self.b64url(json.dumps({"alg": self.rng.choice(["HS256", "RS256"]), "typ": "JWT"}).encode())
        claims = {
            "sub": str(uuid.UUID(int=self.rng.getrandbits(128))),
            "iat": 1718000000 + self.rng.randint(0, 10**7),
            "exp": 1728000000 + self.rng.randint(0, 10**7),
            "role": self.rng.choice(["admin", "service_role", "authenticated", "editor"]),
        }
        payload = self.b64url(json.dumps(claims).encode())
        sig = hmac.new(self.rng.randbytes(32), f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{self.b64url(sig)}"

    def pem(self, label: str, size: int) -> tuple[str, list[str]]:
        der = b"\x30\x82" + size.to_bytes(2, "big") + self.rng.randbytes(size)
        encoded = base64.b64encode(der).decode()
        lines = [encoded[i : i + 64] for i in range(0, len(encoded), 64)]
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----", lines


_PK = "PRIVATE" + " KEY"  # the PEM label, in pieces


def _pem_rsa(g: _Gen):
    block, lines = g.pem("RSA " + _PK, 1190)
    return block, lines


def _pem_pkcs8(g: _Gen):
    return g.pem(_PK, 1214)


def _pem_ec(g: _Gen):
    return g.pem("EC " + _PK, 119)


def _pem_openssh(g: _Gen):
    return g.pem("OPENSSH " + _PK, 400)


def _pem_one_line(g: _Gen):
    block, lines = g.pem(_PK, 1214)
    return block.replace("\n", " "), lines


def _pem_json(g: _Gen):
    """The private_key field of a GCP service-account JSON: newlines escaped as ``\\n``."""
    block, lines = g.pem(_PK, 1214)
    return json.dumps(block + "\n")[1:-1], lines


def _pem_cut(g: _Gen):
    """A key pasted into a note and cut off before the END line (and its last lines)."""
    block, lines = g.pem("RSA " + _PK, 1190)
    kept = g.rng.randint(6, len(lines) - 4)
    return f"-----BEGIN RSA {_PK}-----\n" + "\n".join(lines[:kept]), lines[:kept]


def _pem_encrypted(g: _Gen):
    block, lines = g.pem("ENCRYPTED " + _PK, 1250)
    return block, lines


def _pem_tail(g: _Gen):
    """The last two lines of a PEM body, pasted without the armour: a full line and a short one."""
    _, lines = g.pem("RSA " + _PK, 1190)
    return "\n".join(lines[-2:]), lines[-2:]


def _pem_legacy_encrypted(g: _Gen):
    _, lines = g.pem("X", 600)
    dek = g.rand(32, HEX).upper()
    head = f"-----BEGIN RSA {_PK}-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{dek}\n\n"
    return head + "\n".join(lines) + f"\n-----END RSA {_PK}-----", lines


def _aws_key_id(g: _Gen) -> str:
    return "AK" + "IA" + g.rand(16, BASE32)


def _aws_temp_key_id(g: _Gen) -> str:
    return "AS" + "IA" + g.rand(16, BASE32)


_WORDS_EN = """correct horse battery staple purple monkey dishwasher orange tiger river window
    marble falcon copper meadow lantern pepper violet harbor thunder cactus""".split()
_WORDS_DE = "sonnenblume regenbogen schmetterling apfelbaum wolkenkratzer eichhörnchen".split()
_WORDS_RU = "подсолнух радуга бабочка яблоня черепаха одуванчик".split()
_WORDS_JA = "ひまわり さくら たんぽぽ サクラ ヒマワリ 紫陽花 朝顔 富士山 ねこ ゆきだるま".split()
_WORDS_ZH = "向日葵 彩虹 蝴蝶 苹果树 长城 熊猫 春天 月亮".split()
_WORDS_KO = "해바라기 무지개 나비 사과나무 거북이 민들레 고양이".split()
# letters-only passwords in more languages (a review found Arabic, Turkish and Czech ones stored)
_WORDS_AR = "ياسمين زنبق نرجس غزال قمر نخلة".split()
_WORDS_TR = "ayçiçeği gökkuşağı kelebek papatya kaplumbağa karanfil".split()
_WORDS_CS = "slunečnice duha motýl jabloň želva pampeliška".split()
_WORDS_HE = "חמנייה קשת פרפר צבעוני שושנה".split()
_WORDS_HI = "सूरजमुखी इंद्रधनुष तितली कछुआ".split()

_GREETINGS = ("hello from the staging box", "build finished without errors", "Grüße aus dem Testlauf")

#: kind -> generator; a generator returns the value, or (text, secrets) when the text inserted
#: differs from what must not survive (PEM keys: the armour stays, the body lines must go).
SECRET_KINDS: dict[str, Callable[[_Gen], object]] = {
    # OpenAI: legacy sk-<20>T3BlbkFJ<20>, project keys sk-proj-..., service accounts sk-svcacct-...
    "openai_legacy": lambda g: "sk-" + g.rand(20) + "T3Blbk" + "FJ" + g.rand(20),
    "openai_project": lambda g: "sk-" + "proj-" + g.rand(74, B64URL) + "T3Blbk" + "FJ" + g.rand(74, B64URL),
    "openai_svcacct": lambda g: "sk-" + "svcacct-" + g.rand(74, B64URL) + "T3Blbk" + "FJ" + g.rand(74, B64URL),
    "openrouter": lambda g: "sk-" + "or-v1-" + g.rand(64, HEX),
    "anthropic": lambda g: "sk-" + "ant-" + "api03-" + g.rand(93, B64URL) + "AA",
    "anthropic_admin": lambda g: "sk-" + "ant-" + "admin01-" + g.rand(93, B64URL) + "AA",
    "aws_key_id": _aws_key_id,
    "aws_temp_key_id": _aws_temp_key_id,
    "aws_secret": lambda g: g.rand(40, B64),
    "github_classic": lambda g: "gh" + "p_" + g.rand(36),
    "github_oauth": lambda g: "gh" + "o_" + g.rand(36),
    "github_app": lambda g: "gh" + "s_" + g.rand(36),
    "github_pat": lambda g: "github" + "_pat_" + "11" + g.rand(20, BASE32) + "_" + g.rand(59),
    "slack_bot": lambda g: "xo" + "xb-" + g.digits(12) + "-" + g.digits(13) + "-" + g.rand(24),
    "slack_user": lambda g: "xo" + "xp-" + g.digits(12) + "-" + g.digits(12) + "-" + g.digits(13) + "-" + g.rand(32, HEX),
    "slack_app": lambda g: "xa" + "pp-1-A" + g.rand(10, BASE32) + "-" + g.digits(13) + "-" + g.rand(64, HEX),
    "slack_webhook": lambda g: "https://hooks." + "slack.com/services/T" + g.rand(10, BASE32) + "/B"
    + g.rand(10, BASE32) + "/" + g.rand(24),
    "stripe_secret": lambda g: "sk" + "_live_" + "51" + g.rand(97),
    "stripe_restricted": lambda g: "rk" + "_live_" + "51" + g.rand(97),
    "stripe_webhook": lambda g: "wh" + "sec_" + g.rand(32),
    "google": lambda g: "AI" + "za" + "Sy" + g.rand(33, B64URL),
    "sendgrid": lambda g: "SG" + "." + g.rand(22, B64URL) + "." + g.rand(43, B64URL),
    "gitlab": lambda g: "gl" + "pat-" + g.rand(20, B64URL),
    "npm": lambda g: "np" + "m_" + g.rand(36),
    "pypi": lambda g: "py" + "pi-" + "AgEIcHlwaS5vcmc" + g.rand(140, B64URL),
    "huggingface": lambda g: "h" + "f_" + g.rand(34, string.ascii_letters),
    "groq": lambda g: "gs" + "k_" + g.rand(52),
    "replicate": lambda g: "r" + "8_" + g.rand(37),
    "digitalocean": lambda g: "do" + "p_v1_" + g.rand(64, HEX),
    "telegram": lambda g: g.digits(10) + ":" + "AA" + g.rand(33, B64URL),
    "mailchimp": lambda g: g.rand(32, HEX) + "-us" + str(g.rng.randint(1, 21)),
    "azure_storage": lambda g: base64.b64encode(g.rng.randbytes(64)).decode(),
    "discord": lambda g: g.rng.choice("MNO") + g.rand(23, B64URL) + "." + g.rand(6, B64URL) + "." + g.rand(27, B64URL),
    "square": lambda g: "sq" + "0csp-" + g.rand(43, B64URL),
    "jwt": lambda g: g.jwt(),
    "pem_rsa": _pem_rsa,
    "pem_pkcs8": _pem_pkcs8,
    "pem_ec": _pem_ec,
    "pem_openssh": _pem_openssh,
    "pem_one_line": _pem_one_line,
    "pem_json": _pem_json,
    "pem_cut": _pem_cut,
    "pem_encrypted": _pem_encrypted,
    "pem_legacy_encrypted": _pem_legacy_encrypted,
    "password": lambda g: g.password(),
    "token32": lambda g: g.rand(32),
    "token40": lambda g: g.rand(40, B64URL),
    "token24": lambda g: g.rand(24),
    "hex32": lambda g: g.rand(32, HEX),
    "hex64": lambda g: g.rand(64, HEX),
    "hex128": lambda g: g.rand(128, HEX),
    "uuid": lambda g: str(uuid.UUID(int=g.rng.getrandbits(128))),
    "b64_44": lambda g: base64.b64encode(g.rng.randbytes(32)).decode(),
    # key material standing alone (consolidate/rules/key_material.py): a PEM body line, a key's last two lines,
    # base32 and base64url keys, the body of an OpenSSH private key
    "pem_line": lambda g: g.rng.choice(g.pem("RSA " + _PK, 1190)[1][1:-1]),
    "pem_tail": _pem_tail,
    "b32_key": lambda g: base64.b32encode(g.rng.randbytes(20)).decode(),
    "b64url_key": lambda g: base64.urlsafe_b64encode(g.rng.randbytes(32)).decode().rstrip("="),
    "openssh_body": lambda g: base64.b64encode(b"openssh-key-v1\x00" + g.rng.randbytes(40)).decode(),
    "django": lambda g: "django-insecure-" + g.rand(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"),
    "basic_auth": lambda g: base64.b64encode(("deploy:" + g.password()).encode()).decode(),
    # Provider formats the gate knows only from gitleaks' rule set (issue 14, item 5): each value in
    # the issuer's documented shape, as gitleaks' config/gitleaks.toml describes it; prefixes in pieces.
    "age": lambda g: "AGE-" + "SECRET-KEY-1" + g.rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "alibaba_id": lambda g: "LT" + "AI" + g.rand(20),
    "atlassian": lambda g: "ATA" + "TT3" + g.rand(186, B64URL),
    "clojars": lambda g: "CLOJ" + "ARS_" + g.rand(60, LOWER_DIGITS),
    "databricks": lambda g: "da" + "pi" + g.rand(32, HEX),
    "doppler": lambda g: "dp." + "pt." + g.rand(43),
    "dynatrace": lambda g: "dt0c01" + "." + g.rand(24, string.ascii_uppercase + string.digits) + "."
    + g.rand(64, string.ascii_uppercase + string.digits),
    "easypost": lambda g: "EZ" + "AK" + g.rand(54),
    "flutterwave": lambda g: "FLWSECK" + "_TEST-" + g.rand(32, "abcdefgh0123456789") + "-X",
    "flyio": lambda g: "fo" + "1_" + g.rand(43, B64URL),
    "frameio": lambda g: "fio" + "-u-" + g.rand(64, B64URL),
    "gitlab_deploy": lambda g: "gl" + "dt-" + g.rand(20),
    "grafana_sa": lambda g: "gl" + "sa_" + g.rand(32) + "_" + g.rand(8, HEX),
    "grafana_cloud": lambda g: "gl" + "c_" + g.rand(80, B64),
    "terraform": lambda g: g.rand(14, LOWER_DIGITS) + ".atlas" + "v1." + g.rand(67, LOWER_DIGITS),
    "infracost": lambda g: "ic" + "o-" + g.rand(32),
    "linear": lambda g: "lin" + "_api_" + g.rand(40),
    "postman": lambda g: "PM" + "AK-" + g.rand(24, HEX) + "-" + g.rand(34, HEX),
    "prefect": lambda g: "pn" + "u_" + g.rand(36),
    "pulumi": lambda g: "pu" + "l-" + g.rand(40, HEX),
    "readme": lambda g: "rd" + "me_" + g.rand(70, LOWER_DIGITS),
    "rubygems": lambda g: "ruby" + "gems_" + g.rand(48, HEX),
    "scalingo": lambda g: "tk" + "-us-" + g.rand(48, B64URL),
    "sendinblue": lambda g: "xkey" + "sib-" + g.rand(64, HEX) + "-" + g.rand(16),
    "sentry_user": lambda g: "sntr" + "yu_" + g.rand(64, HEX),
    "shippo": lambda g: "shippo" + "_live_" + g.rand(40, HEX),
    "shopify": lambda g: "sh" + "pat_" + g.rand(32, HEX),
    "planetscale": lambda g: "pscale" + "_tkn_" + g.rand(43, B64URL),
    "vault": lambda g: "hv" + "s." + g.rand(95, B64URL),
    "mailgun": lambda g: "ke" + "y-" + g.rand(32, HEX),
    "maxmind": lambda g: g.rand(6) + "_" + g.rand(29) + "_m" + "mk",
    "settlemint": lambda g: "sm" + "_pat_" + g.rand(16),
    # letters-only passwords (issue 14b): a passphrase of joined words, two words, other scripts
    "passphrase": lambda g: "".join(g.rng.sample(_WORDS_EN, g.rng.randint(3, 4))),
    "word_password": lambda g: g.rng.choice(_WORDS_EN) + g.rng.choice(_WORDS_EN),
    "word_password_de": lambda g: g.rng.choice(_WORDS_DE),
    "word_password_ru": lambda g: g.rng.choice(_WORDS_RU),
    # letters-only passwords in a CJK script (issue 14: パスワード: ひまわり was stored)
    "word_password_ja": lambda g: g.rng.choice(_WORDS_JA),
    "word_password_zh": lambda g: g.rng.choice(_WORDS_ZH),
    "word_password_ko": lambda g: g.rng.choice(_WORDS_KO),
    "word_password_ar": lambda g: g.rng.choice(_WORDS_AR),
    "word_password_tr": lambda g: g.rng.choice(_WORDS_TR),
    "word_password_cs": lambda g: g.rng.choice(_WORDS_CS),
    "word_password_he": lambda g: g.rng.choice(_WORDS_HE),
    "word_password_hi": lambda g: g.rng.choice(_WORDS_HI),
    # passphrases of several words, and short passwords for the short secret names (pw = sunflower42)
    "passphrase_words": lambda g: " ".join(g.rng.sample(_WORDS_EN, g.rng.randint(3, 5))),
    "short_password": lambda g: g.rng.choice(_WORDS_EN) + g.digits(g.rng.randint(2, 4)),
}

#: kind -> generator of the random parts of ordinary notes (hashes, ids: never secrets by themselves)
VALUE_KINDS: dict[str, Callable[[_Gen], str]] = {
    "sha40": lambda g: g.rand(40, HEX),
    "sha7": lambda g: g.rand(7, HEX),
    "sha12": lambda g: g.rand(12, HEX),
    "uuid": lambda g: str(uuid.UUID(int=g.rng.getrandbits(128))),
    "sha256": lambda g: g.rand(64, HEX),
    "md5": lambda g: g.rand(32, HEX),
    "sri": lambda g: "sha512-" + base64.b64encode(g.rng.randbytes(64)).decode(),
    "sha256_b64": lambda g: base64.b64encode(g.rng.randbytes(32)).decode(),
    "port": lambda g: str(g.rng.choice([3000, 5173, 8000, 8080, 8443, 5432, 6379, 9200])),
    "int": lambda g: str(g.rng.randint(2, 9999)),
    "ssh_pub": lambda g: "ssh-" + "ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.rand(43, B64),
    "pk_live": lambda g: "pk" + "_live_" + "51" + g.rand(97),
    "req_id": lambda g: "req_" + g.rand(32, HEX),
    "chatcmpl": lambda g: "chatcmpl-" + g.rand(29),
    "msg_id": lambda g: "msg_01" + g.rand(22),
    "ulid": lambda g: "01" + g.rand(24, "0123456789ABCDEFGHJKMNPQRSTVWXYZ"),
    "docker_id": lambda g: g.rand(12, HEX),
    "ipfs": lambda g: "Qm" + g.rand(44, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
    "aws_key_id_example": lambda g: "AK" + "IA" + "IOSFODNN7" + "EXAMPLE",
    "aws_secret_example": lambda g: "wJalrXUtnFEMI/" + "K7MDENG/" + "bPxRfiCY" + "EXAMPLEKEY",
    "trace": lambda g: g.rand(32, HEX),
    "span": lambda g: g.rand(16, HEX),
    "b64_png": lambda g: "iVBORw0KGgo" + base64.b64encode(g.rng.randbytes(60)).decode(),
    "gpg_fpr": lambda g: g.rand(40, HEX).upper(),
    "key_id": lambda g: "key_" + g.rand(16, LOWER_DIGITS),
    "sentry_dsn": lambda g: "https://" + g.rand(32, HEX) + "@o" + g.digits(6) + ".ingest.sentry.io/" + g.digits(7),
    "jwt_header": lambda g: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    "b64_text": lambda g: base64.b64encode(g.rng.choice(_GREETINGS).encode()).decode(),
}


def _fill(template: str, g: _Gen) -> tuple[str, list[str]]:
    """The template with every placeholder replaced; the same placeholder twice in one template
    is the same value. Returns the text and the secret strings that must not survive."""
    values: dict[tuple[str, str], tuple[str, list[str]]] = {}

    def replace(m: re.Match[str]) -> str:
        key = (m.group(1), m.group(2))
        if key not in values:
            table = SECRET_KINDS if key[0] == "secret" else VALUE_KINDS
            if key[1] not in table:
                raise KeyError(f"unknown corpus placeholder {m.group()!r}")
            made = table[key[1]](g)
            text, secrets = made if isinstance(made, tuple) else (made, [made])
            values[key] = (text, secrets if key[0] == "secret" else [])
        return values[key][0]

    text = _PLACEHOLDER.sub(replace, template)
    secrets = [s for text_, secs in values.values() for s in secs]
    return text, secrets


def templates(name: str) -> list[dict]:
    """The raw lines of ``secrets.jsonl`` or ``ordinary.jsonl`` (``name`` without extension)."""
    rows = []
    with open(HERE / f"{name}.jsonl", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                row["_line"] = lineno
                rows.append(row)
    return rows


def load(seed: int = 0) -> list[Entry]:
    """Every corpus note, filled with the fake values of ``seed`` (the same seed, the same corpus)."""
    g = _Gen(random.Random(f"secret-corpus-{seed}"))
    entries = []
    for name in ("secrets", "ordinary"):
        for row in templates(name):
            text, secrets = _fill(row["text"], g)
            if row["expect"] == "block" and not secrets:
                raise ValueError(f"{name}.jsonl:{row['_line']}: a block entry needs a {{secret:...}}")
            entries.append(
                Entry(
                    id=f"{name}:{row['_line']}:{row['format']}",
                    expect=row["expect"],
                    format=row["format"],
                    text=text,
                    secrets=tuple(secrets),
                )
            )
    return entries
