"""``consolidate eval``: measure a judge chain against a labeled JSONL file."""

from __future__ import annotations

import json
import sys
import time


from ._common import count_1_to, positive_float

def cmd_eval(args) -> int:
    from judges.base import JudgeContext
    from judges.registry import build_chain

    from ..evaluation import evaluate, load_labels, render_report

    labels = load_labels(args.labels, limit=args.limit)  # BadInput / InvalidImportLine: one-line error
    chain = build_chain(args.judge)
    deadline = None if args.time_box is None else time.time() + args.time_box
    report = evaluate(chain, labels, context=JudgeContext(project=args.project), deadline=deadline,
                      labels_name=str(args.labels), as_run=args.as_run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(render_report(report))
    if not report.predicted:
        if report.blocked and not report.unjudged:
            why = f"all {report.total} notes were blocked by the secret gate, so none was sent to a judge"
        else:
            why = f"no judge answered any of the {report.total} notes"
        print(f"error: {why}; metrics are undefined", file=sys.stderr)
        return 5
    return 0


def register(sub, common) -> None:
    from ._common import judge_help

    s = sub.add_parser("eval", help="measure a judge chain against labeled notes (JSONL: id, content, verdict)")
    s.add_argument("--judge", action="append",
                   help=judge_help())
    s.add_argument("--labels", required=True, help="JSONL file: id, content, optional section, verdict keep|drop, optional type")
    s.add_argument("--limit", type=count_1_to(10**9), help="only the first N labeled notes")
    s.add_argument("--project", default="default", help="project name given to the judge as context")
    s.add_argument("--time-box", type=positive_float, help="seconds for the whole run (default: no limit)")
    s.add_argument("--as-run", action="store_true",
                   help="skip a judge for the rest of the file once it fails, as a consolidation run does"
                        " (default: every batch is offered to every judge)")
    s.add_argument("--json", action="store_true", help="print the report as one JSON object")
    s.set_defaults(func=cmd_eval)
