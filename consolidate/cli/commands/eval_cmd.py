"""``consolidate eval``: measure a judge chain against a labeled JSONL file (notes, or pairs for the
compare prompt), or end to end over labeled sessions."""

from __future__ import annotations

import json
import sys
import time


from consolidate.cli.options import add_json, add_judge, add_limit, add_session, add_time_box, count_1_to
from consolidate.core.vocab import COMPARE_RELATIONS


def _chain(args):
    from judges import registry

    if args.prompt_version:  # the judges read it when they are built
        registry.select_prompt_version(args.prompt_version)
    return registry.build_chain(args.judge)


def cmd_eval(args) -> int:
    from judges.base import JudgeContext

    if args.pairs:
        return _eval_pairs(args)
    if args.end_to_end:
        return _eval_end_to_end(args)
    from consolidate.evals.judges import evaluate, load_labels, render_report

    labels = load_labels(args.labels, limit=args.limit)  # BadInput / InvalidImportLine: one-line error
    chain = _chain(args)
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


def _eval_pairs(args) -> int:
    from judges.base import JudgeContext

    from consolidate.evals.compare import evaluate_pairs, load_pairs, render_pair_report

    pairs = load_pairs(args.pairs, limit=args.limit)
    chain = _chain(args)
    deadline = None if args.time_box is None else time.time() + args.time_box
    report = evaluate_pairs(chain, pairs, JudgeContext(project=args.project), deadline)
    if args.json:
        print(json.dumps({k: v for k, v in report.to_dict().items() if k != "events"}, ensure_ascii=False))
    else:
        print(render_pair_report(report, str(args.pairs)))
    if not report.answers:
        print(f"error: no judge answered any of the {report.total} pairs; accuracy is undefined", file=sys.stderr)
        return 5
    return 0


def _eval_end_to_end(args) -> int:
    from consolidate.evals.end_to_end import evaluate_end_to_end, render_end_to_end

    if args.limit is not None:  # it would be ignored: refuse it, with the option that does limit
        from consolidate.core.errors import BadInput

        raise BadInput("--limit counts labeled notes or pairs; with --end-to-end use --sessions N or --session ID")
    _chain(args)  # the judge specs and the prompt version are checked once, before any session runs
    subset = args.session or args.sessions
    report = evaluate_end_to_end(args.labels, lambda: _chain(args), sessions_dir=args.sessions_dir,
                                 sessions=subset, keep_stores=args.keep_stores,
                                 progress=None if args.json else
                                 lambda s: print(f"  {s.session_id}: {s.notes} notes, {s.keeps} keeps,"
                                                 f" {s.written['active']} active ({s.seconds:.1f} s)", file=sys.stderr))
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(render_end_to_end(report))
    if all(o == "unjudged" for s in report.sessions for o in s.outcomes.values()):
        print("error: no judge answered any labeled note in any session; figures are undefined", file=sys.stderr)
        return 5
    return 0


def register(sub, common) -> None:
    s = sub.add_parser("eval", help="measure a judge chain against labeled notes (JSONL: id, content, verdict),"
                                    " labeled pairs (--pairs), or end to end over labeled sessions (--end-to-end)")
    add_judge(s)
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--labels", help="JSONL file: id, content, optional section, verdict keep|drop, optional type"
                                       " (with --end-to-end: session_id too)")
    what.add_argument("--pairs", help="JSONL file of labeled pairs for the compare prompt: id, type, old, new,"
                                      " relation " + "|".join(COMPARE_RELATIONS) + ", optional also, category")
    add_limit(s, 10**9, None, "only the first N labeled notes (or pairs, with --pairs)")
    s.add_argument("--project", default="default", help="project name given to the judge as context")
    s.add_argument("--prompt-version", help="judge prompt version (judge-v1, judge-v2, judge-v5, judge-v7, judge-v8; default:"
                                            " $CONSOLIDATE_PROMPT_VERSION, else judge-v1)")
    add_time_box(s, None)
    s.add_argument("--as-run", action="store_true",
                   help="skip a judge for the rest of the file once it fails, as a consolidation run does"
                        " (default: every batch is offered to every judge)")
    s.add_argument("--end-to-end", action="store_true",
                   help="run each labeled session alone through the whole pipeline into a throwaway store and"
                        " score the written memories by note id")
    s.add_argument("--sessions-dir", help="with --end-to-end: the sessions folder (default: ../realnotes/sessions"
                                          " beside the label file's folder)")
    s.add_argument("--sessions", type=count_1_to(10**6),
                   help="with --end-to-end: only the N labeled sessions with the fewest notes (default: all)")
    add_session(s, "with --end-to-end: only this session (repeatable)", repeat=True)
    s.add_argument("--keep-stores", help="with --end-to-end: keep each session's store in this folder")
    add_json(s, "print the report as one JSON object")
    s.set_defaults(func=cmd_eval)
