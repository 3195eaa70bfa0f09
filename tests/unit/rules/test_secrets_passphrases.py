"""Secret gate, by kind (issue 14, misses a review found): letters-only passwords in the languages agents
write in (with their copulas, word orders and right-to-left text), passphrases of several words, and the
short secret names (pw, pwd, passwd, pass, creds, secret, token, api key). Each kind: the reported inputs,
other languages, scripts, lengths and names, and descriptions of a password that must pass."""

import pytest

from consolidate.rules.secrets import redact, scan

# (text, the secret): the finding must cover the secret exactly, and the redaction must hide it
LETTERS_ONLY = [
    # the reported inputs
    ("كلمة المرور هي عباد الشمس", "عباد الشمس"),
    ("Şifre ayçiçeği", "ayçiçeği"),
    ("Heslo k databázi je slunečnice", "slunečnice"),
    # Arabic: other copulas, no copula, a one-letter prefix, a Latin value in RTL text with bidi marks
    ("كلمة السر للخادم هي زهرة", "زهرة"),
    ("كلمة المرور عباد الشمس", "عباد الشمس"),
    ("وكلمة المرور: ياسمين", "ياسمين"),
    ("كلمة المرور هي \u200fsunflower\u200f", "sunflower"),
    # Hebrew, Persian, Urdu, Hindi (the value before the copula)
    ("הסיסמה היא חמנייה", "חמנייה"),
    ("رمز عبور آفتابگردان است", "آفتابگردان"),
    ("पासवर्ड सूरजमुखी है", "सूरजमुखी"),
    ("डेटाबेस का पासवर्ड सूरजमुखी है", "सूरजमुखी"),
    # Turkish: a possessive, a colon, "parola"
    ("Veritabanı şifresi ayçiçeği", "ayçiçeği"),
    ("Sunucu parolası: papatya", "papatya"),
    # Czech, Slovak, Polish, Hungarian, Swedish, Norwegian, Finnish, Greek, Romanian
    ("Heslo je slunečnice", "slunečnice"),
    ("heslo k serveru: slnečnica", "slnečnica"),
    ("Hasło do bazy to słonecznik", "słonecznik"),
    ("A jelszó napraforgó", "napraforgó"),
    ("Lösenordet till databasen är solros", "solros"),
    ("Passordet er solsikke", "solsikke"),
    ("Salasana on auringonkukka", "auringonkukka"),
    ("Ο κωδικός πρόσβασης είναι ηλιοτρόπιο", "ηλιοτρόπιο"),
    ("Parola pentru server este floarea", "floarea"),
    # Russian, Ukrainian (no copula), Indonesian, Vietnamese, Dutch, Italian
    ("Пароль подсолнух", "подсолнух"),
    ("Пароль: ромашка", "ромашка"),
    ("Пароль від бази — соняшник", "соняшник"),
    ("Kata sandi server adalah matahari", "matahari"),
    ("Kata sandi bunga matahari", "bunga matahari"),
    ("Mật khẩu là hướngdương", "hướngdương"),
    ("Het wachtwoord is zonnebloem", "zonnebloem"),
    ("La password del database è girasole", "girasole"),
    # Arabic construct state (no article: "the server's password"), Thai, a Vietnamese value of three words
    ("كلمة مرور الخادم هي ياسمين", "ياسمين"),
    ("كلمة سر الخادم: ياسمين", "ياسمين"),
    ("รหัสผ่าน: ทานตะวัน", "ทานตะวัน"),
    ("Mật khẩu wifi là hoa hướng dương", "hoa hướng dương"),
    # 3-letter words in the abjads (no short vowels written)
    ("كلمة المرور هي قمر", "قمر"),
    ("הסיסמה היא קשת", "קשת"),
    # two-word copulas: "will be", "is now", "ist jetzt"
    ("The new password will be sunflower", "sunflower"),
    ("the password is now sunflower", "sunflower"),
    ("Das Passwort ist jetzt Sonnenblume", "Sonnenblume"),
    # Hebrew construct state ("the server's password")
    ("סיסמת השרת היא פרפר כחול", "פרפר כחול"),
]
PASSPHRASES = [
    ("the root password for staging is correct horse battery staple", "correct horse battery staple"),
    ('password: "correct horse battery staple"', "correct horse battery staple"),
    ("password: correct horse battery staple", "correct horse battery staple"),
    ("The wifi passphrase is purple monkey dishwasher.", "purple monkey dishwasher"),
    ("db password = 'tiger lily river'", "tiger lily river"),
    ("Das Passwort ist grüner Apfelbaum", "grüner Apfelbaum"),
    ("La contraseña es caballo correcto batería grapa", "caballo correcto batería grapa"),
    ("the vpn password is orange tiger harbor for the office", "orange tiger harbor"),
    ("Passwort: «blaue Wolke Regen»", "blaue Wolke Regen"),
    ("пароль: зелёный слон река", "зелёный слон река"),
    ("pass phrase: purple monkey dishwasher", "purple monkey dishwasher"),
    ("Het wachtwoord voor de server is blauwe vlinder", "blauwe vlinder"),
    ("Sunucu şifresi: mavi kelebek", "mavi kelebek"),
    ("كلمة مرور السيرفر: فراشة زرقاء", "فراشة زرقاء"),
]
SHORT_NAMES = [
    ("pw = sunflower42", "sunflower42"),
    ("pw for staging box = sunflower", "sunflower"),
    ("PW: Sunfl0wer#9", "Sunfl0wer#9"),
    ("the pw is hunter22", "hunter22"),
    ("pwd: sunflower", "sunflower"),
    ("passwd=sunflower", "sunflower"),
    ("pass: sunflower42", "sunflower42"),
    ("ssh pass = Tr0ub4dor", "Tr0ub4dor"),
    ("creds: admin/sunflower42", "admin/sunflower42"),
    ("credentials: deploy:Gr4fana2026", "Gr4fana2026"),
    ("secret = sunflower", "sunflower"),
    ('secret: "sunflower"', "sunflower"),
    ("token: sunflower42", "sunflower42"),
    ("token = abc123xyz", "abc123xyz"),
    ("api key = sunflower42", "sunflower42"),
    ("API key: q7rT2x9w", "q7rT2x9w"),
    ("secret key = sunflower42", "sunflower42"),
    ("the api key for staging is sunflower42", "sunflower42"),
    ("the token for the demo account is demo1234x", "demo1234x"),
    ('secret: "purple monkey"', "purple monkey"),
    ('token "sunflower42"', "sunflower42"),
]
# descriptions of a password and other words that look like the names: must pass
DESCRIPTIONS = [
    "the password is stored in the vault",
    "password is required",
    "the password field is validated",
    "The password is case sensitive",
    "the password is rotated every month by the ops team",
    "password: see the team vault",
    "Password: use SSO instead",
    "Password: Azure Key Vault",
    "the password is the same as on staging",
    "The admin password is not set yet",
    "password: at least eight characters",
    "the password is hashed with bcrypt before it is stored",
    'password: "Enter your password"',
    '"password": "Password must be at least 8 characters"',
    "Passwort ist nicht gesetzt",
    "كلمة المرور مطلوبة",
    "كلمة المرور غير صحيحة",
    "Şifre gerekli",
    "Şifre en az 8 karakter olmalı",
    "Пароль неверный",
    "Пароль не задан",
    "Heslo je povinné",
    "Kata sandi salah",
    "पासवर्ड आवश्यक है",
    "pass the token to the client",
    "the tests pass: 12/12",
    "pass: 3, fail: 0",
    "npm run pw:biweekly-auto",
    "PW tests are flaky on CI",
    "Playwright (pw) runs headless",
    "token: string",
    "token = None",
    "secret: required",
    "the secret is to cache early",
    "token = response.json()['token']",
    "api key = os.environ['API_KEY']",
    "token: refreshed hourly",
    "creds: stored in 1Password",
    "the password reset flow sends an email",
    "passport: required for travel",
    "Passwort: steht im Tresor",
    "Пароль лежит в хранилище",
    "Пароль администратора",
    "Пароль: смотри в хранилище",
    "Kata sandi disimpan di vault",
    "رمز عبور در گاوصندوق است",
    "Heslo: viz trezor",
    "Şifre değişti",
    "Het wachtwoord is hetzelfde als in productie",
    "la clave es usar pnpm en vez de npm",
    "Parola riservata del linguaggio",
    "The password is now managed by Vault",
    "password: the one from the onboarding doc",
    "password: not needed locally",
    "the root password for staging is in 1Password",
    "Password changed to a stronger one",
    "pw reset link expires in 24h",
    "the token expires after one hour",
    "creds are in the team vault",
    "パスワードは保管庫にあります",
    "पासवर्ड वॉल्ट में है",
    "הסיסמה נמצאת בכספת",
    "the password can be anything",
    "the password will be rotated",
    "كلمة مرور قوية مطلوبة",
    "the secret key is base64 encoded",
    "The token limit is 4096",
    "the token count is 12k",
    "the token is sha256-hashed",
    "max tokens: 4096",
    "the secret sauce is caching",
    "the api key for openai is in .env",
    "the token for github is stored in keychain",
    "the access token is short-lived",
    "token for CI: see repo secrets",
    "the password is something simple",
    "password is behind cloudflare access",
    "the password is under the keyboard",
    "password: same old one",
    "the password is whatever Bob set",
    "password is pretty weak",
]


