"""``consolidate session start|read|write|append|extract|complete``: the agent workspace from a shell
(see ``consolidate.pipeline.workspace``). Each prints one line (``--json``: the result as JSON). And
``consolidate notes-file``: a notes file the agent keeps outside a workspace, read as a workspace's
Markdown output is (consolidate/model/notes_files.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from consolidate.cli.commands import open_store
from consolidate.core.errors import BadInput
from consolidate.cli.options import read_text_arg
from consolidate.core.vocab import ABORTED, FAILURE, SUCCESS
from consolidate.pipeline.workspace import start
from consolidate.pipeline.workspace import open_workspace
from consolidate.pipeline.workspace import MAX_FILE_BYTES, parse_markdown
from consolidate.store.anchors import project_root


def _print(args, result, line: str) -> int:
    print(json.dumps(result, ensure_ascii=False) if args.json else line)
    return 0


def cmd_start(args) -> int:
    _ws, info = start(open_store(args), args.session, args.task)
    how = "resumed" if info["resumed"] else ("started" if info["created"] else "already open")
    return _print(args, info, f"session {info['session_id']} {how}: workspace {info['path']}"
                              f" ({info['memories']} memories in context/memories.md)")


def cmd_read(args) -> int:
    ws = open_workspace(open_store(args, create=False), args.session)
    if not args.path:
        info = ws.describe()
        if args.json:
            return _print(args, info, "")
        print(f"session {info['session_id']} ({info['state']}): {info['path']}")
        for f in info["files"]:
            print(f"  {f['path']}  {f['bytes']} bytes")
        return 0
    got = ws.read(args.path)
    if args.json:
        return _print(args, got, "")
    if "entries" in got:
        for e in got["entries"]:
            print(e["name"] + ("/" if e["type"] == "folder" else ""))
    else:
        print(got["content"], end="" if got["content"].endswith("\n") else "\n")
    return 0


def cmd_write(args, append: bool = False) -> int:
    ws = open_workspace(open_store(args), args.session)
    text = read_text_arg(args.text)
    got = ws.append(args.path, text) if append else ws.write(args.path, text)
    return _print(args, got, f"{'appended to' if append else 'wrote'} {got['path']} ({got['bytes']} bytes;"
                             f" workspace {got['workspace_bytes']} bytes)")


def cmd_append(args) -> int:
    return cmd_write(args, append=True)


def cmd_extract(args) -> int:
    got = open_workspace(open_store(args), args.session).extract(flag=args.flag)
    blocked = "".join(f"; blocked {b['file']}:{b['line']} ({', '.join(b['kinds'])} {' '.join(b['previews'])})"
                      for b in got["blocked"])
    return _print(args, got, f"extracted {got['candidates']} candidate notes from {len(got['files'])} files"
                             f" of output/{blocked}")


def cmd_complete(args) -> int:
    got = open_workspace(open_store(args), args.session).complete(args.outcome, args.reason, ephemeral=args.ephemeral)
    what = {SUCCESS: f"{got['extracted']} candidates extracted, working/ removed; queued for `consolidate run`",
            FAILURE: "nothing will be promoted; " + ("workspace removed" if got["workspace_removed"] else "workspace kept")
                       + "; queued for `consolidate run` (records session.failed)",
            ABORTED: "workspace kept; `consolidate session start --session "
                       f"{got['session_id']}` resumes it"}[args.outcome]
    return _print(args, got, f"session {got['session_id']} completed ({args.outcome}): {what}")


def cmd_notes_file(args) -> int:
    """``consolidate notes-file FILE --session S``: the notes file as it stands at the session's end
    (consolidate/model/notes_files.py): its notes new since its last consolidated hand-over become notes
    of the session, and the session's run withdraws the memories of notes it no longer holds. The file
    is known by its path from the project's folder (the store's parent: the same file from a subfolder
    or as ``./x`` is one file), or by ``--name``. Refused in one line (nothing recorded): an unreadable,
    non-UTF-8 or over-large file (MAX_FILE_BYTES, as a workspace file), standard input without ``--name``."""
    if args.name is not None and not args.name.strip():
        raise BadInput("--name is empty: give the name the file is known by across sessions, or leave --name out")
    if args.file == "-" and not args.name:
        raise BadInput("give --name for a notes file read from standard input (its name across sessions)")
    if args.file == "-":
        raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    else:
        try:
            with open(args.file, "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise BadInput(f"cannot read the notes file {args.file}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadInput(f"the notes file {args.file} is over {MAX_FILE_BYTES:,} bytes (a notes file is read whole"
                       " at every session end): hand over a smaller file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the notes file {args.file} is not UTF-8 text (byte {exc.start})") from None
    store = open_store(args)
    name = args.name.strip() if args.name else _project_relative(args.file, store)
    items = parse_markdown(text, name, nested=True)
    try:
        res = store.sessions.add_notes_file(args.session, name, [i.content for i in items], scope=store.project,
                                            add_new=not args.no_new)
    except BadInput as exc:
        raise BadInput(f"the notes file {args.file}: {exc}") from None
    print(f"{res['name']}: {res['notes']} notes, {res['new']} new written to session {args.session}"
          + (f", {res['gone']} of this session's no longer in it left out" if res.get("gone") else "")
          + " (memories of notes it no longer holds are withdrawn when the session is consolidated)")
    return 0


def _project_relative(file: str, store) -> str:
    """``file``'s path from the project's folder (consolidate.store.anchors.project_root: the store
    folder's parent, or ``$CONSOLIDATE_PROJECT_ROOT``), ``/``-separated; the absolute path for a file
    outside it."""
    path = Path(file).resolve()
    try:
        return path.relative_to(project_root(store)).as_posix()
    except ValueError:
        return path.as_posix()
