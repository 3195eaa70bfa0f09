"""The parsers of ``consolidate run`` (consolidate queued session ends in the foreground).

Declarations only: each command runs a function of consolidate.cli.commands.run, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_dry_run, add_json, add_judge, add_session, add_time_box, positive_days
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("run", parents=[common], help="consolidate queued session ends now")
    add_session(s, "only this session")
    add_dry_run(s, "print the plan, write nothing")
    add_judge(s, "judge spec (api:MODEL, cli:PRESET, rules, noop, ...)")
    add_time_box(s, 120.0)
    s.add_argument("--wait-days", type=positive_days, default=None,
                   help="days a note no judge answered waits for one (default $CONSOLIDATE_WAIT_DAYS or 7)")
    add_json(s)
    s.set_defaults(func=command("run", "cmd_run"))
