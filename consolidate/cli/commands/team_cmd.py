"""Team memory commands: ``team init`` and ``sync [--status]`` (consolidate/team/local.py, team_sync.py)."""

from __future__ import annotations

import json

from consolidate.cli.options import add_json, open_store
from consolidate.rules.redaction import error_text
from consolidate.cli.options import positive_float


def team_lines(info: dict) -> list[str]:
    """What ``status`` and ``sync --status`` print about the team store (never the token)."""
    lines = [f"team store: {info['url']} project {info['project']} (database {info['database']}, this machine"
             f" {info['machine']})",
             f"last push: {info.get('last_push') or 'never'}; last pull: {info.get('last_pull') or 'never'}",
             f"pending pushes: {info['pending_pushes']}" + (" (pushed by the next run or `consolidate sync`)"
                                                            if info["pending_pushes"] else "")]
    if info.get("last_error"):
        lines.append(f"last team error: {info['last_error']}")
    return lines


def install_note(store: str | None) -> str:
    """What ``install-hook`` says about a store in a team: where the hooks' token comes from ('' for
    a store not in a team). Never the token."""
    from pathlib import Path

    from consolidate.team.local import load_config

    if not store:
        return ""
    try:
        cfg = load_config(Path(store))
    except Exception:  # noqa: BLE001 - a bad team.json is reported by the commands that use it
        return ""
    if cfg is None:
        return ""
    where = cfg.token_file or f"${cfg.token_env}"
    return (f"team store: {cfg.url} project {cfg.project}: the hooks pull and push with the token from {where}"
            " (give the agent CLI that environment; the token is never written into the hook command)")


def cmd_team_init(args) -> int:
    from consolidate.core.errors import BadInput
    from consolidate.store.store import Store
    from consolidate.team.sync import init

    if not args.chroma_url or not args.project:
        raise BadInput("team init needs --chroma-url URL and --project P")
    store = Store(args.store, embedding=args.embedding, project=args.project)  # a local index: no chroma_url
    store.require_writable()
    done = init(store, args.chroma_url, args.project, tenant=args.tenant, token_env=args.token_env,
                token_file=args.token_file, insecure=args.insecure)
    pulled = done["pulled"]
    print(f"team store: {done['url']} project {done['project']} (database {done['database']}); token {done['token']}")
    print(f"this store ({store.path}) pushes each applied run and pulls at session start and before each run;"
          + (f" pulled {pulled.get('memories', 0)} memories" if pulled.get("ok") else f" pull: {pulled.get('error')}"))
    return 0


def cmd_sync(args) -> int:
    from consolidate.team import local as team
    from consolidate.core.errors import ConfigError

    store = open_store(args, create=False, writes=not args.status)
    if not store.exists or team.load_config(store.path) is None:
        raise ConfigError(f"store {store.path} is not in a team: `consolidate team init --chroma-url URL --project P`")
    if args.status:
        info = team.status(store)
        assert info is not None  # load_config found the team above
        try:
            from consolidate.team.sync import server_counts

            info["server"] = server_counts(store)
        except Exception as exc:  # noqa: BLE001 - status reports, it does not fail on a down server
            info["server"] = None
            info["server_error"] = error_text(exc, limit=300)
        if args.json:
            print(json.dumps(info, ensure_ascii=False))
            return 0
        for line in team_lines(info):
            print(line)
        if info["server"] is not None:
            print("on the server: " + ", ".join(f"{k} {v}" for k, v in info["server"].items()))
        else:
            print(f"server: {info['server_error']}")
        return 0
    from consolidate.team.sync import pull, push

    pushed = push(store, seconds=args.timeout)
    pulled = pull(store, seconds=args.timeout)
    if pulled.get("lost_writes"):  # this machine's writes overwritten on the server: queued again, pushed now
        again = push(store, seconds=args.timeout)
        pushed = {**again, "pushed": pushed["pushed"] + again["pushed"],
                  "memories": pushed["memories"] + again["memories"], "events": pushed["events"] + again["events"]}
    if args.json:
        print(json.dumps({"push": pushed, "pull": pulled}, ensure_ascii=False))
    else:
        print(f"pushed {len(pushed['pushed'])} runs ({pushed['memories']} memories, {pushed['events']} events);"
              f" {pushed['pending']} waiting")
        if pulled.get("ok"):
            print(f"pulled {pulled['memories']} memories, {pulled['removed']} removed, {pulled['edges']} edges,"
                  f" {pulled['tombstones']} tombstones")
        else:
            print(f"pull: {pulled.get('error')}")
    return 0 if pulled.get("ok") else 4


def register(sub, common) -> None:

    s = sub.add_parser("team", parents=[common], help="team memory on a Chroma server")
    tsub = s.add_subparsers(dest="team_command", required=True, metavar="TEAM_COMMAND")
    i = tsub.add_parser("init", parents=[common], help="join this store to a project's team store on a Chroma server",
                       description="--chroma-url URL (https://HOST:PORT; http only on loopback or with --insecure)"
                                   " and --project P (its own database on the server) are required")
    i.add_argument("--tenant", default="default_tenant", help="Chroma tenant (default default_tenant)")
    i.add_argument("--token-env", default=None, metavar="NAME",
                   help="environment variable holding the token (default CONSOLIDATE_TEAM_TOKEN); never the token itself")
    i.add_argument("--token-file", default=None, metavar="PATH",
                   help="file holding the token, mode 0600, outside the store")
    i.add_argument("--insecure", action="store_true",
                   help="allow plain http or no token on a non-loopback address")
    i.set_defaults(func=cmd_team_init)
    s = sub.add_parser("sync", parents=[common], help="push what waits in the team outbox, then pull the team's changes")
    s.add_argument("--status", action="store_true", help="show the team store, last push and pull, pending pushes")
    s.add_argument("--timeout", type=positive_float, default=60.0, help="seconds for the push and for the pull (default 60)")
    add_json(s)
    s.set_defaults(func=cmd_sync)
