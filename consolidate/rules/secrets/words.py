"""The word tables of the secret gate: placeholders, type and status words, copulas, connectors and
the secret-named words of ~30 languages (see the package docs)."""

from __future__ import annotations



# Documentation placeholders and vendor defaults (RabbitMQ guest/guest, the postgres image,
# MySQL root) that, used as a password, reveal nothing. Compared lower-cased, whole value.
_PLACEHOLDER_WORDS = frozenset(
    """password passwd pass pwd pw secret secrets changeme change_me change-me xxx x
    postgres root admin guest test user username mysql redis default none null nil true false
    token apikey api_key api-key key mypassword yourpassword your_password your-password
    password123 password1 pass123 secret123 admin123 mysecret mysecretpassword supersecret
    s3cret s3cr3t p@ssw0rd p@ssword passw0rd 123456 12345678 qwerty letmein dev local
    1password lastpass bitwarden keepass keepassxc keychain""".split()
)
_PATH_ROOTS = frozenset(
    "home users etc usr var tmp opt root srv mnt run app apps data workspace workspaces "
    "secrets config private keys certs ssl dev proc sys library volumes".split()
)

# Last segment of a secret-named variable that makes it metadata about a secret, not a secret:
# api_key_id, secret_name, token_url, password_hash, max_tokens, token_type, ...
_METADATA_SUFFIXES = frozenset(
    """id ids name names url urls uri endpoint path paths file files dir arn type types length
    len count limit limits size ttl expiry expires expiration expired format env var vars ref
    version header headers field fields prefix hash hashed digest checksum fingerprint sha sha1
    sha256 sha512 md5
    tokens usage budget index location store manager provider policy rotation required min max
    scope scopes label labels mode enabled""".split()
)

# What stands in for a password rather than being one, when a password-named word is given a value
# explicitly. Weak and vendor-default passwords (letmein, admin, postgres, 123456) are NOT here: they
# open real accounts, so ``password = letmein`` is a secret. ``changeme`` (and change-me/change_me)
# stays a placeholder: the value names itself as one to be replaced, the canonical stand-in of
# documentation and templates. Compared lower-cased, whole value.
_PASSWORD_PLACEHOLDER_WORDS = frozenset(
    """password passwd pass pwd pw passphrase secret secrets changeme change_me change-me x xx xxx
    none null nil undefined true false yes no empty blank unset n/a na tbd todo tba fixme redacted
    masked hidden omitted removed required optional mandatory same different
    1password lastpass bitwarden keepass keepassxc keychain vault""".split()  # where it lives
)

# Type names: ``password: str`` is a declaration, not an assignment.
_TYPE_WORDS = frozenset(
    """str string bytes int integer bool boolean any object text varchar char secretstr secretbytes
    securestring optional field charfield passwordfield base64 base64url utf8 hex sha256 bearer jwt""".split()
)

