"""The one gate of free text on its way to a file (issue 28, concern 3).

Every free text this package persists or logs (a session end's reason, a workspace file, a review's
reason, an event's fields, a hook or worker log line, an error message, a run's snapshot, the
journal, ``notes.md``, an export, a team push ...) passes :func:`gate` before its bytes reach a
file: its private spans are replaced by ``[private]`` (consolidate/rules/private_spans.py) and every
secret the secret gate finds (consolidate.rules.secrets ``redact``) by its redacted preview. The
text is scanned as it is and in Unicode form NFC, so a secret written in decomposed form (NFD, as
macOS file names and some keyboards give it) is found as its composed form is.

:data:`SURFACES` lists every writer of such a text: ``(where, entry, fields)``, ``where`` the
``module:function`` that calls the gate before it writes, ``entry`` the store files it writes
(the names of their consolidate/store/layout.py constants, ``EVENT_LOG``, joined by ``,``) or another file, ``fields`` the free-text
fields it gates. :data:`NO_FREE_TEXT` lists the other writers of store files and why their bytes
hold no free text (ids, counts, paths, hashes, locks). tests/unit/rules/test_persisted_text.py drives every
surface through the installed ``consolidate`` command and the MCP server with planted secrets and
private spans and greps every byte of the store; it also checks over the source that every caller
of the low-level writers (consolidate/core/atomic.py, consolidate/core/jsonl.py,
consolidate/core/private.py ``private_file``, ``os.open`` for writing) is listed in one of the two
registries, and that every surface calls the gate.

Light for the hooks: the standard library only at import; the secret gate (~200 compiled rules,
0.1-0.7 s) is imported on first use, and only for a text :func:`worth_scanning` says may hold one.
"""

from __future__ import annotations

import functools
import re
from consolidate.core.normal import canonical, nfc

from consolidate.core.charkinds import char_kinds
from consolidate.rules.private_spans import has_private, strip

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import this module
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Iterable

__all__ = ["SURFACES", "NO_FREE_TEXT", "gate", "redact", "identifier", "gate_value", "gate_fields", "gate_record", "worth_scanning", "findings",
           "has_redaction"]


class Surface(tuple):
    """One writer of free text: ``(where, entry, fields)`` (see the module docstring)."""

    __slots__ = ()

    def __new__(cls, where: str, entry: str, fields: str):
        return super().__new__(cls, (where, entry, fields))

    where = property(lambda self: self[0])
    entry = property(lambda self: self[1])
    fields = property(lambda self: self[2])


