"""The parsers of session-tier commands: ``note``, ``import``, ``notes-file``, ``end``.

Declarations only: ``note`` and ``end`` run consolidate.cli.commands.session's functions, ``import``
consolidate.cli.commands.share_cmd.cmd_import, each imported when it runs."""

from __future__ import annotations

from consolidate.cli.options import add_outcome, add_session, duration
from consolidate.cli.parsers import command
from consolidate.cli.parsers.share_cmd import add_import_options


def register(sub, common) -> None:
    s = sub.add_parser("note", parents=[common], help="write a note to a session")
    add_session(s, required=True)
    s.add_argument("text", help="the note; - reads it from standard input")
    s.add_argument("--flag", action="store_true", help="a keeper: promoted without a judge")
    s.add_argument("--ttl", type=duration, help="expire the note after this long (20m, 2h, 1d)")
    s.add_argument("--kind", help="decision, constraint, preference, recipe, failure or fact")
    s.set_defaults(func=command("session", "cmd_note"))
    s = sub.add_parser("import", parents=[common], help="import a JSONL file of notes (one per line, `content` required)")
    s.add_argument("file", nargs="?", help="JSONL file; - reads standard input")
    add_session(s, "session id (default: each line's session_id)")

    add_import_options(s)
    s.set_defaults(func=command("share_cmd", "cmd_import"))
    s = sub.add_parser("notes-file", parents=[common],
                       help="hand over a notes file the agent keeps (scratchpad, memory bank, AGENTS.md) as it stands")
    s.add_argument("file", help="the Markdown notes file (one note per list item, else per paragraph); - reads standard input")
    add_session(s, required=True)
    s.add_argument("--name", help="the name the file is known by across sessions (default: its path from the project's folder)")
    s.add_argument("--no-new", action="store_true",
                   help="record the snapshot only: add no note (the notes came in by another way)")
    s.set_defaults(func=command("workspace_cmd", "cmd_notes_file"))
    s = sub.add_parser("end", parents=[common], help="record a session end in the queue")
    add_session(s, required=True)
    add_outcome(s)
    s.add_argument("--reason", help="why it ended so (kept in the session.failed event)")
    s.set_defaults(func=command("session", "cmd_end"))
