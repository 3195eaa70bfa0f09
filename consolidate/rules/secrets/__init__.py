"""The secret gate: find secret material in a note before it reaches a judge or the store.

:func:`scan` returns one :class:`Finding` per secret; an empty list means the text is clean.
A finding never carries the secret itself, only a redacted :attr:`Finding.preview` (its kind and
length, and for a value of 16+ characters at most its first eighth, see :func:`redact_preview`) and the offsets of the secret in the text, so that
:func:`redact` can print a note safely in logs.

Every rule runs over the text as written and over its folded view (consolidate/core/normal.py
``fold_map``: invisible and format characters removed, NFC, fullwidth forms folded): a key with a
zero-width space, a soft hyphen or a tag character inside is found as the key it reads as, and its
finding spans the whole original, the invisible characters inside it included.

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

from consolidate.rules.secrets.findings import Finding, redact_preview
from consolidate.rules.secrets.gate import redact, scan, user_reason
from consolidate.rules.secrets.values import shannon_entropy

__all__ = ["Finding", "scan", "redact", "redact_preview", "user_reason", "shannon_entropy"]