# Words that, after "the password is" (or "Passwort:"), say something about the password instead of
# being it: "password is required", "the password is rotated monthly", "Passwort ist falsch". Only
# letters-only values are checked against them (a value with a digit or symbol is judged as before).
_PROSE_STATUS_WORDS = frozenset(
    """a an the this that these those it its not never no now still also only just already always
    too very so then there here in on at of for to from by with without into via as if when
    set unset stored saved kept managed shared rotated changed reset expired locked disabled enabled
    hashed encrypted salted generated random unique known unknown correct incorrect wrong right
    valid invalid required optional mandatory empty blank missing needed necessary same different
    weak strong secure insecure long short new old default temporary permanent case sensitive
    available unavailable provided given stored configured updated hidden visible masked see ask
    in use being handled checked verified accepted rejected ignored sent shown printed logged
    nicht kein keine leer erforderlich falsch richtig geändert abgelaufen gesetzt gespeichert
    verschlüsselt gleich neu alt ungültig gültig zu sehr noch schon auch nur der die das ein eine
    no es la el un una obligatorio obligatoria vacío vacía incorrecto incorrecta correcto correcta
    nuevo nueva igual requis requise obligatoire vide pas le les une nouveau nouvelle faux fausse
    não é obrigatório obrigatória vazio vazia errado errada igual nova novo
    не нет пустой пустая обязателен обязательный неверный неправильный верный новый старый тот
    такой же
    vergessen ändern benötigt notwendig stark schwach zurückgesetzt fort faible fuerte débil fraca forte
    ok okay fine good bad secret private public unchanged enough
    gerekli zorunlu yanlış hatalı doğru boş değişti değiştirildi sıfırlandı eksik geçersiz geçerli yok var
    aynı yeni eski unutuldu kilitli şifreli gizli saklı güçlü zayıf nedir ne değiştir sıfırla gir girin
    giriniz değil
    правильный верный нужен нужна нужно требуется изменён изменен изменена сброшен сброшена истёк истек
    забыт забыли слабый сложный простой надёжный надежный скрыт зашифрован хранится сохранён сохранен задан
    установлен должен минимум сменить изменить ввести введите восстановить сбросить какой где
    невірний неправильний правильний порожній потрібен обов'язковий змінено скинуто забули слабкий
    надійний введіть змінити скинути немає
    مطلوبة مطلوب خاطئة خاطئ صحيحة صحيح فارغة فارغ قوية ضعيفة جديدة قديمة غير لا تم منتهية مشفرة مخفية
    أدخل ادخل تغيير إعادة نسيت هنا في من
    שגויה נכונה חובה ריקה חזקה חלשה חדשה ישנה
    salah benar wajib diperlukan kosong kuat lemah baru lama diubah direset lupa tidak belum sudah harus
    masukkan ganti tersimpan terenkripsi
    hibás helytelen helyes kötelező üres erős gyenge új régi megváltozott elfelejtett
    اشتباه نادرست درست الزامی خالی قوی ضعیف جدید
    गलत सही आवश्यक ज़रूरी जरूरी खाली मजबूत कमजोर नया पुराना बदला भूल
    nesprávné špatné správné povinné prázdné silné slabé nové staré změněno zapomenuté uloženo
    vyžadováno nutné neplatné platné
    nieprawidłowe błędne poprawne wymagane puste silne słabe nowe stare zmienione zapomniane
    onjuist fout juist verplicht vereist leeg sterk zwak nieuw oud gewijzigd vergeten opgeslagen
    errata sbagliata corretta obbligatoria richiesta vuota debole nuova vecchia cambiata dimenticata salvata
    sai đúng trống mạnh yếu mới cũ
    steht liegt befindet lies sits lives лежит хранится находится лежать disimpan tersimpan berada está están
    trouve fica sta trova znajduje leží staat ligt bulunuyor duruyor nằm موجود توجد""".split()
)

# Function words and imperatives of the languages above that never occur in a passphrase and often in a
# sentence about a password: "the password is stored in the vault", "password: see below", "password:
# use SSO", "Heslo je uloženo v trezoru". A value of several words holding one is a description.
_PASSPHRASE_STOP_WORDS = frozenset(
    """a an the this that these those it its is are was were be been being to of in on at for from by with
    without as and or but not no nor if then than so very too also only just still already your my our
    their his her we you they he she i me us them there here what which who whom where when how why all any
    some each every other another such both either neither enough more most less least many much few
    own same should must can could will would may might shall do does did done has have had get got
    use used using see ask check read set run enter type look contact find fetch copy paste generate
    rotate request reset change update store keep save send share call email ping refer follow open visit
    click via per min max minimum maximum least characters chars char digits letters symbols length long
    der die das den dem des ein eine einen einem und oder für mit im in zu von auf ist nicht aus bei nach
    el la los las de del y o en con por para un una es se lo al
    le les des du et ou avec pour par une est pas ne dans sur au aux
    os as do da dos das e em com um uma não ao
    il gli di della e o con per è non nel nella
    het een en of op met voor van niet naar
    и или в на с для по не из к от это у о об
    ve veya ile için bu bir değil da de
    في من على إلى و أو مع عن هذا هذه هو هي لا غير
    dan atau di ke dari untuk dengan ini itu yang
    a nebo v na s pro je není z do
    i lub w na z dla jest nie do
    में का की के को से पर और या भी ही तो दिया गया किया हो नहीं
    als wie como comme come как як gibi seperti như जैसा مثل مانند jako jak niż than like
    hetzelfde dasselbe derselbe dieselbe gleiche mismo misma même stesso stessa mesmo mesma такой такой же
    sama giống
    usar utilizar ver pedir preguntar revisar consultar utiliser voir demander vérifier usare vedere chiedere
    controllare benutzen verwenden nutzen sehen siehe fragen prüfen gebruiken zien vragen использовать
    используй смотри спроси kullan bak sor gunakan lihat tanya dùng xem hỏi
    viz patrz zie vedi veja bkz देखें انظر ببینید
    در به از با برای که این آن را یا
    jetzt noch ahora todavía maintenant encore agora ainda adesso ancora teraz nadal nyní stále nu nog şimdi
    hâlâ sekarang masih giờ vẫn сейчас теперь ещё зараз досі الآن
    something anything nothing whatever everything someone somewhere simple easy hard obvious complex
    complicated tricky behind under above below inside outside within between after before during until
    since through across near next beside over about around against except""".split()
)

