"""The parsers of the queue commands: ``worker`` (what the hook starts), ``batch`` and ``curate`` (``hook``
is consolidate.cli.parsers.hook's).

Declarations only: each command runs consolidate.cli.commands.worker_cmd.<func>, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

import argparse

from consolidate.cli.options import add_dry_run, add_json, add_judge, add_time_box
from consolidate.cli.options import count_1_to, count_from_to, positive_hours, value_type
from consolidate.core.dates import parse_user_date
from consolidate.core.errors import BadInput
from consolidate.cli.parsers import command


@value_type
def user_date(text: str) -> str:
    """argparse type of a date option (``--since``): a date consolidate.core.dates.parse_user_date reads
    (2026-07-01, yesterday, last-week, '3 days ago'); returns the text (the command reads it then)."""

    try:
        parse_user_date(text, what="date")
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text



def register(sub, common) -> None:
    s = sub.add_parser("worker", parents=[common], help="drain the queue (what the hook starts, detached)")
    add_time_box(s, None, "seconds per session (default $CONSOLIDATE_TIME_BOX or 120)")
    add_judge(s)
    s.set_defaults(func=command("worker_cmd", "cmd_worker"))
    register_batch(sub, common)

def register_batch(sub, common) -> None:
    s = sub.add_parser("batch", parents=[common],
                       help="drain the queue and orphaned sessions, expire quarantine, decay, optionally re-judge")
    s.add_argument("--concurrency", type=count_1_to(64), default=4, help="sessions judged at once (1 to 64, default 4)")
    add_judge(s)
    add_time_box(s, 120.0, "seconds per session")
    s.add_argument("--orphan-age", type=positive_hours, default=24.0,
                   help="hours after its last note a session without an end counts as orphaned (default 24)")
    s.add_argument("--rejudge", action="store_true", help="re-judge entries written under other prompt versions")
    s.add_argument("--since", type=user_date,
                   help="with --rejudge: only entries written on or after this date, local time"
                        " (2026-07-01, 2026-07-01T08:30+10:00, yesterday, last-week, '3 days ago')")
    s.add_argument("--prompt-version", help="with --rejudge: only entries written under this prompt version")
    s.add_argument("--drifted", action="store_true",
                   help="with --rejudge: re-judge the memories whose anchored code changed instead")
    s.add_argument("--curate", action="store_true",
                   help="last, the store curation pass (`consolidate curate`), as its own undoable run")
    add_json(s, "print what the batch did as one JSON object")
    s.set_defaults(func=command("worker_cmd", "cmd_batch"))
    register_curate(sub, common)

def register_curate(sub, common) -> None:
    s = sub.add_parser("curate", parents=[common],
                       help="the judge reads the active memories in groups of related ones: keep, drop junk,"
                            " merge repeats, dispute conflicts (one undoable run)")
    add_judge(s)
    add_time_box(s, 120.0, "seconds for every judge call of the pass (groups left after it are deferred)")
    s.add_argument("--review", action="store_true",
                   help="send every proposal to the review queue (`consolidate review`) instead of applying it")
    add_dry_run(s, "print the proposals, write nothing")
    s.add_argument("--max-group", type=count_from_to(2, 64),
                   help="most memories the judge sees in one group (at least 2, at most 64; default: the"
                        " prompt version's, 40 from curate-v5 on, 8 before)")
    s.add_argument("--prompt-version", help="curation prompt version (curate-v1 to curate-v5; default:"
                                            " $CONSOLIDATE_CURATE_PROMPT_VERSION, else curate-v5)")
    add_json(s, "print the proposals and counts as one JSON object")
    s.set_defaults(func=command("worker_cmd", "cmd_curate"))
