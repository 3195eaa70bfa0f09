"""Key material that stands alone: a run of base64, base64url, hex or base32 with no keyword beside it.

The secret gate's other rules need a keyword (``API_KEY=``, ``password is``), a documented prefix
(``sk-``, ``ghp_``) or armour (``-----BEGIN ... PRIVATE KEY-----``). A line that is only key material
(a PEM body line, an Azure storage account key, an AWS secret access key pasted alone) has none of
them; :func:`find` is the rule for it (kind ``key-material``, consolidate/rules/secrets/ runs it last, so
any more specific rule wins an overlap).

A *run* is a maximal stretch of ``[A-Za-z0-9+/_-]`` (and up to six ``=`` of padding), not glued to a
larger token (no ``.x``, ``@``, ``\\``, ``$``, ``%``, ``&``, ``#``, ``~`` beside it), not inside a URL or
a ``data:`` URI. It is key material when, by its alphabet:

======================  =====================================================================
alphabet                key material when
======================  =====================================================================
hex (one case)          32+ digits (128 bits), letters and digits, entropy >= 3.0 bits/char,
                        and not named as a hash, a commit or an id (see below)
base32 (``A-Z2-7``)     24+ characters, upper case only, not English in capitals
base64 / base64url      20+ characters with upper and lower case, or 32+ of one case with
                        digits (base64 of 15+ bytes); entropy >= 3.5 bits/char; not words
======================  =====================================================================

A run **named as a key** (:func:`_named`: a word of :data:`_KEY_WORDS`, key, secret, token, password,
..., ends at most :data:`_NAMED_GAP` characters before it, with no hash or id word nearer: "TOTP secret
<run>", "use key <run> for staging", "token <run>") is held to shorter floors, since the word says what
it is: hex of one case 20+ digits (80 bits), base32 of one case (upper or lower: authenticator apps
show either) 16+ characters (80 bits: a TOTP seed), base64 of both cases 14+ (with a digit or a
symbol), of one case with digits 16+; entropy >= 2.8 bits/char under 20 characters, the usual floors
from 20 (fresh testers: a 30-digit hex key, a lower-case base32 seed after "secret", 16-character
TOTP seeds and 15-character tokens after "seed" and "token" passed the gate). Hex groups joined by
``:`` or ``-`` of 128+ bits named as a key are one too ("pre-shared key a6:d4:be:...").

"Not words" (:func:`_reads_as_words`): the letters of the run, cut at case changes and at digits
and symbols (``getUserById2Factor`` -> get User By Id Factor), are scored by how many of their
adjacent letter pairs are common English bigrams (:data:`_COMMON_BIGRAMS`, 351 pairs). An identifier,
a CamelCase word or a path scores 0.6-1.0; random base64 scores below the length's floor
(:func:`_word_floor`, set above the highest score of 50,000 random keys per length and encoding from
27 characters on, 1 in 50,000 at or above it at 20-24;
``python benchmarks/secrets_bench.py`` prints the highest scores and the recall by encoding and
length again). Words glued into an identifier (:func:`_identifier_shaped`: ``TropykusErc20Handler``,
few segments of 3+ letters) and paths of words (:func:`_path_shaped`) pass too.

What is not key material, by rule (each one tested in tests/unit/rules/test_key_material.py):

* git SHAs, content hashes and ids named as such: a hex run with a word of :data:`_HASH_CONTEXT`
  (commit, sha256, hash, digest, checksum, uuid, id, revision, trace, fixed in, коммит, 提交, ...)
  within :data:`_CONTEXT_BEFORE` characters before it, unless a word naming a secret
  (:data:`_KEY_WORDS`: key, secret, token, ...) is nearer ("Deploy key <hex>" is a key; "key id
  <hex>", "cache key is the content hash <hex>" are not), or, with no such word before it, within
  :data:`_CONTEXT_AFTER` characters after it. A hex run with no such word is blocked: a 32/40/64-digit
  hex value alone is how many services issue keys (Twilio, Mailgun, webhook secrets), and a note
  about a commit or a file names it;
* UUIDs and other hex groups joined by dashes; an Ethereum address (``0x`` + 40 hex); a base58 run
  (Solana, Bitcoin) named as an address, program or account (:data:`_ADDRESS_CONTEXT`);
* a base64 run of a digest's length (MD5 to SHA-512) named as a digest (:data:`_DIGEST_WORDS`: hash,
  digest, checksum, in the languages of _HASH_CONTEXT too), and a base64url run of up to 32 characters
  right after an id word ("order id <run>"), unless a key word is nearer; after a key word, an
  identifier of word segments (``cart_state_v3``);
* a digest with its algorithm (``sha256:...``, ``SHA256:<base64>``, ``sha512-...`` SRI, CSP
  ``'sha256-...'``); object ids with a documented prefix (:data:`_ID_PREFIXES`: ``msg_01...``,
  ``chatcmpl-...``, ``toolu_...``, ``cus_...``); IPFS CIDs;
* an SSH public key body (its base64 decodes to a public key type: ``AAAAC3NzaC1lZDI1NTE5...``) and
  base64 inside a public PEM block (``CERTIFICATE``, ``PUBLIC KEY``); base64 of printable text (a JWT
  header ``eyJhbGciOi...``), except ``user:password``;
* alphabets and counting sequences (``ABCDEFGHIJKLMNOPQRSTUVWXYZ234567``), file paths, URLs, ``data:``
  URIs, identifiers in code, version strings (dots split them) and long CamelCase words.

A key wrapped across lines (PEM, MIME at 64 or 76 characters) is one finding: runs separated only by
line breaks, quotes and ``\\n`` escapes are joined, and a short last line (``...Ow==``) after a full
one belongs to the key.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Iterable, Iterator
from consolidate.rules.secrets.values import shannon_entropy

__all__ = ["find", "continued", "KIND"]

KIND = "key-material"

#: Minimum lengths (characters, padding excluded)
MIN_HEX = 32  # 128 bits
MIN_BASE32 = 24  # 15 bytes
MIN_MIXED = 20  # base64 of 15 bytes
MIN_ONE_CASE = 32  # base64 run with digits but letters of one case only
ENTROPY_MIN_HEX = 3.0
# Shannon entropy (bits per character) a base64 run needs, by its length. Measured on random keys (standard
# base64, padding stripped, 300,000 each): 20 characters lowest 3.146 (1 in 100,000 under 3.246, none under
# 3.1); 22 (16 bytes) lowest 3.30; 24 lowest 3.455 (2 of 40,000 under 3.5); 28 lowest 3.655; 32 lowest 3.815.
ENTROPY_MIN_B64_SHORT = 3.1  # runs shorter than ENTROPY_B64_LONG characters
ENTROPY_B64_LONG = 28
ENTROPY_MIN_B64 = 3.5  # runs of ENTROPY_B64_LONG characters or more
ENTROPY_MIN_B32 = 3.0
IDENTIFIER_WORD_SCORE = 0.4  # the word score an identifier of few long segments still needs

# A run: the base64/base64url/hex/base32 alphabet and padding, not glued to a larger token
# (a value after ``name=`` is a run: ``value=<key>``, ``--seed=<key>``; an escape beside it does not glue
# it to a larger token: an escaped line break or tab, ``<key>\\n`` in JSON or an env file, an escaped
# quote ``\\"<key>\\"`` or ``\\u0022<key>\\u0022`` of JSON inside a string, escapes escaped again ``\\\\n``)
_RUN = re.compile(
    r"(?:(?<=\\[nrt\"'])|(?<=\\u[0-9a-fA-F]{4})|(?<![A-Za-z0-9+/_\-.\\@$%&#~]))(?<!==)"
    r"[A-Za-z0-9+/_-]{14,}={0,6}"  # 14: a key named as one (_named); every standalone floor is 20+
    r"(?![A-Za-z0-9+/=_\-@$%&#~])(?!\\(?![nrt\"']|u[0-9a-fA-F]{4}|\\+[nrt\"']))(?!\.[A-Za-z0-9])"
)
# Full-width forms of ASCII (U+FF01-U+FF5E) read as ASCII, one character for one (the offsets stay):
# ``４ｚＬｗ...`` is the key ``4zLw...`` (NFKC gives the same)
_FULL_WIDTH = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_BASE32 = re.compile(r"[A-Z2-7]+")
_DIGIT = re.compile(r"[0-9]")
_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

# Words that say a hex run is a hash, a commit or an id, not a key (case-insensitive). Long words also
# inflected (below), short ones whole only ("id", "rev", "pr": not "idle", "review", "production");
# commit and hash in the scripts agents write in
_HASH_WORDS = ("commit", "hash", "digest", "checksum", "check sum", "revision", "bisect", "cherry", "revert", "rebase",
               "merge", "squash", "submodule", "pinned", "fingerprint", "etag", "integrity", "identifier", "trace",
               "span", "request", "correlation", "container", "image", "docker", "layer", "manifest", "build",
               "object", "blob", "nonce", "transaction", "uuid", "guid", "md5", "sha\\d*", "crc", "blake", "xxh",
               "murmur", "ipfs", "torrent", "magnet", "wallet", "address", "fix", "patch", "diff", "changeset",
               "release", "deploy", "version", "session", "checkout")
# A word of _HASH_WORDS with an English inflection or an id suffix ("commits", "hashed", "merging",
# "sha256sum", "request_id"), never the start of another word ("fixture", "buildings", "blobby", "traceback")
_INFLECTED = "|".join((w[:-1] + "(?:e|(?=ing))" if w.endswith("e") else w) for w in _HASH_WORDS)
_HASH_CONTEXT = re.compile(
    r"(?i)(?<![a-z])(?:(?:" + _INFLECTED + r")(?:s|es|d|ed|ing|er|ers|_?ids?|sums?)?(?![a-z])"
    r"|(?:id|ids|rev|ref|refs|head|pin|tag|branch|git|tree|oid|lfs|job|run|salt|iv|cid|tx|txid|block|pr|mr"
    r"|sum)(?![a-z])"
    r"|коммит|хеш|хэш|ревизи|контрольн|提交|哈希|散列|校验|校驗|コミット|ハッシュ|チェックサム|커밋|해시|체크섬"
    r"|suma de verificaci|somme de contr[oô]le|pr[uü]fsumme)"
)
_CONTEXT_BEFORE = 100  # characters before a hex run searched for a context word
_CONTEXT_AFTER = 40

# A digest written with its algorithm: sha256-..., sha512-... (SRI), md5-...
_DIGEST_NAME = re.compile(r"(?i)^(?:sha\d+|md5|blake2[bs]?\d*|sha3)[-_:]")
# Object ids with a documented prefix (OpenAI, Anthropic, Stripe): ids, not credentials
_ID_PREFIXES = re.compile(
    r"^(?:chatcmpl|cmpl|req|msg|msgbatch|toolu|srvtoolu|call|file|asst|thread|run|step|batch|ftjob|ft|org|proj"
    r"|resp|vs|evt|cus|pi|pm|ch|in|sub|price|prod|acct|seti|src|txn|re|po|cs_test|cs_live|pk_test|pk_live"
    r"|ii|il|si|sli|tr|py|ba|card|btok|tok_visa)[-_]"
)
# IPFS CIDs: v0 (base58 multihash) and v1 (base32, lower case)
_IPFS_CID = re.compile(r"^(?:Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{58,})$")
# What a base64 SSH public key blob starts with: its length-prefixed key type
_SSH_PUBLIC_TYPES = (b"ssh-rsa", b"ssh-dss", b"ssh-ed25519", b"ssh-ed448", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
# Armour of public material: its base64 body is not a secret
_PUBLIC_PEM = re.compile(
    r"-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|X509 CRL|CERTIFICATE REQUEST"
    r"|NEW CERTIFICATE REQUEST|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|SSH2 PUBLIC KEY|PKCS7)-----"
    r".*?(?:-----END [A-Z0-9 ]+-----|\Z)",
    re.S,
)
# Between two lines of one key: line breaks, indentation, quotes and escaped newlines
_WRAP = re.compile(r"""(?:[ \t]*(?:\r?\n|\\r\\n|\\n)[ \t]*["']?[ \t]*|["'][ \t]*\+?[ \t]*["'])+""")
_SHORT_LAST_LINE = re.compile(r"[A-Za-z0-9+/]{1,19}={0,2}(?![A-Za-z0-9+/=_\-.])")
_FULL_LINE = 40  # a line this long, and a short one after it: the short one is the key's last line

# Common English letter pairs (Norvig's counts over the Google books corpus, most frequent first):
# an identifier's words are made of them, random base64 mostly is not
_COMMON_BIGRAMS = frozenset(
    """th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri
    ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss
    so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi
    pl ig tu ev ld ry mp fe bl ab gh ty op wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep
    tt oc fa ef cu rn sc gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au
    ck ew mu br bi pt ak pu ui rg ib tl ny ki rk ys ob mm fu ph og ms ye ud mb ip ub oi rl gu dr hr cc tw ft wn nu
    af hu nn eo vo rv nf xp gn sm fl iz ok nl my gl aw ju oa eq sy sl ps jo lf nv je nk kn gs dy hy ze ks xt bs ik
    dd cy rp sk xi oe oy ws lv dl rf eu dg wr xa yi nm eb rb tm xc eh tc gy ja hn yp za gg ym sw bj lm cs ii ix xe
    oh lk dv lp ax ox uf dm iu sf bt ka yt ek pm ya gt wl rh yl hs ah yc yn rw hm lw hl ae zi az lc py aj iq nj bb
    nh uo kl lb tn gm sn nr fy mn dw sd yr xu yu tf kr uy nb""".split()
)


def _entropy(value: str) -> float:

    return shannon_entropy(value)


def _word_score(value: str) -> float:
    """The share of ``value``'s adjacent character pairs that are common English bigrams inside one
    word (its letters cut at case changes, digits and symbols): 0.0-1.0."""
    common = 0
    for segment in _SEGMENT.findall(value):
        s = segment.lower()
        common += sum(s[i : i + 2] in _COMMON_BIGRAMS for i in range(len(s) - 1))
    return common / max(1, len(value) - 1)


def _word_floor(n: int, upper_only: bool) -> float:
    """The word score from which a run of ``n`` characters reads as words. The highest scores of 50,000
    random keys per length and encoding (benchmarks/secrets_bench.py prints them again): base64 and
    base64url 0.74 at 20-24 characters (1 in 50,000 at or above the floor there), 0.65 at 27, 0.61 at 32,
    0.57 at 38-43, 0.51 at 54, 0.49 at 64, 0.46 at 86, 0.35 at 267; base32 (capitals: long segments)
    0.88 at 24-29, 0.81 at 32, 0.72-0.76 at 39-52, 0.67 at 64, 0.61 at 103. Identifiers, CamelCase
    words and paths score 0.6-1.0."""
    if upper_only:
        return 0.9 if n < 32 else 0.85 if n < 52 else 0.8 if n < 80 else 0.72
    return 0.7 if n < 27 else 0.66 if n < 40 else 0.58 if n < 90 else 0.5


def _reads_as_words(value: str, upper_only: bool = False) -> bool:
    return _word_score(value) >= _word_floor(len(value), upper_only)


def _is_sequence(value: str) -> bool:
    """An alphabet or a counting run (``ABCDEFGH...``, ``0123456789abcdef``): half its neighbours are
    consecutive characters."""
    steps = sum(ord(b) - ord(a) == 1 for a, b in zip(value, value[1:]))
    return steps * 2 >= len(value) - 1


def _ssh_public_blob(value: str) -> bool:
    """The base64 body of an SSH public key: it decodes to a length-prefixed public key type."""
    if not value.startswith("AAAA"):
        return False
    try:
        head = base64.b64decode(value[:40] + "=" * (-len(value[:40]) % 4))
    except (binascii.Error, ValueError):
        return False
    return head[4:].startswith(_SSH_PUBLIC_TYPES)


# Words that name a secret: nearer to a hex run than any hash word, they make it a key ("Deploy key
# <hex>"); "key id <hex>", "the key's sha256 is <hex>", "cache key is the content hash <hex>" name an
# id and hashes (the hash word is the nearer one)
_KEY_WORDS = re.compile(r"(?i)(?<![a-z])(?:key|keys|secret|secrets|token|tokens|password|passphrase|passwort|credentials?"
                        r"|private|apikey|seed|seeds)(?![a-z])|ключ|секрет|пароль|密钥|秘钥|私钥|鍵|キー|シークレット|키|비밀")


def _has_context(words: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Whether a word of ``words`` occurs within :data:`_CONTEXT_BEFORE` characters before
    ``text[start:end]`` with no word naming a secret (:data:`_KEY_WORDS`) nearer to it, or, with no
    such word before it, within :data:`_CONTEXT_AFTER` characters after it."""
    lo = max(0, start - _CONTEXT_BEFORE)
    context = [m.end() for m in words.finditer(text, lo, start)]
    keys = [m.end() for m in _KEY_WORDS.finditer(text, lo, start)]
    if context and (not keys or context[-1] >= keys[-1]):
        return True
    return not keys and words.search(text, end, end + _CONTEXT_AFTER) is not None


