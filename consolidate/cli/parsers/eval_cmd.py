"""The parsers of ``consolidate eval`` (a judge chain measured against labeled notes, pairs or sessions) and
``consolidate demo``.

Declarations only: each command runs a function of consolidate.cli.commands.eval_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json, add_judge, add_limit, add_session, add_time_box, count_1_to
from consolidate.core.vocab import COMPARE_RELATIONS, CURATE_ACTIONS
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("eval", help="measure a judge chain against labeled notes (JSONL: id, content, verdict),"
                                    " labeled pairs (--pairs), or end to end over labeled sessions (--end-to-end)")
    add_judge(s)
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--labels", action="append",
                      help="JSONL file: id, content, optional section, verdict keep|drop, optional type, optional"
                           " session_id (with --end-to-end: required); repeatable, each file judged on its own (with"
                           " --end-to-end: their notes together, figures per split part beside all);"
                           " a two-annotator file's disagreements (verdict null, agree false) are left out")
    what.add_argument("--pairs", help="JSONL file of labeled pairs for the compare prompt: id, type, old, new,"
                                      " relation " + "|".join(COMPARE_RELATIONS) + ", optional also, category")
    what.add_argument("--curate-groups", help="JSONL file of labeled groups of memories for the curation prompt:"
                                              " id, memories [{id, statement, type, evidence, action "
                                              + "|".join(CURATE_ACTIONS) + ", into, with}]")
    add_limit(s, 10**9, None, "only the first N labeled notes (or pairs, with --pairs; groups, with --curate-groups)")
    s.add_argument("--project", default="default", help="project name given to the judge as context")
    s.add_argument("--prompt-version", help="judge prompt version (judge-v1, judge-v2, judge-v5, judge-v7, judge-v8, judge-v9, judge-v10, judge-v11; default:"
                                            " $CONSOLIDATE_PROMPT_VERSION, else judge-v1); with --curate-groups, the"
                                            " curation prompt version (curate-v1 to curate-v5; default:"
                                            " $CONSOLIDATE_CURATE_PROMPT_VERSION, else curate-v5)")
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
    s.set_defaults(func=command("eval_cmd", "cmd_eval"))
    register_demo(sub, common)


def register_demo(sub, common) -> None:
    s = sub.add_parser("demo", help="run the whole pipeline on sample sessions in a throwaway store")
    s.add_argument("--keep", action="store_true", help="keep the throwaway store and print its path (the .memofs folder itself)")
    s.set_defaults(func=command("eval_cmd", "cmd_demo"))
