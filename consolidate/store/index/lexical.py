"""The lexical recall index: SQLite FTS5 over the words and identifiers of the memories of the recall
index, beside the vectors (``lexical.sqlite3`` in the store). Only the standard library (the
PreToolUse hook's file recall reads it).

Embeddings are good at paraphrases and bad at exact identifiers: MiniLM put a memory naming
``v1.9`` below the similarity floor of ``recall "v1.9"`` (issue 29). So recall
(consolidate/pipeline/recall.py) fuses the vector ranking with this index's BM25 ranking.

**Terms** (:func:`terms`, the same for the memories and the queries): the text is in the canonical
form of consolidate/core/normal.py (invisible characters removed, NFKC) and case-folded; every run of word characters joined by ``. - / : @ + _`` (``v1.9``,
``--no-verify`` (also as ``no-verify``), ``PROJ-1234``, ``src/app/main.py``, ``E0308``, ``snake_case``) is
one term, and also its parts (``src``, ``app``, ``main``, ``py``), its path suffixes
(``app/main.py``, ``main.py``), a version without its ``v`` (``1.9``) and the words of a CamelCase
name (``camel``, ``case``). Scripts written without spaces (Chinese, Japanese, Thai; Hangul too)
are indexed as character bigrams. The terms are stored space-separated in an FTS5 table whose
tokenizer (``unicode61``, combining marks and the joiners above as token characters, diacritics
removed) keeps each term whole; a query is its terms, each a quoted FTS5 string (a ``"`` doubled),
joined by ``OR``: no user input is FTS5 syntax, so none raises (``"``, ``*``, ``AND``, ``-``, ``NEAR(``).

**Strong terms**: the terms of a query that look like identifiers (a digit, a joiner inside,
CamelCase, or all capitals of 3 letters or more: ``ECONNREFUSED``) and their path suffixes and
version forms. Recall returns a lexical match below the similarity floor only when it holds a strong
term of the query or every content word of it (:func:`Match.admitted`).

**Kept in step**: the long-term tier writes it with every write to the vectors
(consolidate/store/index/longterm.py: ``upsert``, ``delete``, ``update_metadata``, so apply, undo, forget,
supersede, tombstones, team pulls and reindex), and records the store's index generation token
(``index.generation``) after each write. A reader that finds another token (no file yet: a store
made before this index; a crash between the two writes; a file deleted) rebuilds the file from the
vectors' records (:func:`ensure`, called by recall; ``consolidate doctor --repair`` and reindex too).
A store on a Chroma server has no token: its index is rebuilt when the record count differs (a
change by another client that keeps the count is seen after ``consolidate doctor --repair``).
"""

from __future__ import annotations

import importlib
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from consolidate.core.vocab import (ACTIVE, ARCHIVED, DELETED, DISPUTED, EXPIRED, FORGOTTEN, QUARANTINED,
                                    RECALLED_STATUSES, SUPERSEDED)
from consolidate.store.layout import LEXICAL_DB

if TYPE_CHECKING:  # imported by name (_NORMAL, _GENERATION) on first use: the edges for grimp and mypy
    from consolidate.core import normal  # noqa: F401
    from consolidate.store.index import generation  # noqa: F401

#: The text forms (consolidate.core.normal) and the index generation, imported on first use: the file
#: recall hook's light entry reads this module's index without them (their tables cost it 3-6 ms).
_NORMAL = "consolidate.core.normal"
_GENERATION = "consolidate.store.index.generation"


def canonical(text: str) -> str:
    """consolidate.core.normal.canonical."""
    return importlib.import_module(_NORMAL).canonical(text)


def search_fold(text: str) -> str:
    """consolidate.core.normal.search_fold."""
    return importlib.import_module(_NORMAL).search_fold(text)


def read_generation(store):
    """consolidate.store.index.generation.read_generation."""
    return importlib.import_module(_GENERATION).read_generation(store)


INDEX_FILE = LEXICAL_DB.name
#: Every status a record of the recall index can have (for a search that filters none out).
ALL_STATUSES = (ACTIVE, DISPUTED, QUARANTINED, SUPERSEDED, ARCHIVED, EXPIRED, FORGOTTEN, DELETED)
SCHEMA_VERSION = "1"
#: The FTS5 tokenizer: each stored term stays one token (combining marks and the joiners are token
#: characters); diacritics removed on both sides.
TOKENIZER = "unicode61 remove_diacritics 2 categories 'L* N* Co M*' tokenchars '.-/:@+_'"

_JOINERS = ".-/:@+_"


