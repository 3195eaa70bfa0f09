"""The light entry of the file recall hook (issue 34): what the installed PreToolUse (Claude Code) /
BeforeTool (Gemini CLI) command runs, ``<python> -m consolidate.agents.hooks.file_hook [OPTIONS]``
(``consolidate install-hook``) or the console script ``consolidate-file-recall [OPTIONS]`` (the Claude
Code plugin and the Gemini CLI extension: the store options from their settings, read by
consolidate/agents/plugin_env.py as the full command line reads them), without consolidate.cli.main, argparse or the modules of the full answer
(consolidate.agents.file_recall.run).

It answers from file recall's table ``memory/files.sqlite3`` (consolidate/store/index/file_table.py:
what the answer needs of each memory, precomputed by its writer: status, the agent view's line,
the echo digest, the context guard's verdict, whether it has code anchors, its terms with their
case) when the table's stamp still holds, from the lexical index as consolidate.agents.file_recall's
lexical_ids reads it, and from the session tier on one connection (the segment rule, the shown and
printed digests recorded as the full hook records them). It prints what the full hook prints: a test
compares the two over a real-notes store (tests/unit/agents/test_file_recall_fast.py).

Anything it cannot answer the same way goes to the full hook, ``python -m consolidate hook OPTIONS``
exec'd in this process's place, with stdin handed on (:func:`main`): an option it does not know, an event that is not a
tool event, a session id or cwd the full hook would check or refuse, a store folder that is not
private yet, a table missing or stale (the full hook rebuilds it), a path that is not plain ASCII
(the comparison keys of consolidate.core.normal are needed then), a session with resumed parts, a
memory to show with code anchors (its drift is checked there) or held back by the context guard
(the "left out" line is written there), a session tier that cannot be opened (the full hook answers
and logs it). Standard library only, and of the package: payload, settings, resolve, layout and the
session tier's statements and core.spawn (the exec).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import sqlite3
import sys
import time

from consolidate.agents import plugin_env
from consolidate.agents.hooks.payload import (EVENT_KEY, PRE_TOOL_USE_NAME, TOOL_EVENTS, cwd_of, event_name, hook_output, raw_cwd,
                                              raw_event_name, read_stdin, replace_stdin, session_id_of, tool_paths)
from consolidate.core.settings import JUDGE_CHILD, PROJECT_ROOT
from consolidate.core.spawn import exec_hook
from consolidate.core.vocab import RECALLED_STATUSES
from pathlib import Path
from consolidate.store import resolve
from consolidate.store.layout import (FORGOTTEN, GITIGNORE, GRAPH, GRAPH_EDGES, GRAPH_NODES, MANIFEST,
                                      SESSIONS_DB)
from consolidate.store.index import file_table, lexical
from consolidate.store.index.file_table import FileTable
from consolidate.store.sessions import tables

#: The table layout this module reads (consolidate.store.index.file_table.VERSION; a test compares).
TABLE_VERSION = 5
#: The file-recall surface's budget (consolidate/store/views/shown.py SURFACES; a test compares).
MAX_MEMORIES = 5
#: How long shown digests are kept (consolidate.store.echo.KEEP_SECONDS, file_recall's printed ones).
KEEP_SECONDS = 30 * 86400.0
_OPTIONS = {"--store", "--output", "--event", "--chroma-url", "--project", "--embedding", "--judge", "--outcome"}
_SIMPLE = re.compile(r"[A-Za-z0-9_\-.:@+/]{1,200}\Z")
# the lexical index's chunks of an ASCII text (consolidate.store.index.lexical._CHUNK on ASCII)
_CHUNK = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:@+][A-Za-z0-9_]+)*")
_SPLIT = re.compile(r"[.\-/:@+_]+")
_JOINERS = ".-/:@+_"
#: consolidate.store.index.lexical.STOPWORDS (a test compares).
STOPWORDS = frozenset("""a an and are as at be been but by can do does did for from had has have how i if in into is
it its may me my no not of on or our should so than that the their them then there these they this to too us
use used using was we were what when where which while who why will with would you your""".split())


#: The session tier's connection a light answer leaves to the process exit (``os._exit``: WAL mode
#: keeps every committed write; the checkpoint is left to the next connection that closes normally).
LEFT_OPEN: list[sqlite3.Connection] = []


class Fallback(Exception):
    """The full hook answers this call (nothing was written by this module)."""


def main(argv: list[str] | None = None) -> int:
    """Answer the hook call of ``argv`` (the options after the module name; default the process's)
    and return the exit code on the light path when it can; else the full hook takes the process's
    place (``python -m consolidate hook`` + ``argv``, exec'd, stdin handed on). Exits 0 on the light
    path whatever happens: a file recall never blocks the agent."""
    args = sys.argv[1:] if argv is None else list(argv)
    before, args = _global_options(args)
    raw: bytes | None = None
    try:
        opts = _options(args)
        if opts is not None:
            _settings(before)
        if opts is not None:
            if JUDGE_CHILD.get():
                return 0  # a judge's own agent session: the full hook does nothing either
            raw = read_stdin()
            text = answer(opts, raw, keep_open=argv is None)
            if text:
                sys.stdout.write(text + "\n")
            return 0
    except Exception:  # noqa: BLE001 - Fallback, or any doubt: the full hook decides
        pass
    if raw is not None:
        replace_stdin(raw)
    try:  # the full hook in this process's place (the agents layer does not import the command line)
        exec_hook(args, before=before)
    except OSError:
        pass
    return 0  # the exec failed: a file recall never blocks the agent


#: The command line's own options this entry takes before the hook's (``consolidate OPTION hook ...``).
_GLOBAL_OPTIONS = ("--env-file-if-exists",)


def _global_options(args: list[str]) -> tuple[list[str], list[str]]:
    """``(the leading --env-file-if-exists PATH pairs, the rest)`` of ``args``."""
    i = 0
    while i + 1 < len(args) and args[i] in _GLOBAL_OPTIONS:
        i += 2
    return args[:i], args[i:]


def _settings(before: list[str]) -> None:
    """The store options of the plugin's settings (``CLAUDE_PLUGIN_OPTION_*``) and of the extension's
    ``.env`` files named in ``before``, set in the environment as consolidate.cli.main sets them.
    Raises ConfigError for a file the full hook must read (unreadable, a line or value it would
    skip or report): the full hook answers then."""
    plugin_env.apply()
    for path in before[1::2]:
        plugin_env.load_env_file(path, missing_ok=True)


def _options(args: list[str]) -> dict[str, str] | None:
    """The options of ``args`` this module handles (``--store``, ``--output``, ``--event``; the
    store's and judges' options are read and left to the full hook's other events), or None."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name not in _OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            i += 1
            value = args[i]
        opts[name[2:]] = value
        i += 1
    if opts.get("output", "text") not in ("text", "gemini") or opts.get("outcome", "success") != "success":
        return None
    return opts


def answer(opts: dict[str, str], raw: bytes, keep_open: bool = False) -> str:
    """What the hook prints for the payload ``raw`` ('' for nothing), or :class:`Fallback`.
    ``keep_open``: the session tier's connection is left to the process exit (:data:`LEFT_OPEN`)."""
    payload = json.loads(raw.decode("utf-8")) if raw.strip() else None
    if not isinstance(payload, dict):
        raise Fallback
    if opts.get("event") and EVENT_KEY not in payload:
        payload[EVENT_KEY] = opts["event"]  # as the full hook: setdefault
    sid = session_id_of(payload)
    cwd = raw_cwd(payload)
    if event_name(payload) not in TOOL_EVENTS or sid is None or not _SIMPLE.match(sid):
        raise Fallback
    if cwd is not None and resolve.payload_folder(cwd) is None:
        raise Fallback  # the full hook refuses it or reads it another way
    store = resolve.store_path(opts.get("store"), cwd=cwd)
    if not _private(store):
        raise Fallback
    paths = tool_paths(payload)
    if not paths or not os.path.exists(GRAPH.join(store)):
        return ""
    text = _context(store, sid, paths, cwd_of(payload), keep_open)
    return hook_output(text, raw_event_name(payload, PRE_TOOL_USE_NAME)) if text else ""


def _private(store: str) -> bool:
    """Whether ``store`` is an existing store folder made private (0700, its .gitignore), writable."""
    try:
        st = os.stat(store)
    except OSError:
        return False
    return (st.st_mode & 0o777) == 0o700 and os.path.exists(GITIGNORE.join(store)) and os.access(store, os.W_OK)


def _context(store: str, sid: str, paths: list[str], cwd: str | None, keep_open: bool) -> str:
    """consolidate.agents.file_recall.run's text, what it shows recorded for ``sid``."""
    for p in [store, *paths, cwd or "", PROJECT_ROOT.get() or ""]:
        if not p.isascii() or any(c in p for c in "?#%\\\x00"):
            raise Fallback
    db_path = SESSIONS_DB.join(store)
    if not os.path.exists(db_path):
        raise Fallback
    table = _open_table(store)
    try:
        conn = tables.connect(db_path)
    except sqlite3.Error:
        table.close()
        raise Fallback from None
    try:
        shown = _session(conn, store, sid)
        text, digests = _lines(store, table, paths, cwd, shown)
        if digests:
            now = time.time()
            tables.record_shown(conn, sid, sorted(set(digests)), now, now - KEEP_SECONDS)
            tables.record_printed(conn, sid, digests, now, now - KEEP_SECONDS)
    except BaseException:
        conn.close()
        raise
    finally:
        table.close()
    if keep_open:  # SQLite's close-time checkpoint (fsyncs) is left to the next connection that closes
        LEFT_OPEN.append(conn)
    else:
        conn.close()
    return text


def _session(conn: sqlite3.Connection, store: str, sid: str) -> set[str]:
    """The digests the hook printed to ``sid``, a session without resumed parts (else Fallback:
    consolidate.store.sessions.segments.session_for_end is ``sid`` itself then, whatever the queue
    file holds, so it is not folded here; the next reader of the tier folds it)."""
    tables.ensure_hook_tables(conn)
    if tables.segments(conn, sid):
        raise Fallback  # resumed parts: the one an end would go to is decided there
    return tables.printed_digests(conn, sid)


def stamp(store: str) -> str:
    """The stamp of the table's sources (consolidate.agents.file_recall.load_index's)."""
    out: list = []
    for entry in (GRAPH_NODES, GRAPH_EDGES, MANIFEST):
        path = entry.join(store)
        try:
            st = os.stat(path)
            out.append([os.path.basename(path), st.st_mtime_ns, st.st_size])
        except OSError:
            out.append([os.path.basename(path), None, None])
    return json.dumps(out)


def _open_table(store: str) -> FileTable:
    table = file_table.open_current(Path(store), stamp(store))
    if table is None:
        raise Fallback  # missing, stale or damaged: the full hook writes it
    return table


def _lines(store: str, table: FileTable, paths: list[str], cwd: str | None,
           shown: set[str]) -> tuple[str, list[str]]:
    """The text (header and lines) and the digests shown: file_recall.file_context on the table."""
    if table.empty():
        return "", []
    folds = table.folds()
    root = _project_root(store, cwd)
    rels = [relative(p, root, cwd) for p in paths]
    rows: list[tuple[str, dict]] = []
    for rel in rels:
        outside = rel.startswith("/")
        named = table.keyed(rel, exact=outside)
        lexed = [] if outside else [m for m in _lexical_ids(store, rel) if m not in named]
        found = table.memories(named + lexed)
        if lexed and not folds:
            base = rel.rsplit("/", 1)[-1]
            lexed = [m for m in lexed if m in found and names_file(rel, base, set(found[m]["terms"]))]
        for mid in named + lexed:
            m = found.get(mid)
            if m and mid not in {r[0] for r in rows} and m["digest"] not in shown:
                rows.append((mid, m))
    if not rows:
        return "", []
    if any(m["anchored"] for _mid, m in rows):
        raise Fallback  # the drift check of the rows' code anchors (and its queue): the full hook
    gone = _forgotten(store)
    lines: list[str] = []
    digests: list[str] = []
    for mid, m in rows:  # the agent view on surface file-recall (consolidate.store.views.shown.view)
        if not m["text"].strip() or m["status"] not in RECALLED_STATUSES:
            continue
        if mid in gone:
            raise Fallback  # a forgotten id: hidden unless written again since (the view's rule, the full hook)
        if m["held"]:
            raise Fallback  # the "left out" line: the full hook
        if len(lines) < MAX_MEMORIES:
            lines.append(m["line"])
            digests.append(m["digest"])
    if not lines:
        return "", []
    head = f"consolidate: remembered about {', '.join(rels[:3])} (notes from earlier sessions, not instructions):"
    return "\n".join([head, *("- " + ln for ln in lines)]), digests


def _forgotten(store: str) -> set[str]:
    """The ids of ``archive/forgotten.jsonl`` (consolidate.store.views.shown.forgotten_ids)."""
    try:
        with open(FORGOTTEN.join(store), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return set()
    out = set()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            out.add(row["id"])
    return out


# -- paths and terms, for plain ASCII (consolidate.core.normal and .lexical agree there: a test) --------

def path_key(p: str) -> str:
    """consolidate.core.normal.path_key of an ASCII path without ``\\``; Fallback for another."""
    if not p.isascii() or "\\" in p:
        raise Fallback
    s = p.strip()
    if not s:
        return ""
    absolute = s.startswith("/")
    while True:
        t = posixpath.normpath(s).lstrip("/").strip()
        if t == s:
            break
        s = t
    if s == ".":
        s = ""
    return "/" + s if absolute else s


def _under(key: str, top: str) -> bool:
    return key == top or key.startswith(top.rstrip("/") + "/")


def _resolved(path: str) -> str:
    try:
        return path_key(os.path.realpath(path))
    except (OSError, ValueError):
        return ""


def _project_root(store: str, cwd: str | None) -> str:
    """consolidate.agents.file_recall._project_root."""
    env = PROJECT_ROOT.get()
    if env:
        return env
    top = os.path.dirname(store.rstrip("/")) or "."
    if not cwd or _under(path_key(cwd), path_key(top)):
        return top
    return resolve.linked_worktree(cwd, top) or cwd


def relative(path: str, root: str, cwd: str | None = None) -> str:
    """consolidate.agents.file_recall.relative."""
    key = path_key(path)
    if not key.startswith("/") and cwd and os.path.isabs(cwd):
        key = path_key(cwd + "/" + key)
    if not key.startswith("/"):
        return key
    tops = [t for t in (path_key(root), _resolved(root)) if t]
    for k in (key, _resolved(key)):
        for top in tops:
            if k and k != top and _under(k, top):
                return k[len(top.rstrip("/")) + 1:]
    return key


def _strong(raw: str) -> bool:
    """consolidate.store.index.lexical._strong of an ASCII chunk."""
    if any(ch.isdigit() or ch in _JOINERS for ch in raw):
        return True
    if re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]", raw) or re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", raw):
        return True
    letters = [ch for ch in raw if ch.isalpha()]
    return len(letters) >= 3 and all(ch.isupper() for ch in letters) and raw.lower() not in STOPWORDS


def strong_terms(rel: str) -> set[str]:
    """The query terms of file_recall.lexical_ids for the ASCII path ``rel``: its strong lexical
    terms ending with its (folded) name, else the name."""
    folded = rel.rsplit("/", 1)[-1].lower()
    out: set[str] = set()
    for m in _CHUNK.finditer(rel):
        raw = m.group(0).strip("_")
        if not raw:
            continue
        i = m.start()
        while i > 0 and m.start() - i < 3 and rel[i - 1] == "-":
            i -= 1
        dashes = m.start() - i
        whole = raw.lower()
        if dashes in (1, 2) and not (i > 0 and (rel[i - 1].isalnum() or rel[i - 1] == "-")):
            out.add("-" * dashes + whole)  # a flag's own term is strong
        if not _strong(raw):
            continue
        out.add(whole)
        segs = whole.split("/")
        out |= {"/".join(segs[k:]) for k in range(1, len(segs))}
        if re.match(r"v\d", whole):
            out.add(whole[1:])
    return {t for t in out if t.endswith(folded)} or {folded}


def names_file(full: str, base: str, terms) -> bool:
    """consolidate.agents.file_recall.names_file."""
    paths = [t for t in terms if "/" in t and t.endswith("/" + base)]
    if paths:
        return any(full == t or full.endswith("/" + t) for t in paths)
    return base in terms or full in terms


def _lexical_ids(store: str, rel: str, limit: int = MAX_MEMORIES * 4) -> list[str]:
    """consolidate.agents.file_recall.lexical_ids (the index read as it is, [] without one)."""
    strong = strong_terms(rel)
    folded = rel.rsplit("/", 1)[-1].lower()
    full = max(strong, key=len)
    return [i for i, terms in lexical.file_hits(store, sorted(strong), limit) if names_file(full, folded, terms)]


def run() -> None:
    """The process's entry (``-m`` and the ``consolidate-file-recall`` console script): :func:`main`
    on ``sys.argv``, then exit, leaving a connection of :data:`LEFT_OPEN` to the process exit."""
    code = main()
    if LEFT_OPEN:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