# the next word after a value that still ends its clause: "the password is X for the staging db"
_CLAUSE_CONNECTORS = frozenset(
    """for on in at to of and but or so with from via when if und für auf im in bei oder aber para
    en de del y o pero pour sur dans et ou mais per su e ma для на в и но или от к у с
    ve veya için ile dan atau untuk di ke a nebo pro v na i lub dla w z en of voor op met
    و أو في على من ל ב""".split()
)
_URI_SCHEMES = frozenset("http https ftp ssh git file mailto urn data ws wss tcp udp jdbc s3 gs docker".split())

#
# "Das Passwort für die Staging-Datenbank ist Qm7#vLx29pK": a secret-named word, up to six words
# about what it is for, a copula or separator, the value. The keywords and copulas are the common
# words of the languages most used on GitHub (its Octoverse reports name, after English, Chinese,
# Spanish, Portuguese, Russian, Japanese, German, French, Korean, Hindi, Indonesian, Turkish,
# Polish, Italian, Ukrainian, Vietnamese, Persian and Arabic as the largest developer populations);
# each list is the everyday word for a password (and for a key, token or secret), in lower case.
# Password words take a password (6+ characters, letters and a digit or symbol, see
# _value_is_secret); key/token/secret words take only a token-like value (12+ characters).
_PROSE_PASSWORD_WORDS = (
    # en, de, nl
    "password", "passwords", "passphrase", "pass phrase", "passcode", "passwort", "passwörter", "kennwort", "wachtwoord",
    # es, pt, fr, it
    "contraseña", "contrasena", "clave", "senha", "palavra-passe", "mot de passe", "mdp",
    "parola d'ordine", "parola chiave",
    # ru/uk/be (stem: пароль, пароля, паролем, ...), pl, tr
    "парол", "hasło", "hasła", "haslo", "hasla", "şifre", "sifre", "parola",
    # id/ms, vi, hi, ar, fa
    "kata sandi", "kata laluan", "sandi", "mật khẩu", "mat khau", "पासवर्ड", "कूटशब्द",
    "كلمة المرور", "كلمة السر", "كلمة مرور", "كلمة سر", "رمز عبور", "گذرواژه",
    # ja, zh (simplified, traditional), ko
    "パスワード", "暗証番号", "密码", "密碼", "口令", "비밀번호", "패스워드", "비번", "암호",
    # cs/sk, hu, sv, da/no, fi, el, he, ro, ur, bn, th
    "heslo", "hesla", "heslem", "jelszó", "jelszava", "lösenord", "adgangskode", "passord", "salasana",
    "κωδικός πρόσβασης", "κωδικός", "συνθηματικό", "סיסמה", "סיסמא", "סיסמת", "parolă", "پاس ورڈ", "پاسورڈ",
    "পাসওয়ার্ড", "รหัสผ่าน",
    # access codes, passcodes and PIN codes, and German "Zugangsdaten" (login data): de, en, fr, es, pt, it,
    # nl, ru, pl, tr, id, ja, zh
    "zugangscode", "zugangsdaten", "zugangskennwort", "access code", "pin code", "pin-code", "pincode",
    "code d'accès", "code d'acces", "código de acceso", "codigo de acceso", "código de acesso", "codice di accesso",
    "toegangscode", "код доступа", "kod dostępu", "kod dostepu", "erişim kodu", "kode akses", "アクセスコード",
    "访问码", "訪問碼", "접속 코드", "접근 코드",
    # short names: pw (letters-only values only with "=" or quotes), pass and creds (password-shaped
    # values only: "tests pass: 12", "pass = skip"), pwd/passwd
    "pw", "pwd", "passwd", "pass", "creds", "credentials",
)

