"""Secret gate, by kind (misses a new-user review found): credential pairs written with a slash or on a
database line, a credentials line giving a bare value after the user, ``user:password@host`` without a
scheme, "set the password to X" in Japanese, Chinese and Korean, a secret variable name followed by a space
and its value, and access-code / PIN-code words with their copulas. Each kind: the reported input, other
inputs of the kind, and look-alikes that must pass. Also: a flagged note the gate blocked at write time is
not reported as "kept" by the write policy's line.

Filed before as tests/test_secrets_review.py.
"""

import pytest

from consolidate.rules.secrets import redact, scan

# (text, the secret): the finding must cover the secret exactly, and the redaction must hide it
CREDENTIAL_PAIRS = [
    # user/password with no spaces on a login line (reported), other login words
    ("login with admin/Tulipan!2024 on the router", "Tulipan!2024"),
    ("ssh login: deploy/Hx9#mQ2v", "Hx9#mQ2v"),
    ("sign in as ops/Sonnenblume2020 on grafana", "Sonnenblume2020"),
    ("basic auth for the staging proxy is ci/Wq7rT2xZ", "Wq7rT2xZ"),
    # user / password on a database line (reported), DSN and database words
    ("DB: postgres / Camelia_31 on port 5432", "Camelia_31"),
    ("database login is app / Rz8!kLm2", "Rz8!kLm2"),
    ("db user+pw: reporting:Kx7mQ2pL", "Kx7mQ2pL"),
    # a credentials line that names the user, then a bare value (reported)
    ("Database credentials: user=app, Sonnenblume2020", "Sonnenblume2020"),
    ("login: username=ops; Tulpe!2023", "Tulpe!2023"),
    ("Zugangsdaten: Benutzer=admin, Kx9#mQ2v", "Kx9#mQ2v"),
]
USERINFO = [
    # user:password@host with no scheme (reported), an IP, localhost, a bracketed IPv6 address
    ("root:Kastanie42@db.internal is the DSN user part", "Kastanie42"),
    ("connect as app:Zx81!mq@10.0.0.5", "Zx81!mq"),
    ("psql with reporter:Mondschein7@localhost", "Mondschein7"),
    ("try svc:Ahorn_2024@[::1]", "Ahorn_2024"),
]
CJK_SET_TO = [
    # Japanese: を/は ... 「」『』"" ... に変更/に設定 (reported: the first)
    ("パスワードを「さくらもち」に変更した", "さくらもち"),
    ("パスワードを『ひまわり』に設定しました", "ひまわり"),
    ("Wi-Fiのパスワードはhunter42に変更", "hunter42"),
    ("暗証番号を「482913」に変更", "482913"),
    # Chinese: 改为 / 设为 / 改成, simplified and traditional, quoted or not
    ("密码改为向日葵", "向日葵"),
    ("数据库密码已设为「月季花」", "月季花"),
    ("把数据库密码改成sunflower42", "sunflower42"),
    ("密碼改為向日葵", "向日葵"),
    # Korean: ...로/으로 변경/설정
    ("비밀번호를 해바라기로 변경했다", "해바라기"),
    ('비밀번호를 "sunflower"로 설정', "sunflower"),
]
SPACED_NAMES = [
    # a secret variable name, a space, a high-entropy value (reported: the first)
    ("aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLm3Tr9", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLm3Tr9"),
    ("export GITHUB_TOKEN ghx_16C7e42F292c6912E7710c838347Ae178B4a", "ghx_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("client_secret 8Qm2vLx9pKr4TzW7nYb3HcJ5", "8Qm2vLx9pKr4TzW7nYb3HcJ5"),
    ("sessionToken Zk4Lq9Wm2Xr7Tb5Nv8Hc3Jp6 was in the log", "Zk4Lq9Wm2Xr7Tb5Nv8Hc3Jp6"),
]
ACCESS_CODES = [
    # German access code + lautet (reported), Zugangsdaten, Kennwort lautet, other languages' words
    ("Der Zugangscode lautet Fliederbusch", "Fliederbusch"),
    ("Die Zugangsdaten lauten Fliederbusch", "Fliederbusch"),
    ("Das Kennwort lautet Fliederbusch", "Fliederbusch"),
    ("The access code is sunflower", "sunflower"),
    ("PIN code: 482913", "482913"),
    ("Le code d'accès est tournesol", "tournesol"),
    ("El código de acceso es girasol", "girasol"),
    ("Код доступа: подсолнух", "подсолнух"),
    ("Het toegangscode is zonnebloem", "zonnebloem"),
    ("アクセスコードは「ひまわり」", "ひまわり"),
]
LOOK_ALIKES = [
    # slash pairs: paths, branches, dates, fractions, names with a digit inside
    "login page lives in src/Main2.java",
    "login code in src/main/Main2x/Login.kt",
    "merged feature/login-2fa into main",
    "DB migration on 2024/11/30",
    "login works for 3/4 users",
    "login flow: oauth/callback2 handler",
    "login via OAuth2/OIDC",
    "db schema v2/V3Migration",
    "DB user is app/readonly",
    "db: see src/db/Conn2.java",
    "the login uses JWT/OAuth2 tokens",
    "the login uses jwt/OAuth2 tokens",
    "SSH login: key/ed25519 only",
    "login via http/IPv6",
    "login rate limit 5/10min",
    "Login as admin/admin on first boot",
    "DB: host=db user=app dbname=prod sslmode=require",
    "credentials: user=app, see 1Password",
    # credentials lines without a bare password
    "database credentials: user=app, port 5432",
    "Database: user=app, role=readonly",
    "login: user=ops, see docs/Login.md",
    # user@host and scheme-like pairs
    "login via ssh git@github.com:org/repo.git",
    "mailto:ops@example.com for login help",
    "image node:18@sha256:abc",
    "pip install pkg:Name2@1.2.3",
    # CJK sentences about changing a password
    "パスワードを新しいものに変更した",
    "パスワードを定期的に変更",
    "パスワードを12文字以上に設定",
    "密码改为至少12位",
    "密码改为随机生成",
    "密码改为强密码",
    "비밀번호를 새로운 것으로 변경",
    "비밀번호를 주기적으로 변경",
    # a secret name and a space, then prose or a path
    "the session_token expires after 3600 seconds",
    "the refresh_token rotates: see docs/auth/RefreshTokenFlow.md",
    "api_key rotation happens every ninety days",
    # access-code words with a description
    "Der Zugangscode wird per SMS geschickt",
    "The access code is required",
    "Zugangsdaten liegen im Vault",
    "the PIN code policy changed",
]


@pytest.mark.parametrize("text,secret", CREDENTIAL_PAIRS + USERINFO + CJK_SET_TO + SPACED_NAMES + ACCESS_CODES)
def test_the_value_is_found_and_redacted(text, secret):
    findings = scan(text)
    assert [text[f.start:f.end] for f in findings] == [secret]
    assert secret not in redact(text)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_pass(text):
    assert scan(text) == []


def test_the_write_time_prefilter_scans_every_such_note():
    from consolidate.store.sessions.write_gate import worth_scanning

    cases = CREDENTIAL_PAIRS + USERINFO + CJK_SET_TO + SPACED_NAMES + ACCESS_CODES
    assert [t for t, _ in cases if not worth_scanning(t)] == []


REPORTED = [CREDENTIAL_PAIRS[0], CREDENTIAL_PAIRS[4], CREDENTIAL_PAIRS[7], USERINFO[0], CJK_SET_TO[0],
            SPACED_NAMES[0], ACCESS_CODES[0]]


def test_session_start_never_prints_the_reported_inputs(tmp_path, monkeypatch):
    """End to end through the CLI: flagged notes, a run with the no-op judge, the SessionStart hook; no
    value reaches the context or any file of the store."""
    from cli_flow import session_start_after_flagged_notes

    code, out = session_start_after_flagged_notes(tmp_path, monkeypatch, [t for t, _ in REPORTED] + ["Use pnpm, not npm"],
                                                  kind="fact")
    assert code == 0 and "Use pnpm" in out
    blob = b"".join(p.read_bytes() for p in (tmp_path / ".memofs").rglob("*") if p.is_file())
    for _, secret in REPORTED:
        assert secret not in out and secret.encode() not in blob


@pytest.mark.parametrize("text,blocked", [(REPORTED[0][0], True), ("Use pnpm, not npm: the lockfile is pnpm-lock.yaml", False)])
def test_the_policy_line_of_a_blocked_note_does_not_say_kept(tmp_path, monkeypatch, capsys, text, blocked):
    from consolidate.cli.main import main

    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    assert main(["note", "--session", "S", text, "--flag", "--kind", "fact"]) == 0
    out = capsys.readouterr()
    policy = [line for line in out.out.splitlines() if line.startswith("policy:")]
    assert len(policy) == 1
    assert ("kept as a" in policy[0]) is not blocked
    assert ("not kept" in policy[0]) is blocked
    assert ("will not be consolidated" in out.err) is blocked


def test_import_policy_line_of_a_blocked_line_does_not_say_kept(tmp_path, monkeypatch, capsys):
    import json

    from consolidate.cli.main import main

    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    path = tmp_path / "notes.jsonl"
    path.write_text("\n".join(json.dumps({"content": c, "flag": True, "kind": "fact"})
                              for c in (REPORTED[4][0], "Use pnpm, not npm: the lockfile is pnpm-lock.yaml")) + "\n",
                    encoding="utf-8")
    assert main(["import", str(path), "--session", "S"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "policy:" in line]
    assert len(lines) == 2
    assert lines[0].startswith("line 1") and "not kept" in lines[0] and "kept as a" not in lines[0]
    assert lines[1].startswith("line 2") and "kept as a fact" in lines[1]


def test_mcp_policy_line_of_a_blocked_note_does_not_say_kept():
    from consolidate.mcp.server import note_policy_line

    assert "not kept" in note_policy_line(REPORTED[0][0], flag=True, kind="fact", blocked=True)
    assert "kept as a fact" in note_policy_line("Use pnpm, not npm", flag=True, kind="fact")
