"""``consolidate eval``: measure a judge chain against a labeled JSONL file (notes, or pairs for the
compare prompt), or end to end over labeled sessions."""

from __future__ import annotations

import json
import sys
import time


from consolidate.core.errors import BadInput
from consolidate.judges import registry
from consolidate.evals import parts
from consolidate.evals.compare import evaluate_pairs, load_pairs, render_pair_report
from consolidate.evals.curate_eval import evaluate_groups, load_groups, render_curate_report
from consolidate.judges.base import JudgeContext
from consolidate.evals.end_to_end import evaluate_end_to_end, render_end_to_end
from consolidate.evals.split import PARTS
from consolidate.evals.demo import run_demo
from consolidate.model.run_lines import counted


def _chain(args):
    if args.prompt_version is not None:  # the judges read it when they are built ("" refused there)
        if getattr(args, "curate_groups", None):  # the curation prompt: curate-v1 ... (a fresh tester)
            registry.select_curate_prompt_version(args.prompt_version)
        else:
            registry.select_prompt_version(args.prompt_version)
    return registry.build_chain(args.judge)


def cmd_eval(args) -> int:
    if args.pairs:
        return _eval_pairs(args)
    if args.curate_groups:
        registry.curate_prompt_version()  # a bad $CONSOLIDATE_CURATE_PROMPT_VERSION: one line, before any judge
        return _eval_curate(args)
    if args.end_to_end:
        return _eval_end_to_end(args)

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
    return _eval_items(args, load_pairs(args.pairs, limit=args.limit), evaluate_pairs, render_pair_report,
                       str(args.pairs), lambda r: (r.answers, f"{r.total} pairs"))


def _eval_curate(args) -> int:
    return _eval_items(args, load_groups(args.curate_groups, limit=args.limit), evaluate_groups, render_curate_report,
                       str(args.curate_groups), lambda r: (r.answered, counted(r.groups, "group")))


def _eval_items(args, items, evaluate, render, source: str, answered) -> int:
    """One eval of ``items`` (pairs or curation groups) by the chain of ``args``: the report printed
    (``--json``: as JSON without its events); exit 5 when no judge answered any (``answered(report)``:
    ``(answers, "N things")``)."""

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
    if args.limit is not None:  # it would be ignored: refuse it, with the option that does limit
        raise BadInput("--limit counts labeled notes or pairs; with --end-to-end use --sessions N or --session ID")
    _chain(args)  # the judge specs and the prompt version are checked once, before any session runs
    subset = args.session or args.sessions
    report = evaluate_end_to_end(args.labels, lambda: _chain(args), sessions_dir=args.sessions_dir,
                                 sessions=subset, keep_stores=args.keep_stores,
                                 progress=None if args.json else
                                 lambda s: print(f"  {s.session_id}: {s.notes} notes, {s.keeps} keeps,"
                                                 f" {s.written['active']} active ({s.seconds:.1f} s)", file=sys.stderr))
    report.shown_parts = PARTS if args.split == "both" else (args.split,)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(render_end_to_end(report))
    if all(o == "unjudged" for s in report.sessions for o in s.outcomes.values()):
        print("error: no judge answered any labeled note in any session; figures are undefined", file=sys.stderr)
        return 5
    return 0


def cmd_demo(args) -> int:
    """``consolidate demo``: the whole pipeline on sample sessions in a throwaway store."""

    return run_demo(keep=args.keep)