class _Lazy:
    """A regular expression compiled on first use (the file recall hook's light entry imports this
    module for its index and uses none of them: their compiling costs it about 2 ms)."""

    __slots__ = ("source", "compiled")

    def __init__(self, source: str) -> None:
        self.source = source
        self.compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self.compiled is None:
            self.compiled = re.compile(self.source)
        return getattr(self.compiled, name)


# word characters: \w plus combining marks (Devanagari and other Indic vowel signs are not \w)
_W = r"[\w\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0900-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
_CHUNK = _Lazy(rf"{_W}+(?:[.\-/:@+]{_W}+)*")
#: Scripts written without spaces between words: indexed as character bigrams.
_NOSPACE_PATTERN = r"[\u0e00-\u0e7f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
_NOSPACE = _Lazy(_NOSPACE_PATTERN)
_SPLIT = _Lazy(r"[.\-/:@+_]+")
_CAMEL = _Lazy(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
#: Words that say nothing on their own: left out of queries (the memories keep them).
STOPWORDS = frozenset("""a an and are as at be been but by can do does did for from had has have how i if in into is
it its may me my no not of on or our should so than that the their them then there these they this to too us
use used using was we were what when where which while who why will with would you your""".split())


def _strong(raw: str) -> bool:
    """Whether a chunk as written looks like an identifier: a digit, a joiner inside, CamelCase
    (``camelCase``, ``CamelCase``), or 3+ capitals (``ECONNREFUSED``)."""
    if any(ch.isdigit() for ch in raw) or any(ch in _JOINERS for ch in raw):
        return True
    if re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]", raw) or re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", raw):
        return True
    letters = [ch for ch in raw if ch.isalpha()]
    return len(letters) >= 3 and all(ch.isupper() for ch in letters) and search_fold(raw) not in STOPWORDS


def terms(text: str) -> list[tuple[str, bool]]:
    """The terms of ``text`` (see the module docstring), each once, in order of first appearance:
    ``[(term, strong)]``; ``strong`` marks a chunk that looks like an identifier and its path
    suffixes and version forms (its parts and the bigrams of a no-space script are not strong)."""
    if not isinstance(text, str) or not text:
        return []
    text = canonical(text)
    out: dict[str, bool] = {}

    def add(term: str, strong: bool) -> None:
        if term and (strong or term not in out):
            out[term] = out.get(term, False) or strong

    def bigrams(run: str) -> None:
        run = search_fold(run)
        if len(run) == 1:
            add(run, False)
        for i in range(len(run) - 1):
            add(run[i:i + 2], False)

    for m in _CHUNK.finditer(text):
        raw = m.group(0)
        flag = _flag(text, m.start())
        if _NOSPACE.search(raw):
            rest = []
            for piece in re.split(f"({_NOSPACE_PATTERN})", raw):
                if _NOSPACE.fullmatch(piece):
                    bigrams(piece)
                elif piece:
                    rest.append(piece)
            for piece in rest:
                for sub in _CHUNK.findall(piece):
                    _chunk(sub, add)
            continue
        _chunk(raw, add, flag)
    return list(out.items())


def chunks(text: str) -> list[str]:
    """The chunks of ``text`` as :func:`terms` finds them (in the canonical form, ``_`` stripped at
    their ends), with their case kept: what a case-sensitive comparison of a file's path uses."""
    if not isinstance(text, str) or not text:
        return []
    return [c for c in (m.group(0).strip("_") for m in _CHUNK.finditer(canonical(text))) if c]


def _flag(text: str, start: int) -> str:
    """``--`` or ``-`` when the chunk at ``start`` is a command-line flag (``--out``, ``-v`` after a
    space or at the start), else ''."""
    i = start
    while i > 0 and start - i < 3 and text[i - 1] == "-":
        i -= 1
    dashes = start - i
    if dashes not in (1, 2) or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "-")):
        return ""
    return "-" * dashes


def _chunk(raw: str, add, flag: str = "") -> None:
    raw = raw.strip("_")
    if not raw:
        return
    whole = search_fold(raw)
    strong = _strong(raw)
    if flag:  # ``--out`` is its own term (strong), beside the word ``out``
        add(flag + whole, True)
    add(whole, strong)
    if "/" in whole:
        segs = whole.split("/")
        for i in range(1, len(segs)):
            add("/".join(segs[i:]), strong)
    if re.match(r"v\d", whole):
        add(whole[1:], strong)
    parts = [p for p in _SPLIT.split(raw) if p]
    for part in parts:
        words = [w for w in (_CAMEL.findall(part) if part.isascii() else [part]) if len(w) > 1]
        if (len(parts) > 1 or len(words) > 1) and len(part) > 1:
            add(search_fold(part), False)
        if len(words) > 1:
            for w in words:
                add(search_fold(w), False)