def _chunk(text: str, start: int, end: int) -> str:
    """The whitespace-delimited token holding ``text[start:end]``."""
    lo = start
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    hi = end
    while hi < len(text) and not text[hi].isspace():
        hi += 1
    return text[lo:hi]


#: Characters between the end of a word naming a secret and a run it names ("secret <run>", "key for
#: staging: <run>"): a few words at most.
_NAMED_GAP = 24
#: The floors of a run named as a key (module docs): hex 80 bits, base32 80 bits, base64 of both cases
#: 84 bits, of one case with digits 96 bits.
MIN_HEX_NAMED, MIN_BASE32_NAMED, MIN_MIXED_NAMED, MIN_ONE_CASE_NAMED = 20, 16, 14, 16
#: The entropy a named run of fewer than 20 characters needs (bits per character; 16 random base32
#: characters: lowest of 100,000 about 2.9, 1 in 1,000 under 3.1; a word or a repeated pattern much less).
ENTROPY_MIN_NAMED_SHORT = 2.8


def _named(text: str, start: int, end: int) -> bool:
    """Whether a word naming a secret (:data:`_KEY_WORDS`) ends at most :data:`_NAMED_GAP` characters
    before ``text[start:end]``, on its line, with no hash or id word (:data:`_HASH_CONTEXT`) nearer."""
    lo = max(0, start - _NAMED_GAP)
    between = text[lo:start]
    if "\n" in between:
        lo += between.rindex("\n") + 1
    keys = [m.end() for m in _KEY_WORDS.finditer(text, lo, start)]
    if not keys:
        return False
    hashes = [m.end() for m in _HASH_CONTEXT.finditer(text, keys[-1], start)]
    return not hashes