# Languages whose present tense needs no copula: "Şifre ayçiçeği", "Пароль подсолнух", "كلمة المرور عباد
# الشمس", "Kata sandi bunga matahari", "A jelszó napraforgó", "הסיסמה חמנייה": a letters-only value right
# after such a keyword at the start of its clause (or after a Turkish possessive: "Veritabanı şifresi X").
# (Turkish "parola" is left out: in Italian it means "word", "Parola riservata".)
_ZERO_COPULA_WORDS = frozenset(
    ("şifre", "sifre", "парол", "كلمة المرور", "كلمة السر", "كلمة مرور", "كلمة سر", "סיסמה", "סיסמא", "kata sandi", "sandi",
     "kata laluan", "jelszó", "jelszava", "пароль", "סיסמת")
)
_PROSE_KEY_WORDS = (
    # de, es, pt, fr, it, nl
    "schlüssel", "zugangstoken", "geheimnis", "secreto", "llave", "chave", "segredo", "clé", "jeton",
    "chiave", "segreto", "sleutel", "geheim",
    # ru/uk, pl, tr, id, vi
    "ключ", "токен", "секрет", "klucz", "sekret", "anahtar", "kunci", "khóa", "mã thông báo",
    # ja, zh, ko, hi, ar, fa
    "キー", "トークン", "シークレット", "秘密鍵", "密钥", "密鑰", "秘钥", "令牌", "私钥", "토큰", "시크릿",
    "키", "कुंजी", "टोकन", "مفتاح", "رمز", "کلید",
    # en: a description between the name and the value ("the api key for staging is X"; the adjacent forms
    # are secret-assignment's), judged like a bare name's value (_bare_name_value_ok)
    "api key", "api token", "access token", "auth token", "secret key", "token", "secret",
)

# Copulas and separators between the description and the value ("ist", "es", "est", "é", "è",
# "jest"/"to", "это", "—", "adalah", "là", "है", "هي", ":" ...). In Chinese, Japanese and Korean the
# description comes before the keyword and a particle (は, 是, 为, 는) follows it.
_PROSE_COPULAS = frozenset(
    """is was are ist lautet lauten lautete lauteten war es era est était é è são jest brzmi это є является равен adalah ialah
    yaitu là है था هي هو است = : - — – -> → ＝ ：
    je zní är er on είναι este হল হলো היא הוא ہے كانت كان""".split()
)

# copulas that close the clause after the value (Hindi, Urdu, Persian): "पासवर्ड सूरजमुखी है"
_FINAL_COPULAS = frozenset("है था थी हैं ہے تھا است هست".split())

# A word after the keyword that makes the phrase about a secret, not a secret: "password policy is
# ...", "Passwort-Richtlinie ist", "la longitud de la contraseña es"...
_PROSE_METADATA = frozenset(
    """hash hashes hashing hashed policy policies manager reset length rules requirements rotation
    strength field prompt expiry change complexity hint hints
    richtlinie richtlinien länge regeln anforderungen zurücksetzen
    política longitud requisitos reglas gestor restablecer politique longueur règles exigences
    gestionnaire réinitialisation comprimento gerenciador redefinição politica lunghezza requisiti regole
    длина политика требования менеджер сброс хэш хеш długość polityka wymagania menedżer
    uzunluğu politikası gereksinimleri sıfırlama lengte beleid vereisten panjang kebijakan""".split()
)
