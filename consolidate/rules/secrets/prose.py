"""Secret-named words in prose, in the languages agents write in: ``Das Passwort ist X``,
``パスワードはX``, ``Şifre ayçiçeği``, and "set the password to X" in Chinese, Japanese and Korean."""

from __future__ import annotations

import re
from typing import Iterator

from consolidate.rules.secrets.findings import _Candidate, _P_ASSIGNMENT
from consolidate.rules.secrets.passphrase import _passphrase_span
from consolidate.rules.secrets.values import _BIDI_MARKS, _CJK_CLASS, _CJK_RUN, _FILE_NAME, _SNAKE_IDENTIFIER, _VERSION_TAG, _bare_name_value_ok, _ends_clause, _letters_only, _password_is_secret, _prose_password_ok, _value_is_secret
from consolidate.rules.secrets.words import _FINAL_COPULAS, _PROSE_COPULAS, _PROSE_KEY_WORDS, _PROSE_METADATA, _PROSE_PASSWORD_WORDS, _ZERO_COPULA_WORDS


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
_ENGLISH_KEY_WORDS = frozenset({"api key", "api token", "access token", "auth token", "secret key", "token", "secret"})
_EN_VALUE_MARK = re.compile(r"[ \t](?:is|was|are|will be)[ \t]|[:=]")  # what must follow an English key word

# Polish "hasło do bazy to X": "to" is a copula only after a Polish keyword ("according to X")
_POLISH_KEYWORDS = frozenset({"hasło", "hasła", "haslo", "hasla", "klucz", "sekret"})
_PROSE_TWO_WORD_COPULAS = frozenset({("set", "to"), ("changed", "to"), ("geändert", "auf"), ("set", "ke"),
                                     ("reset", "to"), ("updated", "to"), ("will", "be"), ("is", "now"),
                                     ("ist", "jetzt"), ("es", "ahora"), ("est", "maintenant"), ("é", "agora")})
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

# A copula or polite ending after a value in a CJK script: ひまわりです, さくらでした, 해바라기입니다
_CJK_TAIL = re.compile(r"(?:でございます|でした|です|であり|である|だよ|だ|で|입니다|이에요|예요|이고|이다|임|요)$")
_CJK_STOP = re.compile(r"[、。，；：！？,;!?()（）]")

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
        end = m.end()
        if kw in _ENGLISH_KEY_WORDS and not _EN_VALUE_MARK.search(text, end, min(len(text), end + 80)):
            continue  # "max token count", "secret sauce": no copula or separator after the name
        attached = _PROSE_ATTACHED.match(text, end)
        if attached is not None and attached.end() > end:
            span = _attached_value(text, attached, kw)
        elif end < len(text) and text[end] not in " \t":
            continue
        else:
            span = _value_after_words(text, low, m, kw)
        if span:
            yield _Candidate(_P_ASSIGNMENT, "secret-assignment", *span)


def _attached_value(text: str, attached: re.Match[str], kw: str) -> tuple[int, int] | None:
    """The span of the value right after the keyword ``kw`` and ``attached`` (``=``, ``:``, a CJK
    particle: :data:`_PROSE_ATTACHED`): a quoted passphrase, a value :func:`_prose_value_ok` accepts,
    or an unquoted passphrase; None when there is none."""
    password_named = kw in _PROSE_PASSWORD_SET
    span = _prose_value(text, attached.end())
    explicit = "=" in attached.group() or "＝" in attached.group()
    quoted = text[attached.end():attached.end() + 1] in _PROSE_QUOTES
    phrase = (_passphrase_span(text, attached.end(), explicit)
              if quoted and password_named and kw not in _SHAPE_ONLY_WORDS else None)
    if phrase:
        return phrase
    if span and _prose_value_ok(text, span, kw, prose=not explicit):
        return span
    if password_named and kw not in _SHAPE_ONLY_WORDS and kw not in _AMBIGUOUS_PASSWORD_WORDS:
        return _passphrase_span(text, attached.end(), explicit)
    return None