@pytest.mark.parametrize("text,secret", LETTERS_ONLY + PASSPHRASES + SHORT_NAMES)
def test_the_value_is_found_and_redacted(text, secret):
    findings = scan(text)
    assert [text[f.start:f.end] for f in findings] == [secret]
    assert secret not in redact(text)


@pytest.mark.parametrize("text", DESCRIPTIONS)
def test_descriptions_and_look_alikes_pass(text):
    assert scan(text) == []


def test_the_write_time_prefilter_scans_every_such_note():
    """The write-time gate skips text in which the gate can find nothing; it must not skip these."""
    from consolidate.store.sessions.write_gate import worth_scanning

    assert [t for t, _ in LETTERS_ONLY + PASSPHRASES + SHORT_NAMES if not worth_scanning(t)] == []


@pytest.mark.parametrize("text,secret", [LETTERS_ONLY[0], LETTERS_ONLY[1], LETTERS_ONLY[2], PASSPHRASES[0],
                                         PASSPHRASES[1], SHORT_NAMES[0], SHORT_NAMES[1]])
def test_reported_inputs_are_stored_redacted_at_write_time(store, text, secret):
    from test_secret_write_gate import assert_clean

    note_id = store.sessions.add_note("s", text)
    assert note_id.notice and "held secret material" in note_id.notice
    assert secret not in store.sessions.notes("s")[0].content
    assert_clean(store, secret)


def test_session_start_never_prints_them(tmp_path, monkeypatch):
    """End to end through the CLI as a user writes them: flagged notes, a run with the no-op judge, the
    SessionStart hook; no value reaches the context or any file of the store (event log included)."""
    from cli_flow import session_start_after_flagged_notes

    cases = LETTERS_ONLY[:3] + PASSPHRASES[:2] + SHORT_NAMES[:2]
    code, out = session_start_after_flagged_notes(tmp_path, monkeypatch, [t for t, _ in cases] + ["Use pnpm, not npm"],
                                                  kind="fact")
    assert code == 0 and "Use pnpm" in out
    blob = b"".join(p.read_bytes() for p in (tmp_path / ".memofs").rglob("*") if p.is_file())
    for _, secret in cases:
        assert secret not in out and secret.encode() not in blob