def _word_segments(core: str) -> bool:
    """Whether a run joined by ``_`` or ``-`` has two or more segments of 3+ letters of one case
    (``anidachi_home_survey_v2``, ``release-candidate-7``): an identifier, not a key."""
    parts = re.split(r"[_-]", core)
    return len(parts) > 1 and sum(1 for x in parts if len(x) >= 3 and x.isalpha() and (x.islower() or x.isupper())) >= 2


def is_key_material(run: str, text: str = "", start: int = 0, end: int | None = None) -> bool:
    """Whether ``run`` (a run of the base64/hex/base32 alphabets, as :data:`_RUN` finds it) is key
    material, by the table of the module docs; ``text[start:end]`` is the run in its note, for the
    context of a hex run (a commit, a hash). Pure function of its arguments."""
    end = start + len(run) if end is None else end
    core = run.rstrip("=")
    if core[:2] == "0x" and _HEX.fullmatch(core[2:]):
        core = core[2:]
        if len(core) == 40:  # an Ethereum address: public
            return False
    n = len(core)
    named = bool(text) and n < MIN_HEX and _named(text, start, end)  # shorter floors (module docs)
    short = ENTROPY_MIN_NAMED_SHORT if n < 20 else None
    if _HEX.fullmatch(core):
        return (
            n >= (MIN_HEX_NAMED if named else MIN_HEX)
            and not core.isdigit()
            and _DIGIT.search(core) is not None
            and _entropy(core) >= ENTROPY_MIN_HEX
            and not _is_sequence(core)
            and not _has_context(_HASH_CONTEXT, text, start, end)
        )
    if _BASE32.fullmatch(core) or (named and core.islower() and _BASE32.fullmatch(core.upper())):
        return n >= (MIN_BASE32_NAMED if named else MIN_BASE32) and _entropy(core) >= min(short or 9, ENTROPY_MIN_B32) \
            and not _is_sequence(core) and not _reads_as_words(core.upper(), upper_only=True) \
            and (not named or n >= MIN_BASE32 or _DIGIT.search(core) is not None)
    upper = core != core.lower()
    lower = core != core.upper()
    digit = _DIGIT.search(core) is not None
    if upper and lower:
        if n < (MIN_MIXED_NAMED if named else MIN_MIXED) or (named and n < MIN_MIXED and not digit
                                                             and not any(c in "+/_-" for c in core)):
            return False
    elif (upper or lower) and digit:
        if n < (MIN_ONE_CASE_NAMED if named else MIN_ONE_CASE):
            return False
    else:
        return False
    if named and _word_segments(core):
        return False
    if _HEX_GROUPS.fullmatch(core):  # a UUID (8-4-4-4-12) or another id in hex groups: an id
        return False
    if _DIGEST_NAME.match(core) or _ID_PREFIXES.match(core) or _IPFS_CID.match(core):
        return False
    if _DIGEST_BEFORE.search(text, max(0, start - 16), start):  # SHA256:<base64>, sha512-<base64>
        return False
    if n in _DIGEST_B64_LENGTHS and _has_context(_DIGEST_WORDS, text, start, end):
        return False  # a digest in base64 named as one ("sha256 digest of the bundle is <base64>")
    if n <= 32 and _ID_BEFORE.search(text, max(0, start - 12), start) and not _KEY_WORDS.search(text, max(0, start - 12), start):
        return False  # an id in base64url named as one ("order id V1StGXR8_Z5jdHi6B-myT", "user id usr_...")
    if _entropy(core) < (short or (ENTROPY_MIN_B64 if n >= ENTROPY_B64_LONG else ENTROPY_MIN_B64_SHORT)) \
            or _is_sequence(core):
        return False
    if _reads_as_words(core) or _identifier_shaped(core) or _path_shaped(core) or _words_joined(core):
        return False
    if _BASE58.fullmatch(core) and _has_context(_ADDRESS_CONTEXT, text, start, end):
        return False  # a Solana or Bitcoin address, a program id: public
    if _ssh_public_blob(core) or _encoded_text(run):
        return False
    return True