def _value_after_words(text: str, low: str, m: re.Match[str], kw: str) -> tuple[int, int] | None:
    """The span of the value given to the keyword ``kw`` (matched by ``m`` in ``low``) within
    :data:`_PROSE_WORDS` words of it, on its line: after a copula or separator, before a closing copula
    (Hindi, Urdu, Persian), or right after a keyword of a language with no present-tense copula; None
    when the sentence ends, or names metadata of the password (:data:`_PROSE_METADATA`), first."""
    pos, end = m.start(), m.end()
    password_named = kw in _PROSE_PASSWORD_SET
    limit = min(len(text), end + _PROSE_WINDOW)
    newline = text.find("\n", end, limit)
    tokens = list(_PROSE_TOKEN.finditer(text, end, newline if newline != -1 else limit))[:_PROSE_WORDS + 1]
    words = [t.group().lower().strip(_PROSE_QUOTES) for t in tokens]
    for j, word in enumerate(words):
        if word.strip("-_:*`") in _PROSE_METADATA:
            return None
        value_at = None
        if j and word in _FINAL_COPULAS and password_named and j <= 4 and _ends_clause(text, tokens[j].end()):
            # Hindi, Urdu, Persian: the value comes before the copula ("पासवर्ड सूरजमुखी है")
            span = _prose_value(text, tokens[0].start()) if j == 1 else \
                _passphrase_span(text, tokens[0].start(), False, stop=tokens[j].start())
            if span and (j > 1 or _password_is_secret(text[span[0]:span[1]], prose=True)):
                return span
            return None
        if word in _PROSE_COPULAS or (word == "to" and kw in _POLISH_KEYWORDS):
            value_at = j + 1
        elif j == 0 and word == "to" and _SET_BEFORE.search(low, max(0, pos - 60), pos):
            value_at = j + 1
        elif j and (words[j - 1], word) in _PROSE_TWO_WORD_COPULAS:
            value_at = j + 1
        elif word[-1:] in (":", "：", "=") and len(word) > 1:
            value_at = j + 1
        elif j == 0:  # "Passwort Qm7#vLx29pK": no copula, a password-shaped value only
            span = _zero_copula_value(text, m, kw, tokens[0].start())
            if span:
                return span
        if value_at is not None and value_at < len(tokens):
            span = _prose_value(text, tokens[value_at].start())
            explicit = word in ("=", "＝") or word.endswith("=")
            if span and _prose_value_ok(text, span, kw, prose=not explicit):
                return span
            if password_named and kw not in _SHAPE_ONLY_WORDS and (
                    kw not in _AMBIGUOUS_PASSWORD_WORDS or text[tokens[value_at].start()] in _PROSE_QUOTES):
                phrase = _passphrase_span(text, tokens[value_at].start(), explicit)
                if phrase:
                    return phrase
        if tokens[j].group()[-1] in ".!?。！？" and word not in _PROSE_COPULAS:
            return None  # end of the sentence
    return None


def _zero_copula_value(text: str, m: re.Match[str], kw: str, start: int) -> tuple[int, int] | None:
    """The value right after the keyword with no copula between (the first word at ``start``): a
    password-shaped one (``Passwort Qm7#vLx29pK``), or, after a keyword of :data:`_ZERO_COPULA_WORDS`
    opening its clause, a word or a passphrase of up to three words (``Şifre ayçiçeği``, ``Пароль
    подсолнух``, ``كلمة المرور عباد الشمس``)."""
    span = _prose_value(text, start)
    if span and _prose_password_ok(text[span[0]:span[1]]) and _value_is_secret(text[span[0]:span[1]],
                                                                             kw in _PROSE_PASSWORD_SET):
        return span
    if span and kw in _ZERO_COPULA_WORDS and _clause_starts_at(text, m.start(), m.group("inflect")) \
            and not _ZERO_COPULA_VERB_FORM.search(text, span[0], span[1]):
        if _prose_value_ok(text, span, kw, prose=True):
            return span
        return _passphrase_span(text, start, False, max_words=3)
    return None


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
