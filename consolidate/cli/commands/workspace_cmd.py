"""``consolidate session start|read|write|append|extract|complete``: the agent workspace from a shell
(see ``consolidate.pipeline.workspace``). Each prints one line (``--json``: the result as JSON)."""

from __future__ import annotations

import json

from consolidate.cli.options import add_json, add_outcome, add_session, open_store, read_text_arg
from consolidate.core.vocab import ABORTED, FAILURE, SUCCESS


def _print(args, result, line: str) -> int:
    print(json.dumps(result, ensure_ascii=False) if args.json else line)
    return 0


def cmd_start(args) -> int:
    from consolidate.pipeline.workspace import start

    _ws, info = start(open_store(args), args.session, args.task)
    how = "resumed" if info["resumed"] else ("started" if info["created"] else "already open")
    return _print(args, info, f"session {info['session_id']} {how}: workspace {info['path']}"
                              f" ({info['memories']} memories in context/memories.md)")


def cmd_read(args) -> int:
    from consolidate.pipeline.workspace import open_workspace

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
    from consolidate.pipeline.workspace import open_workspace

    ws = open_workspace(open_store(args), args.session)
    text = read_text_arg(args.text)
    got = ws.append(args.path, text) if append else ws.write(args.path, text)
    return _print(args, got, f"{'appended to' if append else 'wrote'} {got['path']} ({got['bytes']} bytes;"
                             f" workspace {got['workspace_bytes']} bytes)")


def cmd_append(args) -> int:
    return cmd_write(args, append=True)


def cmd_extract(args) -> int:
    from consolidate.pipeline.workspace import open_workspace

    got = open_workspace(open_store(args), args.session).extract(flag=args.flag)
    blocked = "".join(f"; blocked {b['file']}:{b['line']} ({', '.join(b['kinds'])} {' '.join(b['previews'])})"
                      for b in got["blocked"])
    return _print(args, got, f"extracted {got['candidates']} candidate notes from {len(got['files'])} files"
                             f" of output/{blocked}")


def cmd_complete(args) -> int:
    from consolidate.pipeline.workspace import open_workspace

    got = open_workspace(open_store(args), args.session).complete(args.outcome, args.reason, ephemeral=args.ephemeral)
    what = {SUCCESS: f"{got['extracted']} candidates extracted, working/ removed; queued for `consolidate run`",
            FAILURE: "nothing will be promoted; " + ("workspace removed" if got["workspace_removed"] else "workspace kept")
                       + "; queued for `consolidate run` (records session.failed)",
            ABORTED: "workspace kept; `consolidate session start --session "
                       f"{got['session_id']}` resumes it"}[args.outcome]
    return _print(args, got, f"session {got['session_id']} completed ({args.outcome}): {what}")


def register(sub, common) -> None:
    s = sub.add_parser("session", help="an agent workspace: start, read, write, append, extract, complete")
    ss = s.add_subparsers(dest="session_command", required=True, metavar="ACTION")

    def action(name, func, help_text, session_required=True):
        p = ss.add_parser(name, parents=[common], help=help_text)
        add_session(p, required=session_required)
        add_json(p, "print the result as JSON")
        p.set_defaults(func=func)
        return p

    p = action("start", cmd_start, "create (or resume an aborted) session workspace; writes context/",
               session_required=False)
    p.add_argument("--task", help="what the session is for: memories relevant to it go to context/memories.md")
    p = action("read", cmd_read, "print a workspace file or folder (no path: list the workspace)")
    p.add_argument("path", nargs="?", help="relative to the workspace, e.g. context/memories.md")
    for name, func in (("write", cmd_write), ("append", cmd_append)):
        p = action(name, func, f"{name} a file under working/ or output/")
        p.add_argument("path", help="relative to the workspace, e.g. output/memory.md")
        p.add_argument("text", help="the text; - reads it from standard input")
    p = action("extract", cmd_extract, "turn output/ into candidate notes (through the secret gate)")
    p.add_argument("--flag", action="store_true", help="flag every candidate (promoted without a judge)")
    p = action("complete", cmd_complete, "end the session: success, failure or aborted")
    add_outcome(p)
    p.add_argument("--reason", help="why it ended so (kept in the session.failed event)")
    p.add_argument("--ephemeral", action="store_true", help="on failure, also remove the workspace")
