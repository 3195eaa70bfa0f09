"""Context guard benchmark (issue 14, context injection): how many real notes the guard refuses, what it
catches of the injection kinds the tests name, and its speed, side by side with the guard of an earlier
commit.

    python benchmarks/guard_bench.py                  # 5 timing runs, against fe27bee (before the kinds)
    python benchmarks/guard_bench.py --before REV     # another commit, repeatable

The guard (``consolidate.rules.guard.unsafe_reason``) decides which memories the SessionStart hook,
the file recall and the MCP recall never print as context. On the real notes of
../shared/data/realnotes/sessions/*.jsonl every refusal is a false positive (they are agents' own
working notes); each one is listed by note id with the start of its text. The injection kinds are
the lists of tests/unit/rules/test_context_guard.py and tests/unit/rules/test_context_guard_kinds.py (orders and remote code
that must be refused, look-alikes that must pass). Timing: median of 5 runs over the real notes, CPU
time, the two guards interleaved.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench import module_at, real_notes  # noqa: E402
from consolidate.rules.guard import unsafe_reason  # noqa: E402

BEFORE = ("fe27bee",)  # main before the guard learned the kinds of the review (commit 196c682)


def load_before(rev: str):
    """``unsafe_reason`` of the guard as of commit ``rev``, or None."""
    module = module_at(rev, "consolidate/rules/guard.py")
    return module.unsafe_reason if module is not None else None


def kinds() -> tuple[list[str], list[str], list[str]]:
    """(orders to refuse, remote code to refuse, look-alikes to pass) from the tests' lists."""
    import test_context_guard as a
    import test_context_guard_kinds as b

    orders = (a.OVERRIDES + a.OVERRIDES_MORE + b.REPORTED_OVERRIDES + b.DROP_INSTRUCTIONS + b.AGAINST_THE_USER
              + b.STANDING_ORDERS + b.TO_THE_AI + b.ROLE_PLAY)
    remote = a.REMOTE_CODE + b.REPORTED_REMOTE + b.REMOTE_CODE
    return orders, remote, a.ORDINARY + a.ORDINARY_MORE + b.ORDINARY


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", action="append", help=f"commit to compare with (default {BEFORE[0]})")
    args = ap.parse_args(argv)
    notes = [(n.get("id", "?"), n["content"]) for n in real_notes()]
    orders, remote, ordinary = kinds()
    guards = [("now", unsafe_reason)] + [(rev, fn) for rev in (args.before or BEFORE)
                                         if (fn := load_before(rev)) is not None]
    print(f"real notes: {len(notes)}; kinds: {len(orders)} orders, {len(remote)} remote code, "
          f"{len(ordinary)} look-alikes")
    times: dict[str, list[float]] = {name: [] for name, _ in guards}
    for _ in range(max(1, args.runs)):
        for name, fn in guards:
            start = time.process_time()
            for _, text in notes:
                fn(text)
            times[name].append(time.process_time() - start)
    print(f"\n{'guard':10}{'real notes refused':>20}{'orders caught':>16}{'remote caught':>16}"
          f"{'look-alikes passed':>20}{'notes/s':>10}")
    for name, fn in guards:
        refused = [(i, t) for i, t in notes if fn(t)]
        caught_o = sum(bool(fn(t)) for t in orders)
        caught_r = sum(bool(fn(t)) for t in remote)
        passed = sum(fn(t) is None for t in ordinary)
        speed = len(notes) / statistics.median(times[name])
        print(f"{name:10}{len(refused):>20}{f'{caught_o}/{len(orders)}':>16}{f'{caught_r}/{len(remote)}':>16}"
              f"{f'{passed}/{len(ordinary)}':>20}{speed:>10,.0f}")
        for note_id, text in refused:
            print(f"    refused {note_id}: {fn(text)}: {' '.join(text.split())[:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
