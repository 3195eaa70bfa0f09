"""Session-tier commands: ``note`` and ``end`` (``import`` is consolidate.cli.commands.share_cmd's, ``notes-file``
consolidate.cli.commands.workspace_cmd's)."""

from __future__ import annotations

import sys

from consolidate.cli.commands import open_store
from consolidate.cli.options import read_text_arg
from consolidate.core.errors import UnknownSession
from consolidate.core.vocab import END_PENDING
from consolidate.model.run_lines import consolidated_line
from consolidate.store.layout import SESSIONS_DB, WORKSPACES
from consolidate.store.sessions.tier import check_session_id
from consolidate.store.workspaces import folder_name
from consolidate.rules.note_policy import check_note
from consolidate.store.sessions.tier import check_kind


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

    line = check_note(text, flag=flag, kind=check_kind(kind), metadata=metadata, blocked=blocked)
    if line:
        print(prefix + line)


def cmd_end(args) -> int:
    """``consolidate end``: queue a session end (a session with no notes and no workspace is refused)."""
    sid = check_session_id(args.session)
    store = open_store(args, create=False)
    _require_known_for_end(store, sid)
    store = open_store(args, create=False, writes=True)  # known: opened for writing (private, not read-only)
    before = store.sessions.session_end(sid)
    if before and before["status"] not in END_PENDING and before["outcome"] == args.outcome \
            and store.sessions.count(sid) == 0 and not store.sessions.notes_files(sid):  # consolidated so already: nothing queued

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

    if store.exists and (store.sub(WORKSPACES).is_dir() or store.sub(SESSIONS_DB).exists()):
        if store.sub(SESSIONS_DB).exists() and (store.sessions.count(sid) or store.sessions.session_end(sid)
                                                or store.sessions.notes_files(sid)):
            return

        if store.sub(WORKSPACES, folder_name(sid)).is_dir():
            return
    raise UnknownSession(f"unknown session {sid!r}: it has no notes, no workspace and no session end"
                         " (nothing queued; write a note first, or check the id)", session_id=sid)
