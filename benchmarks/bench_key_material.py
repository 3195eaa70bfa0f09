"""The secret gate's grouped-key search on long notes (it was quadratic in the words of one ``_GROUPED``
match): CPU time of ``consolidate.rules.key_material.find`` on a note of N words (``"word " * N`` and a
TOTP seed in groups of 4 at its end, one match of N + 8 groups, like a pasted log before a key),
today's module and the one of ``--before REV`` (default ``f67da8c``, the last commit that judged every
suffix again), loaded from git into its own module and run side by side in one process, interleaved,
medians of ``--runs``. Both must give the same spans.

The module before costs seconds from 10,000 words on (3.5-7 s there, by the machine's load; 16x more
at 4x the words): above ``--before-max`` words (default 10,000) it runs once, not ``--runs`` times
(``--before-max 0``: every size ``--runs`` times, about 10 minutes).
"""

from __future__ import annotations

import base64
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _bench import median, module_at, parser  # noqa: E402

from consolidate.rules import key_material  # noqa: E402

BEFORE = "f67da8c"
SIZES = (2_500, 10_000, 40_000)


def note(words: int) -> str:
    seed = base64.b32encode(random.Random(words).randbytes(20)).decode()
    return "word " * words + " ".join(seed[i:i + 4] for i in range(0, len(seed), 4))


def cpu(find, text: str) -> tuple[float, list[tuple[int, int]]]:
    start = time.process_time()
    spans = list(find(text))
    return time.process_time() - start, spans


def main() -> int:
    ap = parser(__doc__, runs=5)
    ap.add_argument("--before", default=BEFORE, help=f"commit of the module before (default {BEFORE})")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="words per note, comma-separated")
    ap.add_argument("--before-max", type=int, default=10_000,
                    help="above this many words the module before runs once (0: always --runs times)")
    args = ap.parse_args()
    before = module_at(args.before, "consolidate/rules/key_material.py")
    print(f"key_material.find, CPU time, medians of {args.runs} runs; before = {args.before}")
    print(f"{'words':>8}{'chars':>10}{'now':>12}{'before':>18}{'before / now':>14}  same spans")
    for words in (int(s) for s in args.sizes.split(",")):
        text = note(words)
        now_t: list[float] = []
        before_t: list[float] = []
        before_runs = 1 if args.before_max and words > args.before_max else args.runs
        same = True
        for r in range(args.runs):
            dt, spans = cpu(key_material.find, text)
            now_t.append(dt)
            if before is not None and r < before_runs:
                dt, old = cpu(before.find, text)
                before_t.append(dt)
                same = same and old == spans
        now = median(now_t)
        if before_t:
            b = median(before_t)
            label = f"{b:.3f} s" + ("" if len(before_t) == args.runs else f" ({len(before_t)} run)")
            print(f"{words:>8,}{len(text):>10,}{now * 1000:>9.1f} ms{label:>18}{b / now:>13.0f}x  {same}")
        else:
            print(f"{words:>8,}{len(text):>10,}{now * 1000:>9.1f} ms{'-':>18}{'-':>14}  -")
        if not same:
            print("DIFFERENT SPANS", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
