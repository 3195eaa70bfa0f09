"""Memory types and their required fields (docs/design.md#memory-types), as a table, and the
memorability rules the code can check.

| type       | required besides the statement |
|------------|--------------------------------|
| decision   | reason                         |
| constraint | (none)                         |
| preference | who (holds the preference)     |
| recipe     | command, context (where it worked) |
| failure    | symptom, cause                 |
| fact       | (none)                         |
"""

from __future__ import annotations

import re

from consolidate.core.textmeasure import MAX_STATEMENT_CHARS, measure, statement_length
from consolidate.core.vocab import MEMORY_TYPES
from consolidate.core.textmeasure import english_length
from consolidate.core.normal import text_key

#: The fields each memory type requires besides the statement (consolidate.core.vocab.MEMORY_TYPES,
#: in that order).
TYPES: dict[str, tuple[str, ...]] = dict(zip(MEMORY_TYPES, (("reason",), (), ("who",), ("command", "context"),
                                                             ("symptom", "cause"), ()), strict=True))


def _given(value: object) -> bool:
    """Whether a field's value counts as given: text (UTF-8 bytes read as text) that is not blank."""
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return isinstance(value, str) and bool(value.strip())


def missing_fields(type_: str, statement: str, fields: dict[str, str]) -> str | None:
    """None when ``fields`` hold what ``type_`` requires (each of its :data:`TYPES` fields, and the
    statement, given as non-blank text); else a one-line reason naming what is missing, sorted, with
    the hints of :data:`FIELD_HINTS` (or that the type is unknown)."""
    required = TYPES.get(type_)
    if required is None:
        return f"unknown memory type {type_!r} (known: {', '.join(TYPES)})"
    given = {"statement": statement, **fields}
    names = sorted(n for n in ("statement", *required) if not _given(given.get(n)))
    if not names:
        return None
    hints = "; ".join(FIELD_HINTS[n] for n in names if n in FIELD_HINTS)
    return f"a {type_} needs {', '.join(names)}" + (f" ({hints})" if hints else "")


#: Words that introduce a reason, in the languages of the real notes (en, es, pt, fr, de, ru, ja,
#: zh, ar) and others (uk, pl, tr, vi, he, hi, th, ko): a flagged decision's reason is what follows
#: (tests/unit/rules/test_type_scripts.py).
_BECAUSE = re.compile(r"\b(?:because|since|so that|due to|to avoid|given that|in order to|the reason (?:is|was|being)"
                      r"|to prevent|porque|pois|ya que|puesto que|dado que|debido a|para evitar|já que|visto que"
                      r"|devido a|parce que|car|puisque|afin de|pour éviter|à cause de|étant donné que|weil|denn|damit"
                      r"|wegen|aufgrund|потому что|так как|чтобы|поскольку|из-за|ибо|бо|тому що|оскільки"
                      r"|ponieważ|bo|żeby|çünkü|nedeniyle|dolayı|için|vì|bởi vì|כי|בגלל|بسبب|لكي|حتى لا)\b"
                      r"|parce qu['’]"
                      r"|(?:因为|因為|由于|由於|为了|為了|以免|原因是|ので|ため|理由は|لأن|왜냐하면|때문에|क्योंकि"
                      r"|की वजह से|के कारण|เพราะ|เนื่องจาก)", re.IGNORECASE)
#: Japanese, Korean, Turkish and Hindi markers that follow their reason or cause ("サーバー不要なので" =
#: "because no server is needed"; "서버가 필요 없기 때문에"; "sunucu gerektirmediği için").
_POSTPOSED = ("ので", "ため", "のため", "が原因", "때문에", "için", "nedeniyle", "dolayı", "की वजह से", "के कारण")
#: Words that introduce a failure's cause (same languages).
_CAUSE = re.compile(r"\b(?:because|caused by|due to|root cause|turned out|the fix (?:is|was)|fixed by|was the cause"
                    r"|porque|debido a|causado por|parce que|à cause de|weil|wegen|из-за|потому что|причина)\b"
                    r"|(?:因为|由于|原因|导致|のため|が原因|ので|بسبب|لأن)", re.IGNORECASE)
