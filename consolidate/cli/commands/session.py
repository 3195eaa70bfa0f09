"""Session-tier commands: ``note``, ``import``, ``end`` (standard library only: the fast path)."""

from __future__ import annotations

import sys

from consolidate.cli.options import add_outcome, add_session, duration, open_store, read_text_arg
from consolidate.core.vocab import END_PENDING
from consolidate.store.layout import SESSIONS_DB, WORKSPACES


def cmd_note(args) -> int:
    store = open_store(args)
    text = read_text_arg(args.text)
    note_id = store.sessions.add_note(args.session, text, flag=args.flag, ttl=args.ttl, kind=args.kind)
    print(f"note {note_id} written to session {args.session}")
    if hint := store.sessions.ended_hint(args.session):
        print(hint)
    notice = getattr(note_id, "notice", None)
    print_policy(text, flag=args.flag, kind=args.kind, blocked=bool(notice))
    _tell_redacted([notice])
    return 0


def _tell_redacted(notices) -> None:
    """One line on standard error per note the secret gate redacted when it was written."""
    for notice in notices:
        if notice:
            print(f"secret: {notice}", file=sys.stderr)


def print_policy(text: str, *, flag: bool, kind: str | None, metadata: dict | None = None, prefix: str = "",
                 blocked: bool = False) -> None:
    """Print what the write policy would say about a flagged note (note_policy.check_note), if anything;
    ``blocked``: the secret gate redacted it (then the line says it is not kept)."""
    from consolidate.rules.note_policy import check_note
    from consolidate.store.sessions.tier import check_kind

    line = check_note(text, flag=flag, kind=check_kind(kind), metadata=metadata, blocked=blocked)
    if line:
        print(prefix + line)


def cmd_import(args) -> int:
    if args.agents_md:  # a consolidate block of AGENTS.md / CLAUDE.md (consolidate/agents/export_md.py)
        from consolidate.cli.commands.share_cmd import cmd_import_agents_md

        return cmd_import_agents_md(args)
    if args.file is None:
        from consolidate.core.errors import BadInput

        raise BadInput("give a JSONL file of notes (- for standard input) or --agents-md FILE")
    store = open_store(args)
    written: list[dict] = []
    counts = store.sessions.import_jsonl(sys.stdin.buffer if args.file == "-" else args.file, args.session,
                                         written=written)
    for sid, n in counts.items():
        print(f"imported {n} notes into session {sid}")
    blocked_lines = {line for line, _ in getattr(counts, "notices", [])}
    for row in written:
        print_policy(row["content"], flag=row["flag"], kind=row["kind"], metadata=row["metadata"],
                     prefix=f"line {row['line']} (note {row['note_id']}): ", blocked=row["line"] in blocked_lines)
    if not counts:
        print("no notes in the file (blank lines only)")
    _tell_redacted(f"line {line}: {notice}" for line, notice in getattr(counts, "notices", []))
    return 0


def cmd_end(args) -> int:
    from consolidate.store.sessions.tier import check_session_id

    sid = check_session_id(args.session)
    store = open_store(args, create=False)
    _require_known_for_end(store, sid)
    store = open_store(args, create=False, writes=True)  # known: opened for writing (private, not read-only)
    before = store.sessions.session_end(sid)
    if before and before["status"] not in END_PENDING and before["outcome"] == args.outcome \
            and store.sessions.count(sid) == 0:  # ended and consolidated as so already: nothing is queued
        from consolidate.model.report import consolidated_line

        print(consolidated_line(sid, before))
        return 0
    store.sessions.end(args.session, args.outcome, args.reason)  # BadInput: a failure after a consolidated success
    n = store.sessions.count(args.session.strip())
    if before and before["status"] in END_PENDING and before["outcome"] != args.outcome:
        print(f"note: replaces the queued outcome {before['outcome']} with {args.outcome}", file=sys.stderr)
    print(f"session {args.session} ended ({args.outcome}, {n} notes); queued for `consolidate run`")
    return 0


def _require_known_for_end(store, sid: str) -> None:
    """UnknownSession (exit 3, nothing queued, no store created) for a session with no notes, no
    session end and no workspace: almost always a typo. Agent hooks and the MCP server end sessions
    through the session tier directly and are not refused."""
    from consolidate.core.errors import UnknownSession

    if store.exists and (store.sub(WORKSPACES).is_dir() or store.sub(SESSIONS_DB).exists()):
        if store.sub(SESSIONS_DB).exists() and (store.sessions.count(sid) or store.sessions.session_end(sid)):
            return
        from consolidate.pipeline.workspace import folder_name

        if store.sub(WORKSPACES, folder_name(sid)).is_dir():
            return
    raise UnknownSession(f"unknown session {sid!r}: it has no notes, no workspace and no session end"
                         " (nothing queued; write a note first, or check the id)", session_id=sid)


def register(sub, common) -> None:
    s = sub.add_parser("note", parents=[common], help="write a note to a session")
    add_session(s, required=True)
    s.add_argument("text", help="the note; - reads it from standard input")
    s.add_argument("--flag", action="store_true", help="a keeper: promoted without a judge")
    s.add_argument("--ttl", type=duration, help="expire the note after this long (20m, 2h, 1d)")
    s.add_argument("--kind", help="decision, constraint, preference, recipe, failure or fact")
    s.set_defaults(func=cmd_note)
    s = sub.add_parser("import", parents=[common], help="import a JSONL file of notes (one per line, `content` required)")
    s.add_argument("file", nargs="?", help="JSONL file; - reads standard input")
    add_session(s, "session id (default: each line's session_id)")
    from consolidate.cli.commands.share_cmd import add_import_options

    add_import_options(s)
    s.set_defaults(func=cmd_import)
    s = sub.add_parser("end", parents=[common], help="record a session end in the queue")
    add_session(s, required=True)
    add_outcome(s)
    s.add_argument("--reason", help="why it ended so (kept in the session.failed event)")
    s.set_defaults(func=cmd_end)