def index_text(document: str) -> str:
    """The FTS5 column of a memory: its terms, space-separated."""
    return " ".join(t for t, _ in terms(document))


class Query:
    """A recall query's terms: ``terms`` (every term, stop words left out), ``strong`` (the
    identifier-like ones) and ``content`` (the whole words and identifiers, not their parts). A plain
    class, not a dataclass: the file recall hook imports this module (dataclasses costs it 3-8 ms)."""

    __slots__ = ("terms", "strong", "content")

    def __init__(self, terms: list[str], strong: set[str] | None = None, content: set[str] | None = None) -> None:
        self.terms = terms
        self.strong = set() if strong is None else strong
        self.content = set() if content is None else content

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and (self.terms, self.strong, self.content) == (
            other.terms, other.strong, other.content)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"Query(terms={self.terms!r}, strong={self.strong!r}, content={self.content!r})"

    @property
    def expression(self) -> str:
        """The FTS5 MATCH expression: each term a quoted string (``"`` doubled), joined by OR; with
        strong terms, a memory must hold one of them (``(strong) AND (all)``: a memory sharing only
        a common word with ``release v1.8`` is no lexical match of it). '' for no term."""
        def any_of(ts) -> str:
            return " OR ".join('"' + t.replace('"', '""') + '"' for t in ts)

        if not self.terms:
            return ""
        strong = [t for t in self.terms if t in self.strong]
        if strong and len(strong) < len(self.terms):
            return f"({any_of(strong)}) AND ({any_of(self.terms)})"
        return any_of(self.terms)


def parse_query(query: str) -> Query:
    """The :class:`Query` of a recall query (never raises; no terms for a query of stop words or
    punctuation)."""
    found = terms(query)
    content: set[str] = set()
    text = canonical(query) if isinstance(query, str) else ""
    for m in _CHUNK.finditer(text):
        raw = m.group(0)
        if _NOSPACE.search(raw):
            content |= {t for t, _ in terms(raw)}
        else:
            w = search_fold(raw.strip("_"))
            if w and w not in STOPWORDS:
                content.add(w)
    kept = [t for t, s in found if s or t not in STOPWORDS]
    return Query(terms=kept, strong={t for t, s in found if s}, content=content)


class Match:
    """One lexical hit: ``id``, ``rank`` (1 = best BM25), ``matched`` (the query terms it holds),
    ``terms`` (all its terms)."""

    __slots__ = ("id", "rank", "matched", "query", "terms")

    def __init__(self, id: str, rank: int, matched: set[str], query: Query,  # noqa: A002 - the field's name
                 terms: frozenset[str] = frozenset()) -> None:
        self.id, self.rank, self.matched, self.query, self.terms = id, rank, matched, query, terms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Match) and (self.id, self.rank, self.matched, self.query, self.terms) == (
            other.id, other.rank, other.matched, other.query, other.terms)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Match(id={self.id!r}, rank={self.rank!r}, matched={self.matched!r}, terms={self.terms!r})"

    @property
    def admitted(self) -> bool:
        """Whether the hit may be returned below the vector floor: it holds a strong term of the
        query, or every content word of it."""
        return bool(self.matched & self.query.strong) or (
            bool(self.query.content) and self.query.content <= self.matched)


def index_path(store_path: Path) -> Path:
    return Path(store_path) / INDEX_FILE