#: Every function that writes a free text to a file, and the fields it passes through :func:`gate`.
SURFACES: tuple[Surface, ...] = (
    Surface("consolidate.store.sessions.tier:SessionTier.end", "SESSIONS_DB", "a session end's reason"),
    Surface("consolidate.store.sessions.write_gate:secret_gate_at_write", "SESSIONS_DB",
            "a note's content and metadata strings (secrets only: its private spans stay in the session tier,"
            " consolidate/rules/private_spans.py)"),
    Surface("consolidate.store.sessions.notes_files:NotesFilesMixin.add_notes_file", "SESSIONS_DB",
            "a notes file's name (also the notes' source_file and the memories' notes_file)"),
    Surface("consolidate.store.sessions.tier:SessionTier.set_waiting", "SESSIONS_DB",
            "the judges' failure reasons of a note left waiting"),
    Surface("consolidate.store.sessions.tier:SessionTier.finish", "SESSIONS_DB", "a run's result (its errors)"),
    Surface("consolidate.store.sessions.tables:record_hook_session", "SESSIONS_DB",
            "a SessionStart's source (an agent's free text)"),
    Surface("consolidate.pipeline.review:check_edit_text", "CHROMA",
            "an edited memory's text: private spans replaced, secrets refused"),
    Surface("consolidate.store.sessions.queue_file:append_end", "QUEUE", "a session end's reason"),
    Surface("consolidate.model.plan:Plan.decide", "EVENT_LOG", "an event's reason and detail"),
    Surface("consolidate.store.events:append", "EVENT_LOG",
            "reason, statement, summary and the other free-text fields of every event line"),
    Surface("consolidate.store.hook_log:append", "HOOK_LOG", "the line"),
    Surface("consolidate.store.worker_health:record", "WORKER_STATUS", "the last error"),
    Surface("consolidate.team.local:log", "TEAM_LOG", "the line"),
    Surface("consolidate.pipeline.workspace:Workspace._put", "WORKSPACE_WORKING, WORKSPACE_OUTPUT",
            "the file's text"),
    Surface("consolidate.pipeline.workspace:Workspace._save", "WORKSPACE_STATE",
            "task, reason (the completion record)"),
    Surface("consolidate.pipeline.workspace:start.put", "WORKSPACE_CORE, WORKSPACE_MEMORIES, WORKSPACE_SESSION", "the context files"),
    Surface("consolidate.pipeline.workspace:Workspace._extract", "WORKSPACE_OUTPUT",
            "a file whose item held a secret, redacted"),
    Surface("consolidate.store.archive:save", "ARCHIVED", "the memory's statement, the archived reason"),
    Surface("consolidate.store.archive:tombstone", "TOMBSTONES", "the reason"),
    Surface("consolidate.store.forgotten:append", "FORGOTTEN", "the statement, the reason"),
    Surface("consolidate.store.snapshots:take", "SNAPSHOT", "the records' documents and reasons"),
    Surface("consolidate.store.snapshots:save", "SNAPSHOT", "the undo record (marked undone)"),
    Surface("consolidate.store.journal:write", "JOURNAL_PLAN", "the plan's notes, candidates and reasons"),
    Surface("consolidate.store.views.notes_md:append_run", "NOTES_MD", "the statements and reasons"),
    Surface("consolidate.store.views.notes_md:mark_statement", "NOTES_MD", "the label (a review's reason)"),
    Surface("consolidate.store.views.notes_md:rebuild", "NOTES_MD", "the statements and reasons"),
    Surface("consolidate.store.views.context_md:write", "CONTEXT_MD", "the statements"),
    Surface("consolidate.store.graph:append", "GRAPH_NODES, GRAPH_EDGES", "entity names, relations"),
    Surface("consolidate.agents.export_md:_write", "AGENTS.md / CLAUDE.md (the user's file)", "the block"),
    Surface("consolidate.team.local:write_outbox", "TEAM_OUTBOX_ITEM", "a run pushed to the team store"),
    Surface("consolidate.team.local:put_outbox", "TEAM_OUTBOX_ITEM", "a repair pushed to the team store"),
    Surface("consolidate.team.local:write_undo_outbox", "TEAM_OUTBOX_ITEM", "an undo pushed to the team store"),
)

#: The other writers of store files (or of a user's file), and why what they write holds no free text.
NO_FREE_TEXT: tuple[tuple[str, str], ...] = (
    ("consolidate.core.spawn:spawn_worker", "logs/worker.log, opened for the worker's stdout and stderr: what the"
     " worker writes there goes through the CLI's sinks (consolidate.rules.redaction.SINKS)"),
    ("consolidate.store.index.file_table:write", "memory/files.sqlite3: memory ids by file path, and the statements of the graph's nodes as they are"),
    ("consolidate.agents.install:_write_atomic", "an agent CLI's settings.json: hook commands"),
    ("consolidate.agents.transcripts:_record", "imports/transcripts.jsonl: transcript paths, sizes, offsets"),
    ("consolidate.core.locking:store_lock", ".lock.holder: a pid and a token"),
    ("consolidate.pipeline.crosscheck:_check_graph", "graph lines moved aside as they were (written before)"),
    ("consolidate.pipeline.crosscheck:_check_tombstones", "tombstone lines moved aside as they were"),
    ("consolidate.pipeline.doctor:_quarantine_lines", "damaged lines moved aside as they were"),
    ("consolidate.pipeline.doctor:_check_project", "manifest.json: layout, embedding, project"),
    ("consolidate.pipeline.stages.apply:roll_back", "a file put back as it was before the run"),
    ("consolidate.pipeline.stages.apply:preflight", "*/.preflight: an empty probe"),
    ("consolidate.pipeline.undo:_undo_nothing_written", "snapshots/*.json: ids and counts of an empty undo"),
    ("consolidate.store.anchors:update_manifest", "manifest.json: code anchors (paths, hashes), the project doctor --repair records"),
    ("consolidate.store.anchors:write_context_index", "memory/context.json: ids and anchors"),
    ("consolidate.store.archive:lift_tombstones", "archive/tombstones.jsonl without some lines (written before)"),
    ("consolidate.store.forgotten:lift", "archive/forgotten.jsonl without some lines (written before)"),
    ("consolidate.store.graph:_write_lines", "graph files rewritten from lines gated when appended"),
    ("consolidate.store.index.generation:bump_generation", "index.generation: a token"),
    ("consolidate.store.journal:mark", "journal/*.steps: step names"),
    ("consolidate.store.snapshots:record_graph_diff", "snapshots/*.json: graph line counts"),
    ("consolidate.store.snapshots:record_graph_append", "snapshots/*.json: graph line counts"),
    ("consolidate.store.snapshots:settle_graph_appends", "snapshots/*.json: graph line counts"),
    ("consolidate.store.store:Store.write_core", "memory/core.md: the user's own rules, written by the user"),
    ("consolidate.store.store:Store.check_embedding", "manifest.json: embedding id and dimension"),
    ("consolidate.store.views.notes_md:mark_run_undone", "memory/notes.md: a mark on the lines of a run"),
    ("consolidate.store.views.recalled:write_start_file", "memory/context.start.json: context.md's text"
     " (gated when written) with stamps"),
    ("consolidate.team.local:save_config", "team.json: the team store's address and names"),
    ("consolidate.team.local:update_state", "team/state.json: what was pulled, by id and time"),
    ("consolidate.team.ledger:_connect", "team/ledger.sqlite3: memory, edge and tombstone ids, versions,"
     " write ids (machine id and a counter), the team clock token and a time"),
    ("consolidate.store.journal:reset_steps", "journal/*.steps: step names"),
)