_CMD = re.compile(r"`([^`\n]{2,300})`")
_FENCE = re.compile(r"```[^\n]*\n(.+?)(?:\n```|\Z)", re.DOTALL)
_PROMPT_LINE = re.compile(r"^\s*[$#>]\s+(\S.{1,300})$", re.MULTILINE)
#: Programs whose name starts a command line in real notes: a recipe's command may be written without
#: backticks ("run npm ci --legacy-peer-deps before the build").
COMMAND_WORDS = (
    "pip", "pip3", "pipx", "uv", "uvx", "poetry", "pdm", "conda", "npm", "npx", "pnpm", "yarn", "bun", "node",
    "deno", "git", "gh", "docker", "docker-compose", "podman", "kubectl", "helm", "kustomize", "minikube", "make",
    "cmake", "cargo", "rustup", "go", "python", "python3", "pytest", "ruff", "mypy", "black", "tox", "nox", "curl",
    "wget", "ssh", "scp", "rsync", "brew", "apt", "apt-get", "dnf", "yum", "sudo", "systemctl", "journalctl",
    "terraform", "ansible", "ansible-playbook", "gcloud", "aws", "az", "psql", "mysql", "sqlite3", "redis-cli",
    "alembic", "django-admin", "rails", "rake", "bundle", "gem", "mvn", "gradle", "./gradlew", "dotnet",
    "composer", "php", "java", "flutter", "dart", "swift", "xcodebuild", "tsc", "vite", "next", "expo", "supabase",
    "vercel", "firebase", "prisma", "export", "chmod", "chown", "ln", "cp", "mv", "rm", "tar", "unzip", "openssl",
    "consolidate",
)
_COMMAND_START = re.compile(
    r"(?:^|(?<=[\s:(\"'“「]))((?:" + "|".join(re.escape(w) for w in sorted(COMMAND_WORDS, key=len, reverse=True))
    + r"|\./[\w./-]+|[\w-]+\.(?:sh|py))(?=\s|$)(?:[ \t]+[^\s].*?)?)"
    r"(?=$|\n|;\s|\.\s|,\s+(?:then|and|which|so|but)\b|\s+(?:because|so that|to fix|to get|fixes|fixed|works|worked"
    r"|solved|solves|before|after|when|if|then|and then|instead|to|for|in order to)\b|\s[–—-]\s|[\u3000-\u30ff\u4e00-\u9fff，。；])",
    re.IGNORECASE | re.MULTILINE)


def find_command(text: str) -> str | None:
    """The command a recipe note gives, or None: a backticked span, else the first line of a fenced
    code block, else a shell-prompt line (``$ cmd``), else a span starting with a known program name
    (``COMMAND_WORDS``, ``./script``, ``x.sh``/``x.py``) and running to the end of its clause."""
    if m := _CMD.search(text):
        return m.group(1).strip()
    if m := _FENCE.search(text):
        first = next((ln.strip() for ln in m.group(1).splitlines() if ln.strip()), "")
        if first:
            return first.lstrip("$ ").strip()
    if m := _PROMPT_LINE.search(text):
        return m.group(1).strip()
    for m in _COMMAND_START.finditer(text):
        cmd = m.group(1).strip().rstrip(".,;:")
        parts = cmd.split()
        if len(parts) >= 2 and parts[1].lower().strip(",.;:") in _NOT_AN_ARGUMENT:
            continue  # "npm rewrites the lockfile", "pytest is slow": prose about the program
        if len(parts) >= 2 or cmd.startswith("./") or cmd.lower() in ("make", "pytest", "tox", "nox"):
            return cmd
    return None


