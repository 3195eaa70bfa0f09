"""``consolidate review``: the memories waiting for the user (consolidate/pipeline/review.py).

``review --list [--json]`` lists them; ``--approve ID``, ``--decline ID [--reason TEXT]`` and
``--edit ID TEXT`` decide one (for scripts); with no flag, a prompt loop on a terminal, the list
otherwise."""

from __future__ import annotations

import json
import sys

from consolidate.cli.commands import open_store
from consolidate.core.errors import BadInput
from consolidate.rules.redaction import error_text
from consolidate.pipeline import review
from consolidate.store.views import shown as agent_view


def _print_entry(e: dict, index: int | None = None) -> None:
    head = f"[{index}] " if index is not None else ""
    print(f"{head}{e['id']}  ({', '.join(e['reasons'])})  {e['type']}")
    print(f"    {e['text']}")
    if e["with"]:
        print(f"    disputes with {', '.join(e['with'])}")
    if e.get("proposal"):
        p = e["proposal"]
        target = f" into {p['into']}" if p.get("into") else f" with {p['with']}" if p.get("with") else ""
        print(f"    curation proposes {p.get('action')}{target}" + (f": {p['reason']}" if p.get("reason") else "")
              + f" ({_choices(p)})")


def _choices(p: dict) -> str:
    """What approve and decline do to a memory waiting with curation proposal ``p`` (pipeline/review.py)."""
    if p.get("action") == "merge":
        return f"approve: it holds apart; decline: merge it into {p.get('into')}"
    if p.get("action") == "conflict":
        return f"approve: it holds, {p.get('with')} is superseded; decline: archive it, {p.get('with')} holds"
    return "approve: it holds; decline: drop it"


def _print_result(res: dict) -> None:
    if res["decision"] == "approved":
        extra = f"; superseded {', '.join(res['superseded'])}" if res["superseded"] else ""
        print(f"approved {res['memory_id']}: active, user-stated{extra} (run {res['run_id']})")
    elif res["decision"] == "declined" and res.get("merged_into"):
        print(f"declined {res['memory_id']}: merged into {res['merged_into']}, its provenance folded in (run {res['run_id']})")
    elif res["decision"] == "declined":
        extra = f"; {', '.join(res['settled'])} active again" if res["settled"] else ""
        print(f"declined {res['memory_id']}: archived with a tombstone{extra} (run {res['run_id']})")
    else:
        print(f"edited {res['supersedes']}: now {res['memory_id']}, user-stated (run {res['run_id']})")
        changed = res.get("fields_changed") or {}
        said = [f"{', '.join(names)} re-derived from the new wording" if how == "rederived"
                else f"{', '.join(names)} dropped (taken from the old wording)"
                for how, names in changed.items() if names]
        if res.get("fields_missing"):
            said.append(f"now missing {', '.join(res['fields_missing'])} (stored with fields_missing)")
        if said:
            print("  fields: " + "; ".join(said))


def cmd_review(args) -> int:
    # given, even empty (`--approve ''` is a missing id, refused, not a request for the list)
    action = [name for name in ("approve", "decline", "edit") if getattr(args, name) is not None]
    if len(action) > 1:
        raise BadInput("give one of --approve, --decline, --edit at a time")
    if action:
        store = open_store(args, create=False)
        if not store.exists:
            memory_id = args.edit[0] if args.edit else getattr(args, action[0])
            raise BadInput(f"unknown memory {memory_id!r}: no store at {store.path}")
        store = open_store(args, create=False, writes=True)
        if args.approve is not None:
            res = review.approve(store, args.approve, args.reason)
        elif args.decline is not None:
            res = review.decline(store, args.decline, args.reason)
        else:
            res = review.edit(store, args.edit[0], args.edit[1])
        if args.json:
            print(json.dumps(agent_view.json_answer(res), ensure_ascii=False))
        else:
            _print_result(res)
        return 0
    store = open_store(args, create=False)
    entries = review.queue(store)
    if args.list or args.json or not sys.stdin.isatty():
        if args.json:
            print(json.dumps([review.public(e) for e in entries], ensure_ascii=False))
            return 0
        if not entries:
            print("nothing to review")
        for e in entries:
            _print_entry(e)
        if entries:
            print(f"{len(entries)} to review: consolidate review --approve ID | --decline ID | --edit ID TEXT")
        return 0
    return prompt_loop(args, entries)


PROMPT = "[a]pprove, [d]ecline, [e]dit, [s]kip, [q]uit? "


def prompt_loop(args, entries: list[dict]) -> int:
    """Ask about each entry in turn on the terminal; returns 0. End of input quits."""

    if not entries:
        print("nothing to review")
        return 0
    store = open_store(args, create=False, writes=True)
    done = settled = 0
    for i, e in enumerate(entries, 1):
        if i > 1 and e["id"] not in {x["id"] for x in review.queue(store)}:
            settled += 1  # an earlier decision settled it (the other side of a dispute)
            print(f"[{i}] {e['id']}: settled by an earlier decision")
            continue
        _print_entry(e, i)
        while True:
            try:
                answer = input(PROMPT).strip().lower()
            except EOFError:
                print()
                answer = "q"
            try:
                if answer in ("a", "approve"):
                    _print_result(review.approve(store, e["id"]))
                elif answer in ("d", "decline"):
                    reason = input("why (optional)? ").strip() or None
                    _print_result(review.decline(store, e["id"], reason))
                elif answer in ("e", "edit"):
                    text = input("new wording: ")
                    _print_result(review.edit(store, e["id"], text))
                elif answer in ("s", "skip", ""):
                    break
                elif answer in ("q", "quit"):
                    print(f"{done} decided, {len(entries) - done - settled} left")
                    return 0
                else:
                    continue
            except BadInput as exc:  # a bad edit, or an entry another decision already settled
                print(f"error: {error_text(exc)}")
                if "unknown memory" in str(exc):
                    break
                continue
            done += 1
            break
    print(f"{done} decided, {len(entries) - done - settled} left")
    return 0
