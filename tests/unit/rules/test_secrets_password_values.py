"""Issue 14 follow-up, part 1: a value explicitly given to a password-named word is a password
whatever it looks like (letters only, one dictionary word, any script), a ``user:password`` pair in a
sentence about logging in is one, and a Slack webhook URL is one even with a masked token; obvious
placeholders and prose about a password are not. The reported inputs are the first cases of each list.
"""

import pytest

from consolidate.rules.secrets import redact, scan

# (text, the value that must be found and never shown)
SECRETS = [
    # reported
    ("the root password is correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("db password = letmein", "letmein"),
    ("password: correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("the wifi password is correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("Das Passwort ist sonnenblume", "sonnenblume"),
    ("пароль: подсолнух", "подсолнух"),
    # the same kind, other wordings, names and scripts
    ("DB_PASSWORD=hunter", "hunter"),
    ("password = 'admin'", "admin"),
    ("mysql password: qwerty", "qwerty"),
    ("the vpn password is bluebird.", "bluebird"),
    ("the staging mysql password is purplemonkey for the app user", "purplemonkey"),
    ('set the router admin password to "marbleriverfalcon" after the reset', "marbleriverfalcon"),
    ("la contraseña es girasol", "girasol"),
    ("le mot de passe est tournesol", "tournesol"),
    ("Das WLAN-Passwort lautet schmetterling.", "schmetterling"),
    ("пароль от базы — черепаха", "черепаха"),
    ("the door pin password is 482913", "482913"),
    ("password: correct-horse-battery-staple", "correct-horse-battery-staple"),
    ("psql --password letmeinplease on the replica", "letmeinplease"),
    ("<password>sunflower</password>", "sunflower"),
]
PAIRS = [
    # reported
    ("Use admin:Gr4fanaRocks2026 to log into grafana", "Gr4fanaRocks2026"),
    ("The staging basic auth is ops:Blu3Whale! for the dashboard", "Blu3Whale!"),
    ("the login for grafana is admin / Gr4fanaRocks2026 on the staging box", "Gr4fanaRocks2026"),
    # the same kind
    ("creds for the staging db are svc_app:Pa55word", "Pa55word"),
    ("sign in to jenkins as ci-bot:Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("login: deploy / Sunfl0wer! for jenkins", "Sunfl0wer!"),
    ("credentials for the router: root:Xk9#mPq2", "Xk9#mPq2"),
]
WEBHOOKS = [
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",  # reported
    "notify via https://hooks.slack.com/services/T0ABCDEFG/B0HIJKLMN/xxxxxxxxxxxxxxxxxxxxxxxx now",
]
NOT_SECRETS = [
    # placeholders the brief names; changeme stays a placeholder (documented in secrets.py)
    "<password>", "password: ***", "password: changeme", "password=${DB_PASSWORD}", "password: $PASSWORD",
    "password: your-password-here", "password: xxx", "<password> goes in the .env file",
    # prose that is not an assignment
    "the password is rotated monthly", "password is required", "the password field is empty",
    "Passwort wird monatlich rotiert",
    # the same kinds
    "password: str", "password: Optional[str] = None", "password: None", "password = None", "password: true",
    "the password is stored in vault", "Password: see 1Password", "the password is not set",
    "password is incorrect", "the password was changed yesterday", "the password is the same as staging",
    "the password is too short", "Das Passwort ist falsch", "the password is in the vault",
    "password: hidden", "the password is a secret", "password is correct now", "the password must be rotated",
    "the password is expired", "Le mot de passe est stocké dans Vault", "la contraseña está guardada en 1Password",
    "la contraseña es obligatoria", "пароль не задан", "password hashing uses argon2",
    "**Password Hashing**: bcrypt with salt rounds for secure password storage",
    "helm: password: db-password-secret", "the password is 12 characters long",
    # look-alikes of user:password
    "use image postgres:16-alpine for the login service", "login at http://localhost:8080 with the admin user",
    "log in to grafana at grafana.example.com:3000 with SSO", "auth module: handlers:login_view",
    "the login page uses node:20-alpine and redis:7.2", "login flow: step 1/3 done",
    "https://hooks.slack.com/services/<team>/<channel>/<token> is the template",
]


@pytest.mark.parametrize("text,value", SECRETS + PAIRS, ids=[t for t, _ in SECRETS + PAIRS])
def test_password_values_are_found_and_redacted(text, value):
    findings = scan(text)
    assert any(text[f.start:f.end] == value for f in findings), [(f.kind, text[f.start:f.end]) for f in findings]
    assert value not in redact(text)
    assert all(value not in f.preview for f in findings)


@pytest.mark.parametrize("text", WEBHOOKS)
def test_slack_webhook_is_a_secret_even_masked(text):
    assert [f.kind for f in scan(text)] == ["slack-webhook"]
    assert "hooks.slack.com/services/T" not in redact(text)


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_placeholders_and_prose_about_passwords_pass(text):
    assert scan(text) == [], [(f.kind, text[f.start:f.end]) for f in scan(text)]


@pytest.mark.parametrize("text,value", SECRETS[:6] + PAIRS[:3])
def test_reported_inputs_are_stored_redacted_at_write_time(store, text, value):
    note_id = store.sessions.add_note("s", text)
    assert note_id.notice and "held secret material" in note_id.notice
    [note] = store.sessions.notes("s")
    assert value not in note.content
    blob = b"".join(p.read_bytes() for p in store.path.glob("sessions.sqlite3*"))
    assert value.encode() not in blob