#: Words that, right after a program's name, show prose about the program rather than a command.
_NOT_AN_ARGUMENT = frozenset("""is are was were be been has have had does did doesn't don't isn't wasn't won't will would can
can't could should may might must needs need rewrites breaks broke fails failed works worked seems uses used keeps takes
took gets got makes made wants shows show says prints outputs returns reports lists layer layers image images and or but with for on in at to by from of the a an not also itself too version versions
itself which that who when while so as than then""".split())


def fields_from_text(type_: str, text: str, metadata: dict | None = None) -> dict[str, str]:
    """Best-effort required fields for a flagged note, which has no judge to fill them: note metadata
    of the same name first (``reason``, ``who``, ``command``, ``context``, ``symptom``, ``cause``),
    then the wording ("X because Y" gives a decision's reason, a command (:func:`find_command`) a
    recipe's, "X caused by Y" a failure's symptom and cause). Fields it cannot find stay absent; the
    write policy records them as ``fields_missing``."""
    meta = metadata or {}
    out = {k: str(meta[k]) for k in ("reason", "who", "command", "context", "symptom", "cause") if meta.get(k)}
    if type_ == "decision" and "reason" not in out and (m := _BECAUSE.search(text)):
        out["reason"] = (text[:m.end()] if m.group(0) in _POSTPOSED else text[m.start():]).strip()
    if type_ == "failure":
        if m := _CAUSE.search(text):
            if m.group(0) in _POSTPOSED:  # the cause comes first in Japanese
                out.setdefault("cause", text[:m.end()].strip())
                out.setdefault("symptom", text[m.end():].strip(" 、。,.;:-") or text)
            else:
                out.setdefault("symptom", text[:m.start()].strip(" ,.;:-，、") or text)
                out.setdefault("cause", text[m.start():].strip())
        else:
            out.setdefault("symptom", text)
    if type_ == "recipe":
        if "command" not in out and (cmd := find_command(text)):
            out["command"] = cmd
        if "command" in out:
            out.setdefault("context", text)
    if type_ == "preference":
        out.setdefault("who", str(meta.get("author") or "user"))
    return out


def _from_text(value: object, type_: str, text: str) -> bool:
    """Whether a field's ``value`` came from ``text``: what :func:`fields_from_text` finds there, or
    words of it (compared by consolidate.core.normal.text_key)."""
    key = text_key(str(value or ""))
    if not key:
        return False
    if key in {text_key(v) for v in fields_from_text(type_, text).values()}:
        return True
    return f" {key} " in f" {text_key(text)} "


def fields_after_edit(type_: str, old_text: str, new_text: str, old_fields: dict) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The fields of a memory of ``type_`` whose statement a person rewrote from ``old_text`` to
    ``new_text``: what the new wording gives (:func:`fields_from_text`: "X because Y" a decision's
    reason, ...) first; an old field taken from the old wording (its words are the old text's, or
    :func:`fields_from_text` found it there) that the new wording does not give is dropped (it
    describes a statement no longer stored); any other old field (a judge's own ``reason``, a
    command given as a field) is kept. Returns ``(fields, changes)``, ``changes`` the field names
    ``{"rederived": [...], "dropped": [...], "kept": [...]}`` (sorted; a name whose value the new
    wording gives again unchanged counts as kept)."""
    old = {str(k): str(v) for k, v in (old_fields or {}).items() if _given(v)}
    derived = {k: v for k, v in fields_from_text(type_, new_text).items() if _given(v)}
    fields: dict[str, str] = {}
    changes: dict[str, list[str]] = {"rederived": [], "dropped": [], "kept": []}
    for name in sorted(set(old) | set(derived)):
        if name in derived:
            fields[name] = derived[name]
            changes["kept" if old.get(name) == derived[name] else "rederived"].append(name)
        elif _from_text(old[name], type_, old_text):
            changes["dropped"].append(name)
        else:
            fields[name] = old[name]
            changes["kept"].append(name)
    return fields, changes


#: How to supply each required field, for the messages given to the agent.
FIELD_HINTS = {
    "reason": "say why (\"... because ...\") or give a `reason` field",
    "who": "say who holds it or give a `who` field",
    "command": "put the command in backticks, on a `$ ` line, or give a `command` field",
    "context": "say where it worked or give a `context` field",
    "symptom": "describe what failed or give a `symptom` field",
    "cause": "state the cause (\"... because ...\", \"caused by ...\") or give a `cause` field",
}


def required_missing(type_: str, fields: dict[str, str]) -> list[str]:
    """Names of the required fields of ``type_`` that ``fields`` lacks (empty or blank counts as
    missing), in the model's order; [] for an unknown type."""
    return [name for name in TYPES.get(type_, ()) if not str(fields.get(name) or "").strip()]


