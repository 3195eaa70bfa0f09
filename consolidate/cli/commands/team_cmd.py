"""Team memory commands: ``team init`` and ``sync [--status]`` (consolidate/team/local.py, team_sync.py)."""

from __future__ import annotations

import json

from consolidate.cli.commands import open_store
from consolidate.rules.redaction import error_text
from consolidate.cli.commands.status_cmd import team_lines
from consolidate.core.errors import BadInput
from consolidate.store.store import Store
from consolidate.team.sync import init
from consolidate.team import local as team
from consolidate.core.errors import ConfigError
from consolidate.team.sync import server_counts
from consolidate.team.sync import pull, push


def cmd_team_init(args) -> int:
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
    store = open_store(args, create=False, writes=not args.status)
    if not store.exists or team.load_config(store.path) is None:
        raise ConfigError(f"store {store.path} is not in a team: `consolidate team init --chroma-url URL --project P`")
    if args.status:
        info = team.status(store)
        assert info is not None  # load_config found the team above
        try:
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