# -- the gate --------------------------------------------------------------------------------------

def _secrets() -> ModuleType:
    """The secret gate (consolidate.rules.secrets), imported on first use: see the module docstring."""
    from consolidate.rules import secrets  # noqa: PLC0415 - ~85 ms of rule compiling: paid by the first text worth it

    return secrets


def gate(text: Any, *, prefilter: bool = True, key: str | None = None) -> Any:
    """``text`` as it may be written to a file: every private span replaced by ``[private]``, then
    every secret by its redacted preview (:func:`redact`). ``text`` itself (the same object) when it
    holds neither, and any value that is not a ``str`` as it is. ``prefilter=False``: scanned even
    when :func:`worth_scanning` rules it out (an error's text: rare, so the scan's cost is no matter).
    ``key``: the name the text is the value of (a metadata field), read as its context
    (:func:`findings`). Raises nothing of its own."""
    if not isinstance(text, str) or not text:
        return text
    if len(text) > _GATED_MAX_CHARS:
        return _gate(text, prefilter, key)
    out = _gated(text, prefilter, key)
    return text if out == text else out


def _gate(text: str, prefilter: bool, key: str | None) -> str:
    return redact(strip(text) if has_private(text) else text, prefilter=prefilter, key=key)


#: The texts :func:`gate` answers from memory (a pure function of the text: the same note text is
#: gated again by the plan, the journal and the event log of its run; measured on the 41 real-notes
#: sessions end to end, 5.3 s of 33 s went to gating again), up to this length each, and at most 4,096
#: of them (a long-lived MCP server holds at most some 16 MB so).
_GATED_MAX_CHARS = 4096
_gated = functools.lru_cache(maxsize=4096)(_gate)


def redact(text: Any, *, prefilter: bool = True, key: str | None = None) -> Any:
    """``text`` with every secret the secret gate finds replaced by its redacted preview, its private
    spans kept (the session tier's notes: consolidate/rules/private_spans.py); scanned as written
    and in NFC, so a decomposed secret is redacted in the composed text. ``text`` itself when it
    holds none (or is not a ``str``), or when ``key`` (the field it is the value of) clears it
    (:func:`findings`)."""
    if not isinstance(text, str) or (prefilter and not worth_scanning(text)):
        return text
    if key is not None and not findings(text, key=key):
        return text
    gate_ = _secrets()
    out = gate_.redact(text) if gate_.scan(text) else text
    composed = nfc(out)
    if composed != out and gate_.scan(composed):
        out = gate_.redact(composed)
    return out


def findings(text: str, *, key: str | None = None) -> list:
    """The secret gate's findings in ``text`` (consolidate.rules.secrets ``scan``), or, when there is
    none, in its NFC form (their offsets are then the NFC text's); ``[]`` for a text
    :func:`worth_scanning` rules out.

    ``key``: the name ``text`` is the value of (a metadata field such as ``commit``). A bare value
    has no words around it, and a random-looking one (a 40-hex commit id) is key material to the
    gate; the gate's own context rules decide instead, over ``"<key>: <text>"``: when every finding
    is context-free ``key-material`` and that line holds none (``commit: 3f9c...``), there is none.
    Any other kind (a provider key, a password assignment) stays, whatever the key."""
    if not isinstance(text, str) or not worth_scanning(text):
        return []
    if len(text) <= _GATED_MAX_CHARS:
        return list(_found(text, key if isinstance(key, str) else None))
    return _findings(text, key)


