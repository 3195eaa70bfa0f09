"""A letters-only password in any script given to a password word of any language (issue 14: the
Japanese ``パスワード: ひまわり`` was stored, because a value in a CJK script was cut away as if it were
a particle tail, and texts under 8 characters were not scanned at all). The kind: a password word of
~20 languages, a separator (``:``, ``：``, ``＝``, ``=``, ``は``, ``是``, ``为``, ``는``/``은``, ``ist``,
``es``, ``est``, ``é``, ``это``, ``—``), a value of letters of any script, 2 characters and up for a
CJK script; prose about a password and placeholders stay unblocked."""

from __future__ import annotations

import pytest

from consolidate.rules.secrets import scan
from consolidate.store.sessions.write_gate import worth_scanning

# (password word + separator, value): every script, several lengths
BLOCK = [
    # Japanese: hiragana, katakana, kanji; colon, full-width colon and equals, topic particle, brackets
    ("パスワード: ", "ひまわり"), ("パスワード：", "ひまわり"), ("パスワード＝", "さくら"), ("パスワードは", "ひまわり"),
    ("パスワードは ", "ゆきだるま"), ("パスワード: ", "サクラ"), ("パスワード: ", "紫陽花"), ("パスワード: ", "富士山"),
    ("暗証番号：", "ねこ"), ("パスワードは「", "ひまわり」"), ("パスワード: ", "ひまわり2"),
    # Chinese (simplified, traditional) and Korean
    ("密码：", "向日葵"), ("密码是", "向日葵"), ("密码为", "春天"), ("密碼：", "向日葵"), ("口令:", "春天"),
    ("비밀번호: ", "해바라기"), ("비밀번호는 ", "해바라기"), ("비밀번호: ", "고양이"), ("패스워드: ", "나비"),
    # other scripts and copulas (the kind beyond CJK)
    ("Das Passwort ist ", "sonnenblume"), ("Kennwort: ", "regenbogen"), ("la contraseña es ", "girasol"),
    ("le mot de passe est ", "tournesol"), ("a senha é ", "girassol"), ("пароль это ", "подсолнух"),
    ("пароль: ", "черепаха"), ("Пароль — ", "радуга"), ("hasło: ", "słonecznik"), ("şifre: ", "ayçiçeği"),
    ("كلمة المرور: ", "عباد"), ("पासवर्ड: ", "सूरजमुखी"), ("the root password is ", "correcthorsebatterystaple"),
]
# With a sentence around it and a copula tail
BLOCK_SENTENCES = [
    "本番DBのパスワードはさくらです。",
    "パスワードはひまわりで、ユーザー名はadmin",
    "パスワードはひまわり、ユーザー名はadmin",
    "密码是向日葵，用户名是admin",
    "密码：向日葵（测试环境）",
    "密码: 向日葵 (staging)",
    "비밀번호는 해바라기이고 아이디는 admin",
    "ステージングのパスワードはひまわりでした",
    "管理者 비밀번호는 해바라기입니다",
    "测试服务器的密码是向日葵。",
]

ALLOW = [
    # status, policy, pointers, questions, verbs: Japanese
    "パスワード: 必須", "パスワードは必須です", "パスワードは定期的に変更されます", "パスワードが必要です",
    "パスワードを変更しました", "パスワード：未設定", "パスワードは8文字以上必要です", "パスワード：最低8文字",
    "パスワードはこちら", "パスワードはどこ？", "パスワードは1Passwordに保存", "パスワードはハッシュ化して保存",
    "パスワード", "パスワードマネージャーを使う", "パスワードはリセット済み",
    # Chinese, Korean
    "密码：已重置", "密码是什么？", "密码为空", "密码长度至少8位", "密码：请联系管理员",
    "비밀번호: 필수", "비밀번호는 여기", "비밀번호는 8자 이상이어야 합니다", "비밀번호를 변경했습니다",
    # placeholders and prose in other scripts
    "Passwort: changeme", "Das Passwort ist erforderlich", "la contraseña es obligatoria", "пароль: обязателен",
    "the password is rotated monthly", "password: <your password>", "パスワード: ${DB_PASSWORD}",
]


@pytest.mark.parametrize("prefix, value", BLOCK)
def test_letters_only_value_in_any_script_is_blocked(prefix, value):
    text = prefix + value
    findings = scan(text)
    assert findings, text
    secret = value.strip("」")
    assert all(secret not in f.preview for f in findings)
    assert any(text[f.start:f.end] == secret for f in findings)
    assert worth_scanning(text)  # the write-time gate scans it too


@pytest.mark.parametrize("text", BLOCK_SENTENCES)
def test_in_a_sentence_with_a_copula_tail(text):
    [finding] = scan(text)
    assert text[finding.start:finding.end] in {"さくら", "ひまわり", "해바라기", "向日葵"}


@pytest.mark.parametrize("text", ALLOW)
def test_prose_about_a_password_and_placeholders_pass(text):
    assert scan(text) == [], text


def test_the_reported_note_is_redacted_at_write_time(store):
    note_id = store.sessions.add_note("s", "パスワード: ひまわり")
    assert note_id.notice and "held secret material" in note_id.notice
    [note] = store.sessions.notes("s")
    assert "ひまわり" not in note.content
    blob = b"".join(p.read_bytes() for p in store.path.glob("sessions.sqlite3*"))
    assert "ひまわり".encode() not in blob