# -- type inference for a flagged note without a kind ----------------------------------------------

_T_FAILURE = re.compile(r"\b(?:error|errors|fails?|failed|failing|crash(?:ed|es)?|broke(?:n)?|bug|exception|traceback"
                        r"|timed? ?out|segfault|panic(?:ked)?|ошибк\w*|падает|упал\w*|error(?:es)?|fallo|échoue|fehler)\b"
                        r"|(?:报错|错误|失败|崩溃|エラー|失敗|落ちる|خطأ|فشل)", re.IGNORECASE)
_T_DECISION = re.compile(r"\b(?:decided|decision|chose|chosen|choose|opted|went with|switched to|picked|settled on"
                         r"|go(?:ing)? with|instead of|rather than|решили|выбрали|выбрал\w*|решил\w*|вместо|обрали"
                         r"|вирішили|замість|decidimos|elegimos|escolhemos|escolhi|optamos|en lugar de|en vez de|em vez de"
                         r"|entschieden|gewählt|statt|anstatt|stattdessen|choisi|décidé|au lieu de|plutôt que|wybraliśmy"
                         r"|zdecydowaliśmy|zamiast|seçtik|seçildi|karar verdik|yerine|chọn|thay vì|quyết định"
                         r"|בחרנו|החלטנו|במקום)\b"
                         r"|(?:决定|选择了|选了|选用|改用|而不是|而非|選擇了|選了|改為|決定|採用|選んだ|選択した|ことにした"
                         r"|にした|ではなく|代わりに|をやめて|선택했|결정했|대신|하기로|쓰기로|चुना|चुनी|चुने|फ़ैसला|फैसला"
                         r"|निर्णय|के बजाय|की जगह|เลือก|ตัดสินใจ|แทนที่|قررنا|اخترنا|بدلاً من|بدلا من)", re.IGNORECASE)
_T_PREFERENCE = re.compile(r"\b(?:prefers?|preferred|preference|user wants|users? (?:asked|said|likes?|wants)"
                           r"|likes? (?:it|to)|предпочита\w*|prefiere|bevorzugt|préfère)\b"
                           r"|(?:喜欢|偏好|更喜欢|好む|希望|يفضل)", re.IGNORECASE)
_T_CONSTRAINT = re.compile(r"\b(?:never|always|must(?: not)?|do not|don't|required|requires|only works|cannot|can't"
                           r"|forbidden|mandatory|всегда|никогда|нельзя|должн\w*|nunca|siempre|debe|niemals|immer"
                           r"|muss|jamais|toujours|doit|sempre|deve|nigdy|zawsze|musi|ніколи|завжди|не можна|asla"
                           r"|her zaman|mutlaka|yasak|không bao giờ|luôn luôn|phải|cấm|אסור|תמיד|חייב)\b"
                           r"|(?:必须|不要|禁止|不能|务必|永远|絕對不|必ず|禁止|してはいけない|ではいけない|てはいけない"
                           r"|してはならない|しないこと|絶対に|常に|절대|안 된다|안된다|하지 마|금지|반드시|항상|कभी नहीं"
                           r"|कभी भी|हमेशा|चाहिए|ज़रूरी|जरूरी|ห้าม|ต้อง|เสมอ|เด็ดขาด|يجب|لا تستخدم|ممنوع)",
                           re.IGNORECASE)