_HEX_GROUPS = re.compile(r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)+")
#: Lengths of an MD5, SHA-1, SHA-256, SHA-384 and SHA-512 digest in unpadded base64 (16, 20, 32, 48, 64 bytes).
_DIGEST_B64_LENGTHS = frozenset({22, 27, 43, 64, 86})
#: Words that name a digest (a base64 run of a digest's length after one is that digest; the looser
#: _HASH_CONTEXT words, deploy, request, id, name other things a base64 key sits beside)
_DIGEST_WORDS = re.compile(r"(?i)(?<![a-z])(?:hash|hashes|hashed|digest|digests|checksums?|sha-?\d*|md5|integrity"
                           r"|fingerprint)(?![a-z])|контрольн|хеш|хэш|哈希|散列|校验|校驗|ハッシュ|チェックサム|해시|체크섬"
                           r"|suma de verificaci|pr[uü]fsumme")
#: An id word right before a run ("order id <run>", "request ID: <run>"): the run is the id.
_ID_BEFORE = re.compile(r"(?i)(?<![a-z])(?:id|ids|identifier)[\s:=#]*$")
_DIGEST_BEFORE = re.compile(r"(?i)(?:sha\d*|md5|blake2[bs]?\d*|sha3-\d+)[:=-]$")
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")
# Words that say a base58 run is an address or a program id (public), not a key
_ADDRESS_CONTEXT = re.compile(
    r"(?i)(?<![a-z])(?:address|addr|program|pubkey|public key|authority|mint|pool|wallet|signer|owner|pda|solana"
    r"|sol|btc|bitcoin|id|ids|account|contract|token mint|recipient|sender|payer)(?![a-z])"
)
_USER_PASS = re.compile(r"[\w.@+-]+:\S+")
_WORD_PART = re.compile(r"[A-Za-z][a-z]*\d*|[A-Z0-9]{1,6}|[a-z]+(?:[-_][a-z0-9]+)*|\d{1,4}|")