def _findings(text: str, key: str | None) -> list:
    gate_ = _secrets()
    found = gate_.scan(text)
    composed = nfc(text)
    if not found and composed != text:
        found = gate_.scan(composed)
    if found and key and isinstance(key, str) and all(f.kind == "key-material" for f in found) \
            and not gate_.scan(f"{key}: {composed}"):
        return []
    return found


#: :func:`findings` of the texts up to _GATED_MAX_CHARS, answered from memory (a note's strings are
#: scanned at write and again by the run's secret gate stage; the findings are immutable tuples).
_found = functools.lru_cache(maxsize=4096)(lambda text, key: tuple(_findings(text, key)))


#: A UUID (what Claude Code, Gemini CLI and Codex give as a session id; ``+rN``: a resumed part): never a secret by itself, and
#: not worth importing the gate for on every hook call.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?:\+r[0-9]+)?")
#: See :func:`identifier`: the shortest part of an id taken as a pasted token when the gate finds key material in it.
OPAQUE_ID_CHARS = 20
_ID_SEPARATORS = re.compile(r"[-+.:/]")
#: How an id holding a secret is kept: this prefix and 16 hex digits of the id's SHA-256.
REDACTED_ID_PREFIX = "redacted-"


def identifier(value: str, key: str = "session_id") -> str:
    """An id (a session id) as it may be stored, queued and logged: ``value`` itself, or, when the
    secret gate finds a secret in it (:func:`findings` with ``key`` as its context), the pseudonym
    ``redacted-<16 hex of its SHA-256>``, the same for the same id, so every write and read of that
    session (a note, its end, a hook's payload, the worker, a log line) meets under one name and no
    file holds the secret. A UUID is taken as it is without loading the gate. Context-free key
    material (a random-looking run with no keyword beside it) is what ids are made of (the MCP
    server's ``mcp-<UTC time>-<pid>``): it counts only when a part of the id between ``-``, ``+``,
    ``.``, ``:`` or ``/`` is :data:`OPAQUE_ID_CHARS` characters or more (a token pasted as an id or
    after a prefix: ``ci-ghp_...``, ``sess-AKIA...``; the shortest provider key, an AWS key id, has
    20); any other kind the gate names (a provider's key format, a password) always counts."""
    if not isinstance(value, str) or not value or _UUID.fullmatch(value):
        return value
    opaque = any(len(part) >= OPAQUE_ID_CHARS for part in _ID_SEPARATORS.split(value))
    found = [f for f in findings(value, key=key) if f.kind != "key-material" or opaque]
    if not found:
        return value
    import hashlib  # noqa: PLC0415 - only for an id that holds a secret

    return REDACTED_ID_PREFIX + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def gate_value(value: Any, key: str | None = None) -> Any:
    """``value`` (a str, or lists and dicts nesting them) with every string passed through
    :func:`gate` (dict keys kept, each read as its value's context: :func:`findings`); any other
    value as it is."""
    if isinstance(value, str):
        return gate(value, key=key)
    if isinstance(value, list):
        return [gate_value(v, key) for v in value]
    if isinstance(value, tuple):
        return tuple(gate_value(v, key) for v in value)
    if isinstance(value, dict):
        return {k: gate_value(v, k if isinstance(k, str) else None) for k, v in value.items()}
    return value


def gate_fields(record: dict, fields: Iterable[str]) -> dict:
    """A copy of ``record`` with the values of ``fields`` (those present) passed through
    :func:`gate_value`; ids, hashes and counts in the other fields are left as they are (a content
    hash is key material to the gate)."""
    out = dict(record)
    for f in fields:
        if f in out:
            out[f] = gate_value(out[f])
    return out


#: Keys whose values are ids, hashes, times or names of this package's own (a content hash is key
#: material to the gate): :func:`gate_record` leaves them as they are.
_AS_IS_KEY = re.compile(r"(?:^|_)(?:ids?|hash|hashes|sha|digest|seq|ts|at|generation|event|status|tier|outcome"
                        r"|evidence|confidence|source|type|kind|kinds|action|embedding|embeddings|f32)$")


def gate_record(value: Any) -> Any:
    """``value`` (a JSON-like record: dicts, lists, strings) with every string passed through
    :func:`gate`, except the values of keys named like ids, hashes, times and this package's own
    vocabulary (:data:`_AS_IS_KEY`: ``memory_id``, ``note_ids``, ``sha``, ``ts``, ``status``...) and
    embeddings (numbers, or their base64 float32 bytes in the journal: random-looking text the secret
    gate would take for a key and so corrupt the plan), at any
    depth; the keys themselves as they are. For a record written whole: an event line, an archived
    memory, a snapshot, the journal's plan, a team push."""
    return _gate_record(value, None)