_T_RECIPE_VERB = re.compile(r"\b(?:run|use|works?|worked|fix(?:es|ed)?|to \w+|with|via"
                            r"|запусти\w*|ejecuta\w*)\b|(?:运行|执行|実行|شغل)", re.IGNORECASE)


def infer_type(text: str) -> tuple[str, str]:
    """``(type, why)`` for a flagged note written without a kind, from its wording: a decision
    ("chose", "instead of", ...), a preference ("prefers", "the user wants"), a failure (error
    wording without rule wording: "must ... or the fixtures fail" is a rule), a recipe (a command, :func:`find_command`, with "run"/"use"/"works"), a constraint ("never",
    "must", "always", ...), else a fact. Checked in that order; several languages' cue words."""
    if _T_DECISION.search(text):
        return "decision", "decision wording"
    if _T_PREFERENCE.search(text):
        return "preference", "preference wording"
    if _T_FAILURE.search(text) and not _T_CONSTRAINT.search(text):  # "must ... or it fails": a rule
        return "failure", "error wording"
    if find_command(text) and (_T_RECIPE_VERB.search(text) or _FENCE.search(text) or _PROMPT_LINE.search(text)):
        return "recipe", "a command"
    if _T_CONSTRAINT.search(text):
        return "constraint", "rule wording"
    return "fact", "no type wording"


# -- memorability rules the code can check --------------------------------------------------------

#: A statement shorter than this many English-equivalent characters (textmeasure) cannot stand alone.
MIN_STATEMENT_CHARS = 12
#: ... nor one of fewer words than this (words counted in any script; textmeasure).
MIN_STATEMENT_WORDS = 3
_BARE_NUMBER = re.compile(r"^[\s$€£#~≈<>=+-]*\d[\d\s.,:%/x-]*[a-zA-Z%]{0,3}\s*$")
_BARE_URL = re.compile(r"^\s*<?(?:https?|ftp|file)://\S+>?\s*$", re.IGNORECASE)
_BARE_PATH = re.compile(r"^\s*`?(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*`?\s*$|^\s*`?[\w.-]+\.[A-Za-z0-9]{1,5}`?\s*$")
_TASK_LINE = re.compile(
    r"^\s*(?:[-*+]\s*)?(?:\[[ xX~]\]|✅|☑️?|✔️?|⬜|🔄|⏳|🚧|❌)|^\s*(?:TODO|FIXME|WIP|DONE|Next( steps?)?|Status|Progress|Current (?:task|status|focus))\s*[:\-]",
    re.IGNORECASE)


def memorability_problem(statement: str) -> str | None:
    """None when ``statement`` passes the rules the code can check; else the reason it is not
    memorable: too short (fewer than MIN_STATEMENT_WORDS words or MIN_STATEMENT_CHARS
    English-equivalent characters, measured for every script by :mod:`consolidate.core.textmeasure`), a
    bare number, URL or path, or a task-list / status line."""
    s = statement.strip()
    if _BARE_NUMBER.match(s):
        return "a bare number"
    if _BARE_URL.match(s):
        return "a bare URL"
    if _BARE_PATH.match(s):
        return "a bare path"
    if _TASK_LINE.match(s):
        return "a task-list or status line"
    if len(s) > MAX_STATEMENT_CHARS and statement_length(s) > MAX_STATEMENT_CHARS:
        return (f"too long for a memory ({statement_length(s):,} characters; a statement is at most"
                f" {MAX_STATEMENT_CHARS:,})")
    words, length = measure(s)
    if length < MIN_STATEMENT_CHARS or words < MIN_STATEMENT_WORDS and not _CMD.search(s):
        return f"too short to stand alone ({len(s)} characters, about {words:.1f} words)"
    return None


