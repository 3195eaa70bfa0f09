"""Secret-named words in the languages agents write in (issue 14, input 2): the password sentence of the
report in each language, other shapes per language (separator, key/token words, CJK particles), the
look-alikes that must pass, and the SessionStart context that must never print the value."""

import pytest

from consolidate.rules.secrets import redact, scan

PW = "Qm7#vLx29pK"

#: The reported sentence, and the same sentence in the ten languages most used on GitHub after English
#: (and a few more): "The password for the staging database is Qm7#vLx29pK".
SENTENCES = {
    "en": f"The password for the staging database is {PW}",
    "de": f"Das Passwort für die Staging-Datenbank ist {PW}",
    "es": f"La contraseña de la base de datos de staging es {PW}",
    "fr": f"Le mot de passe de la base de données de staging est {PW}",
    "ru": f"Пароль от базы данных staging — {PW}",
    "ja": f"ステージングデータベースのパスワードは{PW}です",
    "pt": f"A senha do banco de dados de staging é {PW}",
    "zh": f"预发布数据库的密码是{PW}",
    "zh-hant": f"預發布資料庫的密碼是 {PW}",
    "ko": f"스테이징 데이터베이스 비밀번호는 {PW}입니다",
    "it": f"La password del database di staging è {PW}",
    "tr": f"Staging veritabanının şifresi {PW}'dir",
    "pl": f"Hasło do bazy danych staging to {PW}",
    "uk": f"Пароль до бази даних staging: {PW}",
    "nl": f"Het wachtwoord van de staging-database is {PW}",
    "id": f"Kata sandi database staging adalah {PW}",
    "vi": f"Mật khẩu của cơ sở dữ liệu staging là {PW}",
    "hi": f"स्टेजिंग डेटाबेस का पासवर्ड {PW} है",
    "ar": f"كلمة المرور لقاعدة بيانات staging هي {PW}",
}

#: Other shapes: separators, other secret words (key, token), inflected forms, quotes.
OTHER_SHAPES = [
    "Passwort: Sommer2024!x",
    "Kennwort der Admin-Konsole lautet 'Tr0ub4dor&3'",
    "Der API-Schlüssel für Stripe lautet 9fQ2kLm8Xw3ZpR7tYv",
    "contraseña=Lk29#pQ7zz",
    "La clave del wifi de la oficina es Casa#2024x",
    "mot de passe : Azerty#4521",
    "Le jeton d'accès GitLab est 8kT2mQ9xLw4pZ7rV3nB6",
    "senha do admin: Pw9!kd72Lq",
    "пароля от сервера нет в вики, он такой: Zx81!mqP0",
    "API-ключ сервиса — h7Kp2WmQ9xZr4TbV8nLc",
    "パスワード：Kp7!xw92Qa",
    "本番DBの暗証番号は 8842Qx!aa です",
    "密码为 Lq82!xnPz0",
    "API 密钥是 hK8s9Q2mXw4pZ7rV3nB6yT",
    "관리자 비밀번호: Zk29!qpL0x",
    "Şifre: Kx92!plmQa",
    "hasło do panelu: Pl92#xkQa",
    "la password dell'utente admin è Ap9!xk22Lm",
    "wachtwoord = Nl82!qpxZa",
    "mật khẩu wifi là Vn82!xqpLa",
]

#: Ordinary notes about passwords and keys, in the same languages: never blocked.
LOOK_ALIKES = [
    "Das Passwort muss mindestens 12 Zeichen haben",
    "Das Passwort liegt im Tresor, nicht im Repository",
    "Die Passwort-Richtlinie ist: mindestens 12 Zeichen, eine Ziffer",
    "la contraseña es obligatoria en el formulario de registro",
    "La contraseña se guarda con bcrypt, coste 12",
    "Le mot de passe est stocké dans Vault sous secret/data/staging",
    "la longueur du mot de passe est de 12 caractères",
    "Пароль хранится в Vault, путь secret/data/staging",
    "Пароль: см. переменную окружения DB_PASSWORD",
    "パスワードは1Passwordに保存しています",
    "パスワードは環境変数 DB_PASSWORD から読む",
    "A senha fica no cofre do 1Password, nunca no repositório",
    "密码是在 .env 文件里配置的",
    "密码：见 DB_PASSWORD 环境变量",
    "비밀번호는 환경 변수 DB_PASSWORD에 있습니다",
    "la password è nel file config.yaml",
    "Şifre sıfırlama bağlantısı 24 saat geçerlidir",
    "Hasło jest w menedżerze haseł, nie w repo",
    "According to `20250115_fix_admin_rls.sql`, the password should be rotated",
    "The password for the staging database is in 1Password",
    "Het wachtwoord is hetzelfde als in productie",
    "Kata sandi adalah ${DB_PASSWORD} dari environment",
    "la clave es usar pnpm en vez de npm",
    "Klavier ist 8x schneller mit dem neuen Build",
    "Der Schlüssel ist die Cache-Invalidierung nach dem Deploy",
    "токен обновляется каждые 15 минут",
    "API 키는 Secrets Manager에 저장됩니다",
    "トークンの有効期限は 3600 秒です",
]


@pytest.mark.parametrize("lang", sorted(SENTENCES))
def test_reported_sentence_is_blocked_in_every_language(lang):
    text = SENTENCES[lang]
    findings = scan(text)
    assert [text[f.start:f.end] for f in findings] == [PW], lang
    assert PW not in redact(text)


@pytest.mark.parametrize("text", OTHER_SHAPES)
def test_other_shapes_are_blocked(text):
    findings = scan(text)
    assert findings, text
    assert all(f.kind == "secret-assignment" for f in findings)
    red = redact(text)
    assert scan(red) == [], "the redacted text scans clean"
    for f in findings:
        assert text[f.start:f.end] not in red


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_pass(text):
    assert scan(text) == [], [(f.kind, text[f.start:f.end]) for f in scan(text)]


def test_upper_case_turkish_dotted_i_keeps_offsets():
    text = f"İSTANBUL SUNUCUSUNUN ŞİFRESİ: {PW}"
    [f] = scan(text)
    assert text[f.start:f.end] == PW


def test_session_start_context_never_prints_a_multilingual_password(tmp_path):
    """End to end: a note in each language goes through a run with a keep-everything judge; the
    SessionStart hook's output holds none of the passwords (they were blocked at write time)."""
    from consolidate import Store
    from consolidate.agents.hooks.full import run_hook
    from consolidate.pipeline.run import run_session
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    from conftest import keep

    st = Store(tmp_path / ".memofs", embedding="hash", project="p")
    for lang, text in SENTENCES.items():
        st.sessions.add_note("s", text, flag=(lang in ("de", "ja")), kind="fact")
    st.sessions.end("s", "success")
    judge = ScriptedJudge(lambda note: keep(note.content, "fact"))
    run_session(st, "s", chain_factory=lambda: JudgeChain([judge]), time_box=None)
    code, out = run_hook(st.path, payload={"hook_event_name": "SessionStart", "session_id": "n"}, spawn=False)
    assert code == 0 and PW not in out
    assert PW not in st.sub("sessions.sqlite3").read_bytes().decode("latin-1")