def _gate_record(value: Any, key: str | None) -> Any:
    if isinstance(value, dict):
        return {k: v if isinstance(k, str) and _AS_IS_KEY.search(k)
                else _gate_record(v, k if isinstance(k, str) else None) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_gate_record(v, key) for v in value]
    return gate(value, key=key)


#: A redacted preview the gate leaves in a text: ``<openai-key, 48 chars>`` (consolidate.rules.secrets
#: ``redact_preview``).
_PREVIEW = re.compile(r"<([a-z0-9][\w.-]*), \d+ chars>", re.IGNORECASE)


def has_redaction(text: str) -> list[str]:
    """The kinds of the redacted previews in ``text`` (what :func:`gate` left of its secrets), in
    order; ``[]`` for none."""
    return _PREVIEW.findall(text) if isinstance(text, str) and " chars>" in text else []


# -- the prefilter ---------------------------------------------------------------------------------

_TOKEN_EDGE = "\"'`.,;:!?()[]{}<>*_~"
# A password-named word in the languages of consolidate.rules.secrets._PROSE_PASSWORD_WORDS: given one, a
# letters-only value is a password too ("the root password is correcthorsebatterystaple").
_PASSWORD_WORD = re.compile(
    "passw|pwd|passphrase|passcode|kennwort|wachtwoord|contrase|clave|senha|palavra-passe|mot de passe"
    "|mdp|parol|парол|hasł|hasl|şifre|sifre|sandi|laluan|mật khẩu|mat khau|पासवर्ड|कूटशब्द|كلمة"
    "|رمز عبور|گذرواژه|パスワード|暗証番号|密码|密碼|口令|비밀번호|패스워드|비번|암호"
    "|zugangs|access code|pin.?code|code d'acc|digo de ac|codice di accesso|toegangscode|код доступа|kod dost"
    "|erişim kodu|kode akses|アクセスコード|访问码|訪問碼|접속 코드|접근 코드"
    "|heslo|hesla|jelsz|lösenord|adgangskode|passord|salasana|κωδικ|συνθηματικ|סיסמ|پاس ?ورڈ|পাসওয়ার্ড|รหัสผ่าน"
    # the short names: "pw = sunflower", "secret = sunflower" (consolidate.rules.secrets' bare-name rule)
    r"|(?<![a-z])(?:pw|pass|creds?|credentials|secret|token|api[ _-]?key)(?![a-z])",
    re.I,
)


#: Lower-case ASCII words joined by ``_``, at most 64 characters: what an agent CLI gives as a session
#: end's reason (``prompt_input_exit``, ``logout``); no rule of the gate finds a secret in one.
_SNAKE_WORDS = re.compile(r"(?=.{1,64}\Z)[a-z]+(?:_[a-z]+)*")


def worth_scanning(text: str) -> bool:
    """False for text in which the gate can find nothing, so that writing an ordinary text costs no
    import of the gate (its rule libraries take 0.2-0.7 s to import): every value the gate reports is
    a run of 6+ non-space characters holding a letter and a digit or symbol, of 12+ holding upper-
    and lower-case letters, or of 16+ capitals (an AWS key id of letters only, base32 key material; consolidate.rules.secrets:
    ``_value_is_secret``, provider keys, PEM bodies, URLs with a password, consolidate/rules/key_material.py).
    tests/unit/rules/test_secret_write_gate.py checks it on the whole secret corpus. A text with a
    password-named word (:data:`_PASSWORD_WORD`, in the text or its :func:`~consolidate.core.normal.canonical`
    form: NFC, invisible characters removed, fullwidth folded) is always scanned: any
    value given to one is a password."""
    if _PASSWORD_WORD.search(text) or (not text.isascii() and _PASSWORD_WORD.search(canonical(text))):
        return True
    if _SNAKE_WORDS.fullmatch(text):
        return False  # lower-case words joined by "_" (a hook's reason: prompt_input_exit): no digit, no case mix
    for token in text.split():
        token = token.strip(_TOKEN_EDGE)
        n = len(token)
        if n < 6:
            continue
        kinds = char_kinds(token)
        if (kinds.alpha and kinds.other) or (n >= 12 and kinds.upper and kinds.lower) or (n >= 16 and kinds.upper):
            return True
    return False