def _identifier_shaped(value: str) -> bool:
    """Words glued into an identifier (``TropykusErc20Handler``, ``text-green-400``): letters in at most
    one segment per five characters, every one of 3+ letters, and a word score of at least
    :data:`IDENTIFIER_WORD_SCORE` (``text-green-400/yellow-400/blue-400``: 0.45). Random base64 of 20+
    characters cuts into many short segments, and those it leaves long are not words."""
    segments = _SEGMENT.findall(value)
    return (bool(segments) and len(segments) <= max(2, len(value) // 5) and all(len(s) >= 3 for s in segments)
            and _word_score(value) >= IDENTIFIER_WORD_SCORE)


#: The word score (pairs inside words over pairs inside parts) from which letters-only parts joined by
#: ``-``, ``_`` or ``/`` read as words: 5 of 1,000,000 random base64 / base64url keys of 20-54
#: characters reach it (measured with os.urandom, seed-free, when it was set).
JOINED_WORD_SCORE = 0.6
_JOINERS = re.compile(r"[-_/]")


def _words_joined(value: str) -> bool:
    """Words joined by ``-``, ``_`` or ``/`` (``Expensive-to-look-up``, ``refsNoVendorPrimary/Acme/Ltd``):
    two or more parts, every one ASCII letters only, cut at case changes into segments of 2+ letters,
    whose letter pairs inside the segments are common English bigrams for at least
    :data:`JOINED_WORD_SCORE` of the pairs inside the parts (the joiners themselves are not counted,
    as :func:`_word_score` counts them, which held short words joined by hyphens for key material:
    found on a capable judge's statements of the real notes)."""
    parts = _JOINERS.split(value)
    if len(parts) < 2 or not all(p.isascii() and p.isalpha() for p in parts):
        return False
    segments = [seg for p in parts for seg in _SEGMENT.findall(p)]
    if any(len(seg) < 2 for seg in segments):
        return False
    pairs = sum(len(p) - 1 for p in parts)
    common = sum(seg.lower()[i : i + 2] in _COMMON_BIGRAMS for seg in segments for i in range(len(seg) - 1))
    return pairs > 0 and common / pairs >= JOINED_WORD_SCORE


def _path_shaped(value: str) -> bool:
    """A path of words: three or more ``/`` parts, each a word, an acronym, a kebab name or a number
    (``room/P2P/auth/Worker/CI``)."""
    parts = value.split("/")
    return len(parts) >= 3 and all(_WORD_PART.fullmatch(p) for p in parts)


def _encoded_text(run: str) -> bool:
    """base64 of text (a JWT header ``eyJhbGciOi...``, ``SGVsbG8gd29ybGQ=``), not of key bytes: it
    decodes to printable UTF-8. Credentials ``user:password`` encoded so are still key material."""
    core = run.rstrip("=")
    for alt in (None, b"-_"):
        try:
            data = base64.b64decode(core + "=" * (-len(core) % 4), altchars=alt, validate=True)
            decoded = data.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if decoded.isprintable() and not _USER_PASS.fullmatch(decoded):
            return True
    return False


def find(text: str, found: Iterable[tuple[int, int]] = ()) -> Iterator[tuple[int, int]]:
    """The spans ``(start, end)`` of key material standing alone in ``text`` (see the module docs),
    sorted, one per key (a key wrapped across lines is one span). A run inside a span of ``found``
    (what the gate's other rules found) is not judged again; a run holding one is (a provider
    pattern matched by chance inside a long random run: the run is the key)."""
    spans: list[tuple[int, int]] = []
    public: list[tuple[int, int]] | None = None
    taken = sorted(found)
    if not text.isascii():
        text = text.translate(_FULL_WIDTH)
    for m in _RUN.finditer(text):
        start, end = m.span()
        if taken and any(a <= start and end <= b for a, b in taken):
            continue
        chunk = _chunk(text, start, end)
        if "://" in chunk or "data:" in chunk or "base64," in chunk:
            continue
        if not is_key_material(m.group(), text, start, end):
            continue
        if "-----BEGIN" in text:
            if public is None:
                public = [p.span() for p in _PUBLIC_PEM.finditer(text)]
            if any(a <= start < b for a, b in public):
                continue
        spans.append((start, end))
    for m in _GROUPED.finditer(text):
        start, value = m.start(), m.group()
        while value.count(" ") >= 3:  # words before the key ("seed", "MFA") are dropped one by one
            if _grouped_key(value):
                if not any(a <= start and m.end() <= b for a, b in taken + spans):
                    spans.append((start, m.end()))
                break
            cut = value.index(" ") + 1
            start, value = start + cut, value[cut:]
    for m in _SEPARATED_HEX.finditer(text):  # a key in hex groups joined by ":" or "-", named as a key
        start, end = m.span()
        digits = m.group().replace(":", "").replace("-", "")
        if _UUID.fullmatch(m.group()):
            continue  # a UUID stays an id (module docs), named or not
        if len(digits) >= MIN_HEX and (digits.islower() or digits.isupper() or digits.isdigit()) \
                and _entropy(digits) >= ENTROPY_MIN_HEX and _named(text, start, end) \
                and not any(a <= start < b or start <= a < end for a, b in taken + spans):
            spans.append((start, end))
    spans.sort()
    yield from _joined(text, spans)


#: A line of a key's base64 or hex, as wrapped: 4+ characters of the alphabet, padding allowed.
_KEY_LINE = re.compile(r"[A-Za-z0-9+/_-]{4,}={0,6}(?![A-Za-z0-9+/=_\-.@])")


def continued(text: str, taken: list[tuple[int, int]], spans: Iterable[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The lines that go on a value the gate found (``taken``: "the signing key is\\n<line>\\n<line>",
    the value after "is" found, its next lines not), when that value is itself a run of 16+ characters
    of a key alphabet and each next line is only such a run: the rest of the key (a fresh tester: the
    second line of a wrapped key after its name line stayed in clear)."""
    out: list[tuple[int, int]] = []
    for a, b in taken:
        if not _RUN.fullmatch(text, a, b) or b - a < 16:
            continue
        end = b
        while (gap := _WRAP.match(text, end)) is not None and ("\n" in gap.group() or "\\n" in gap.group()):
            line = _KEY_LINE.match(text, gap.end())
            if line is None or _has_text_after(text, line.end()) or any(x <= line.start() < y for x, y in [*spans, *out]):
                break
            got = line.group()
            if not (len(got) >= 8 and (_DIGIT.search(got) or got.endswith("=") or "+" in got or "/" in got
                                       or got.lower() != got != got.upper())):
                break  # a word on the next line ("Thanks"), not the key's rest
            out.append(line.span())
            end = line.end()
    return out


# Hex groups joined by ":" or "-" ("pre-shared key a6:d4:be:...", "license key cf412f7c-d71212f1-..."): a
# key only when named as one (_named: "SSH key fingerprint a6:d4:..." names a fingerprint, nearer) and of
# 128 bits or more (a UUID named as a token is one too)
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_SEPARATED_HEX = re.compile(r"(?<![\w:-])[0-9A-Fa-f]{2,64}(?:[:-][0-9A-Fa-f]{2,64})+(?![\w:-])")


# A key shown in groups split by single spaces, as authenticator apps show a TOTP seed (base32 in
# groups of 4) and tools print hex keys (groups of 4-16): 4+ groups of one length
_GROUPED = re.compile(r"(?<![\w-])(?:[A-Za-z2-7]{4,16}|[0-9A-Fa-f]{4,16})(?: (?:[A-Za-z2-7]{4,16}|[0-9A-Fa-f]{4,16})){3,}(?![\w-])")


def _grouped_key(value: str) -> bool:
    """Whether ``value`` (groups split by single spaces, :data:`_GROUPED`) is one key: 4+ groups of
    one length (the last may be shorter), of one case, 24+ characters together, digits in at least
    two groups (words have none), and the joined groups key material by the table above (base32
    or hex; the joined run's entropy and word score decide)."""
    groups = value.split(" ")
    size = len(groups[0])
    if any(len(g) != size for g in groups[:-1]) or len(groups[-1]) > size:
        return False
    joined = "".join(groups)
    if len(joined) < MIN_BASE32 or not (joined.isupper() or joined.islower() or joined.isdigit()):
        return False
    if sum(1 for g in groups if _DIGIT.search(g)) < 2:
        return False
    upper = joined.upper()
    if _BASE32.fullmatch(upper) and not _HEX.fullmatch(joined):
        return _entropy(upper) >= ENTROPY_MIN_B32 and not _is_sequence(upper) and not _reads_as_words(upper, upper_only=True)
    return bool(_HEX.fullmatch(joined)) and len(joined) >= MIN_HEX and _entropy(joined) >= ENTROPY_MIN_HEX \
        and not _is_sequence(joined)


def _joined(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Spans of one key wrapped across lines joined, with its short last line."""
    i = 0
    while i < len(spans):
        start, end = spans[i]
        while True:
            gap = _WRAP.match(text, end)
            if gap is None:
                break
            nxt = gap.end()
            if i + 1 < len(spans) and spans[i + 1][0] == nxt:
                i += 1
                end = spans[i][1]
                continue
            if end - start >= _FULL_LINE:
                last = _SHORT_LAST_LINE.match(text, nxt)
                if last is not None and not _has_text_after(text, last.end()):
                    end = last.end()
            break
        yield start, end
        i += 1


_LINE_ENDS = re.compile(r"""[ \t"'`,;.)\]}]*(?:\r?\n|\\r|\\n|-----END|$)""")


def _has_text_after(text: str, pos: int) -> bool:
    """Whether the line goes on after ``pos`` with more than closing punctuation or quotes."""
    return _LINE_ENDS.match(text, pos) is None