class LexicalIndex:
    """The FTS5 file of one store (``path``; ``":memory:"`` for a read-only store's copy). Tables:
    ``meta(key, value)`` (schema, generation, count), ``docs(rowid, id, status, tier, scope)`` and
    ``fts(terms)`` sharing rowids. Raises sqlite3.Error on a file that cannot be opened or written."""

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False):
        self.path = str(path)
        #: Held by this module for the process (a read-only store's copy): not to be closed.
        self.shared = False
        if readonly:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30, check_same_thread=False)
        else:
            self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self._schema()

    def _schema(self) -> None:
        with self.db:
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self.db.execute("CREATE TABLE IF NOT EXISTS docs (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL,"
                            " status TEXT, tier TEXT, scope TEXT)")
            self.db.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(terms, tokenize="{TOKENIZER}")')
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    def close(self) -> None:
        self.db.close()

    def meta(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM docs").fetchone()[0])

    def _delete(self, ids: Iterable[str]) -> None:
        for i in ids:
            row = self.db.execute("SELECT rowid FROM docs WHERE id = ?", (i,)).fetchone()
            if row:
                self.db.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
                self.db.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))

    def upsert(self, records: Iterable[dict[str, Any]]) -> None:
        """Index records (``id``, ``document``, ``metadata`` with ``status``, ``tier``, ``scope``),
        replacing those of the same id."""
        with self.db:
            for r in records:
                self._delete([r["id"]])
                meta = r.get("metadata") or {}
                cur = self.db.execute("INSERT INTO docs (id, status, tier, scope) VALUES (?, ?, ?, ?)",
                                      (r["id"], meta.get("status"), meta.get("tier"), meta.get("scope")))
                self.db.execute("INSERT INTO fts (rowid, terms) VALUES (?, ?)",
                                (cur.lastrowid, index_text(r.get("document") or "")))

    def delete(self, ids: Iterable[str]) -> None:
        """Drop the records of ``ids`` (missing ids are not an error)."""
        with self.db:
            self._delete(ids)

    def update(self, memory_id: str, metadata: dict[str, Any]) -> None:
        """Set the status, tier and scope of one record from its new metadata."""
        with self.db:
            self.db.execute("UPDATE docs SET status = ?, tier = ?, scope = ? WHERE id = ?",
                            (metadata.get("status"), metadata.get("tier"), metadata.get("scope"), memory_id))

    def replace_all(self, records: Iterable[dict[str, Any]]) -> None:
        """Empty the index and index ``records``."""
        with self.db:
            self.db.execute("DELETE FROM fts")
            self.db.execute("DELETE FROM docs")
        self.upsert(records)

    def search(self, query: Query, *, limit: int = 20, statuses: tuple[str, ...] = RECALLED_STATUSES,
               tier: str | None = "durable") -> list[Match]:
        """The ``limit`` best BM25 matches of ``query`` with one of ``statuses`` (and ``tier``),
        best first (ties by id), equal scores sharing one rank (competition ranking), so the ranking does
        not depend on the order the index was written in; [] for a query without terms."""
        expr = query.expression
        if not expr or limit < 1:
            return []
        wanted = set(query.terms)
        rows = _rows(self.db, expr, statuses, tier, limit)
        out = []
        rank, last = 0, None
        for n, (i, text, score) in enumerate(rows, 1):
            if score != last:  # equal BM25 scores share a rank: the order the index was written in
                rank, last = n, score  # (a rebuild writes it in another) never changes the fused ranking
            have = frozenset(text.split())
            out.append(Match(id=i, rank=rank, matched=wanted & have, query=query, terms=have))
        return out


def _rows(db: sqlite3.Connection, expr: str, statuses: tuple[str, ...], tier: str | None,
          limit: int) -> list[tuple[str, str, float]]:
    """``(id, terms, bm25)`` of the ``limit`` best matches of the FTS5 expression ``expr``."""
    marks = ",".join("?" * len(statuses))
    sql = (f"SELECT d.id, fts.terms, bm25(fts) AS score FROM fts JOIN docs d ON d.rowid = fts.rowid"
           f" WHERE fts MATCH ? AND d.status IN ({marks})" + (" AND d.tier = ?" if tier else "") +
           " ORDER BY score, d.id LIMIT ?")
    args: list[Any] = [expr, *statuses] + ([tier] if tier else []) + [int(limit)]
    return db.execute(sql, args).fetchall()


def file_hits(store_path: str, terms: list[str], limit: int) -> list[tuple[str, frozenset[str]]]:
    """``(id, its terms)`` of the ``limit`` best durable, recalled matches of the strong ``terms``
    in the store's index read as it is (:func:`read_only` and :meth:`LexicalIndex.search`, for the
    file recall hook's light entry: consolidate/agents/hooks/file_hook.py); [] without an index or
    when it cannot be read."""
    path = os.path.join(store_path, INDEX_FILE)
    if not terms or not os.path.exists(path):
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return []
    try:
        db.execute("SELECT 1 FROM docs LIMIT 1").fetchone()
        rows = _rows(db, Query(terms=sorted(terms), strong=set(terms)).expression, RECALLED_STATUSES, "durable", limit)
    except sqlite3.Error:
        return []
    finally:
        db.close()
    return [(i, frozenset(text.split())) for i, text, _score in rows]


# -- kept in step with the vectors -------------------------------------------------------------------

