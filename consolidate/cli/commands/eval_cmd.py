"""``consolidate eval``: measure a judge chain against a labeled JSONL file (notes, or pairs for the
compare prompt), or end to end over labeled sessions."""

from __future__ import annotations

import json
import sys
import time


from consolidate.cli.options import add_json, add_judge, add_limit, add_session, add_time_box, count_1_to
from consolidate.core.errors import BadInput
from consolidate.core.vocab import COMPARE_RELATIONS, CURATE_ACTIONS


def _chain(args):
    from consolidate.judges import registry

    if args.prompt_version:  # the judges read it when they are built
        registry.select_prompt_version(args.prompt_version)
    return registry.build_chain(args.judge)


def cmd_eval(args) -> int:
    if args.pairs:
        return _eval_pairs(args)
    if args.curate_groups:
        return _eval_curate(args)
    if args.end_to_end:
        return _eval_end_to_end(args)
    from consolidate.evals import parts

    chain = _chain(args)
    deadline = None if args.time_box is None else time.time() + args.time_box
    text, out, reports = parts.evaluate_files(chain, args.labels, limit=args.limit, project=args.project,
                                              parts=parts.splits.PARTS if args.split == "both" else (args.split,),
                                              deadline=deadline, as_run=args.as_run)
    print(json.dumps(out, ensure_ascii=False) if args.json else text)
    return max(_unmeasured(d, len(reports) > 1) for d in reports)


def _unmeasured(d: dict, name: bool) -> int:
    """5 (and a line on stderr, naming the file when ``name``) when no note of one label file's JSON
    report ``d`` was judged, else 0."""
    if d["judged"]:
        return 0
    if d["blocked_by_secret_gate"] and not d["unjudged"]:
        why = f"all {d['notes']} notes were blocked by the secret gate, so none was sent to a judge"
    else:
        why = f"no judge answered any of the {d['notes']} notes"
    print(f"error: {why}{' in ' + d['labels'] if name else ''}; metrics are undefined", file=sys.stderr)
    return 5


def _eval_pairs(args) -> int:
    from consolidate.evals.compare import evaluate_pairs, load_pairs, render_pair_report

    return _eval_items(args, load_pairs(args.pairs, limit=args.limit), evaluate_pairs, render_pair_report,
                       str(args.pairs), lambda r: (r.answers, f"{r.total} pairs"))


def _eval_curate(args) -> int:
    from consolidate.evals.curate_eval import evaluate_groups, load_groups, render_curate_report

    return _eval_items(args, load_groups(args.curate_groups, limit=args.limit), evaluate_groups, render_curate_report,
                       str(args.curate_groups), lambda r: (r.answered, f"{r.groups} groups"))


def _eval_items(args, items, evaluate, render, source: str, answered) -> int:
    """One eval of ``items`` (pairs or curation groups) by the chain of ``args``: the report printed
    (``--json``: as JSON without its events); exit 5 when no judge answered any (``answered(report)``:
    ``(answers, "N things")``)."""
    from consolidate.judges.base import JudgeContext

    deadline = None if args.time_box is None else time.time() + args.time_box
    report = evaluate(_chain(args), items, JudgeContext(project=args.project), deadline)
    if args.json:
        print(json.dumps({k: v for k, v in report.to_dict().items() if k != "events"}, ensure_ascii=False))
    else:
        print(render(report, source))
    answers, what = answered(report)
    if not answers:
        print(f"error: no judge answered any of the {what}; accuracy is undefined", file=sys.stderr)
        return 5
    return 0


def _eval_end_to_end(args) -> int:
    from consolidate.evals.end_to_end import evaluate_end_to_end, render_end_to_end

    if args.limit is not None:  # it would be ignored: refuse it, with the option that does limit
        raise BadInput("--limit counts labeled notes or pairs; with --end-to-end use --sessions N or --session ID")
    _chain(args)  # the judge specs and the prompt version are checked once, before any session runs
    if len(args.labels) != 1:
        raise BadInput("--end-to-end reads one --labels file")
    subset = args.session or args.sessions
    report = evaluate_end_to_end(args.labels[0], lambda: _chain(args), sessions_dir=args.sessions_dir,
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
    what.add_argument("--labels", action="append",
                      help="JSONL file: id, content, optional section, verdict keep|drop, optional type, optional"
                           " session_id (with --end-to-end: required); repeatable, each file judged on its own;"
                           " a two-annotator file's disagreements (verdict null, agree false) are left out")
    what.add_argument("--pairs", help="JSONL file of labeled pairs for the compare prompt: id, type, old, new,"
                                      " relation " + "|".join(COMPARE_RELATIONS) + ", optional also, category")
    what.add_argument("--curate-groups", help="JSONL file of labeled groups of memories for the curation prompt:"
                                              " id, memories [{id, statement, type, evidence, action "
                                              + "|".join(CURATE_ACTIONS) + ", into, with}]")
    add_limit(s, 10**9, None, "only the first N labeled notes (or pairs, with --pairs; groups, with --curate-groups)")
    s.add_argument("--project", default="default", help="project name given to the judge as context")
    s.add_argument("--prompt-version", help="judge prompt version (judge-v1, judge-v2, judge-v5, judge-v7, judge-v8; default:"
                                            " $CONSOLIDATE_PROMPT_VERSION, else judge-v1)")
    s.add_argument("--split", choices=("tuning", "validation", "both"), default="both",
                   help="which part of the session split (consolidate/evals/split.py: a third of the sessions"
                        " for validation, by a fixed seed) to report beside the figures over all notes"
                        " (default: both); the judge always sees every note, so the prompts stay the same")
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