#: Wording that limits how long a statement holds ("for now", "temporarily", "right now"), in the
#: languages of the real notes. A time reference alone ("today", "this session", "now") is not here:
#: it says when something happened, not that it stops holding.
_TEMPORARY = re.compile(
    r"\b(?:for now|for the time being|right now|currently|at the moment|for this (?:test|run|session)"
    r"|this (?:run|session) only|only (?:for )?this (?:run|session)|until (?:further notice|tomorrow|the next release|we)"
    r"|temporarily|(?:is|are|was|were|be|as a) temporary|temporary (?:fix|workaround|hack|measure|solution|patch|change"
    r"|override|setting|setup|config(?:uration)?|pin|state|exception)|as a stopgap|stopgap|workaround until|por ahora|temporalmente|de momento|vorerst|vorläufig"
    r"|vorübergehend|pour l'instant|pour le moment|temporairement|временно|пока что|на данный момент)\b"
    r"|(?:暂时|临时|目前|暫定|一時的|とりあえず|今のところ|مؤقتا|مؤقت)", re.IGNORECASE)
#: Wording that states a durable rule: it outweighs any time word ("from today on, every migration
#: needs a down script").
_DURABLE = re.compile(
    r"\b(?:always|never|every|each time|whenever|any time|from (?:today|now|here|this (?:release|version|point)) on(?:wards?)?"
    r"|from now|going forward|henceforth|from then on|in (?:the )?future|all future|must|must not|mustn't|shall"
    r"|required|mandatory|by default|as a rule|policy|convention|permanently|do not|don't|should|prefer|avoid|ensure"
    r"|make sure|keep (?:\S+ ){0,6}in sync|prohibited|forbidden|not allowed"
    r"|siempre|nunca|cada|debe|a partir de (?:hoy|ahora)|immer|nie|niemals|jede[rsn]?|muss|ab (?:heute|jetzt)"
    r"|toujours|jamais|chaque|doit|désormais|dorénavant|всегда|никогда|каждый|каждая|каждое|каждую|должен|должны"
    r"|впредь|отныне|с сегодняшнего дня)\b"
    r"|(?:必须|总是|永远|每次|每个|以后|今后|从今天起|从现在起|禁止|不要|必ず|常に|今後|毎回|絶対|してはいけない"
    r"|دائما|أبدا|يجب|من الآن)", re.IGNORECASE)
#: A statement under this many English-equivalent characters (textmeasure) that is not high-confidence
#: is transient.
TRANSIENT_MAX_CHARS = 40


def durability(statement: str, *, confidence: str, had_ttl: bool, flagged: bool = False) -> tuple[str, str]:
    """Deterministic durability classifier: (``durable`` | ``transient``, reason).

    Transient: a note written with a TTL (the agent said it expires); temporary wording ("for now",
    "temporarily", ...; a time reference such as "today" or "this session" alone is not temporary)
    unless the statement also states a durable rule ("always", "every", "from now on", "must", ...);
    or a very short statement (under TRANSIENT_MAX_CHARS English-equivalent characters, any script)
    that is not high-confidence. A ``flagged`` note is never made transient by its wording or length,
    only by a TTL: the flag is the agent saying "keep this"."""

    if had_ttl:
        return "transient", "written with a TTL"
    if flagged:
        return "durable", "flagged by the agent"
    if (m := _TEMPORARY.search(statement)) and not _DURABLE.search(statement):
        return "transient", f"temporary wording ({m.group(0)!r})"
    length = english_length(statement)
    if length < TRANSIENT_MAX_CHARS and confidence != "high":
        return "transient", f"very short ({len(statement.strip())} characters) and not high-confidence"
    return "durable", "standalone statement"