_LOCK = threading.Lock()
_MEMORY: dict[str, tuple[str, LexicalIndex]] = {}  # read-only stores: an in-memory copy per store


def write(store, lt, op, before: str, after: str) -> None:
    """After a write to the vectors of ``lt``: apply ``op(index)`` to the store's lexical index when
    it was in step before the write (its token is ``before``, the generation the write started
    from), else rebuild it whole from the vectors' records (a store made before this index, a
    crash between the two writes: the migration); then record ``after``. Never raises: an index
    left behind (a failed write, a read-only folder) keeps its old token and is rebuilt by the next
    reader (:func:`ensure`)."""
    try:
        idx = LexicalIndex(index_path(store.path))
    except sqlite3.Error:
        _remove(index_path(store.path))  # not a database: the next reader builds a new one
        return
    try:
        if idx.meta("schema") == SCHEMA_VERSION and idx.meta("generation") == before:
            op(idx)
        else:
            idx.replace_all(_records(lt))
        idx.set_meta("generation", after)
    except sqlite3.Error:
        pass
    finally:
        idx.close()


def token_of(store, lt) -> str:
    """The token a lexical index in step with ``lt`` records: the store's index generation, or
    ``count:N`` for a Chroma server (no generation file)."""
    if store.chroma_url:
        return f"count:{lt.count()}"
    return read_generation(store)


def in_step(store, idx: LexicalIndex, lt) -> bool:
    """Whether ``idx`` holds what the vectors hold (its recorded generation token is the store's)."""
    got = idx.meta("generation")
    if idx.meta("schema") != SCHEMA_VERSION or got is None:
        return False
    return got == token_of(store, lt)


def _records(lt) -> list[dict[str, Any]]:
    return lt._get_all(include=("documents", "metadatas"))


def ensure(store, lt) -> LexicalIndex:
    """The store's lexical index, in step with the vectors of ``lt`` (a LongTerm): built or rebuilt
    from the vectors' records when missing, of another schema, or out of step (see the module
    docstring). A read-only store gets an in-memory index (built once per process and generation).
    The caller closes nothing: the index returned is shared (read-only) or to be closed (writable)."""
    path = index_path(store.path)
    if not store.writable:
        return _memory_copy(store, lt, path)
    try:
        idx = LexicalIndex(path)
    except sqlite3.DatabaseError:  # not a database: rebuilt in place
        _remove(path)
        idx = LexicalIndex(path)
    if in_step(store, idx, lt):
        return idx
    idx.close()
    return rebuild(store, lt)


def rebuild(store, lt) -> LexicalIndex:
    """Build the lexical index from the vectors' records into a new file and put it in place
    (atomically); when another process wrote the vectors meanwhile, the new index answers this
    reader but is not kept (the next reader builds again). Returns it, open."""
    before = token_of(store, lt)
    recs = _records(lt)
    path = index_path(store.path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    _remove(tmp)
    idx = LexicalIndex(tmp)
    idx.replace_all(recs)
    after = token_of(store, lt)
    idx.set_meta("generation", after)
    if before == after:
        idx.close()
        os.replace(tmp, path)
        for suffix in ("-journal", "-wal", "-shm"):
            _remove(Path(str(path) + suffix))
        return LexicalIndex(path)
    mem = LexicalIndex(":memory:")
    mem.replace_all(recs)
    idx.close()
    _remove(tmp)
    return mem


def _memory_copy(store, lt, path: Path) -> LexicalIndex:
    """A read-only store: its file when in step, else an in-memory index built from the vectors."""
    if path.exists():
        try:
            idx = LexicalIndex(path, readonly=True)
            if in_step(store, idx, lt):
                return idx
            idx.close()
        except sqlite3.Error:
            pass
    key = str(path)
    gen = token_of(store, lt)
    with _LOCK:
        held = _MEMORY.get(key)
        if held and held[0] == gen:
            return held[1]
        mem = LexicalIndex(":memory:")
        mem.replace_all(_records(lt))
        mem.shared = True
        _MEMORY[key] = (gen, mem)
        return mem


def _remove(p: Path) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def read_only(store_path: Path) -> LexicalIndex | None:
    """The store's lexical index opened read-only as it is (the hook: no rebuild, no chromadb), or
    None when there is none or it cannot be read."""
    path = index_path(store_path)
    if not path.exists():
        return None
    try:
        idx = LexicalIndex(path, readonly=True)
        idx.db.execute("SELECT 1 FROM docs LIMIT 1").fetchone()  # readable (a count would scan every row)
        return idx
    except sqlite3.Error:
        return None
