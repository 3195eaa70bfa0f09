"""Secret gate benchmark: recall, false positives and speed of consolidate.rules.secrets.scan, side by
side with detect-secrets alone, on the secret corpus (tests/support/secret_corpus/), and the gate's speed
and flag count on the real notes of ../shared/data/realnotes/sessions/*.jsonl.

    python benchmarks/secrets_bench.py                # full run (~1-2 min on 2 cores)
    python benchmarks/secrets_bench.py --quick        # 1 timing run, no detect-secrets timing

The corpus is regenerated with seeds 0, 1, 2, ... (fresh fake secrets and hashes each time) until
it holds at least --min-notes notes; recall and false-positive rate are counted over all of them.

"detect-secrets alone" is detect-secrets' default plugin set and default filters
(``detect_secrets.settings.default_settings()``), each note written to its own ``.txt`` file and
scanned with ``SecretsCollection.scan_file``: what ``detect-secrets scan`` does on a file. (Its
ad-hoc ``scan_line`` is not used: with eager search its high-entropy plugins report every word
and leave the entropy limit to the caller.) A note counts as blocked when any plugin reports it.
The files are written before the clock starts; reading them is part of detect-secrets' time.

"Gate before" (issue 14) is the gate of an earlier commit (``--before REV``, repeatable; default
``b190c05``, the last one before gitleaks' provider rules came in, issue 14 item 5, and ``4c1c30a``,
the last one before issue 14), each loaded from git into its own module and run side by side on the same notes in the same
process, timing runs interleaved: recall, false positives, notes per second, and its flags on the
real notes. Skipped when git or the commit is not there. The provider rules in use, and those left
out with the reason (a rule that RE2 does not compile is named here), are printed first.

"Provider rules engine" (issue 27 item 6): the gate with gitleaks' rules compiled as written by RE2
(google-re2) side by side with the same gate running them through the Go-to-Python translator and
Python's ``re`` of ``--engine-before REV``, in one process, interleaved: notes per second of ``scan``
and of ``provider_rules.find`` alone on the corpus, the real notes and long notes, and how many notes
get the same findings from both.

"What detect-secrets adds" (issue 27 item 6): the corpus scanned with the gate as it is and with the
rules it takes from detect-secrets switched off: their findings no other rule overlaps, the secret notes
only they block, and false positives with and without them.

Goals (issue 4): recall 100 %, false positives at most 1 %, at least 2,000 notes per second; issue
14: none of the three worse than before.
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The clock: CPU time of this process (``time.process_time``), not wall-clock time. Seven engineers
#: share the machine's two cores, so wall-clock figures move by 2x between runs with the load of the
#: others; the gate is single-threaded and does no I/O (detect-secrets alone reads one small file per
#: note), so its CPU time is its cost. ``--wall`` measures wall-clock time instead.
CLOCK = time.process_time
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from consolidate.rules.secrets import scan  # noqa: E402
from secret_corpus import Entry, load  # noqa: E402

SHARED = Path(os.environ.get("CONSOLIDATE_SHARED", ROOT.parent / "shared"))
GOAL_RECALL, GOAL_FP, GOAL_SPEED = 1.0, 0.01, 2000.0


def build_corpus(min_notes: int) -> list[Entry]:
    entries: list[Entry] = []
    seed = 0
    while len(entries) < min_notes:
        entries.extend(load(seed))
        seed += 1
    return entries


def rates(entries: list[Entry], blocked: list[bool]) -> tuple[float, float, int, int, int, int]:
    pos = [b for e, b in zip(entries, blocked) if e.expect == "block"]
    neg = [b for e, b in zip(entries, blocked) if e.expect == "allow"]
    return sum(pos) / len(pos), sum(neg) / len(neg), sum(pos), len(pos), sum(neg), len(neg)


#: The last commit of main before gitleaks' provider rules (issue 14, item 5) changed the gate (then
#: consolidate/secrets.py), and the last one before issue 14 changed it. Both predate the package
#: layout of issue 27: their module imports modules that no longer exist, so it cannot be loaded
#: beside today's and the comparison with them is skipped (load_before returns None).
BEFORE_REVS = ("b190c05", "4c1c30a")


def load_before(rev: str):
    """The gate's ``scan`` as of commit ``rev``, or None (no git, unknown commit)."""
    from _bench import module_at

    try:
        module = module_at(rev, "consolidate/secrets.py")
    except ImportError:  # a commit before the package layout: its relative imports are gone
        return None
    return module.scan if module is not None else None


def timed_pair(fn_a, fn_b, runs: int) -> tuple[float, float]:
    """Medians of ``runs`` interleaved timings of two functions (a, b, a, b, ...)."""
    a, b = [], []
    for _ in range(runs):
        for fn, out in ((fn_a, a), (fn_b, b)):
            start = CLOCK()
            fn()
            out.append(CLOCK() - start)
    return statistics.median(a), statistics.median(b)


def timed(fn, runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return statistics.median(times), times


class DetectSecretsAlone:
    """detect-secrets' default plugins and filters, one ``.txt`` file per note."""

    def __init__(self, texts: list[str]):
        from detect_secrets.core.secrets_collection import SecretsCollection
        from detect_secrets.settings import default_settings

        self._collection = SecretsCollection
        self._settings = default_settings
        self._dir = tempfile.TemporaryDirectory(prefix="secrets-bench-")
        self.paths = []
        for i, text in enumerate(texts):
            path = os.path.join(self._dir.name, f"note{i:06d}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            self.paths.append(path)

    def scan_all(self) -> list[set[str]]:
        out = []
        with self._settings():
            for path in self.paths:
                collection = self._collection()
                collection.scan_file(path)
                out.append({secret.type for _, secret in collection})
        return out

    def close(self) -> None:
        self._dir.cleanup()


def realnotes(shared: Path) -> list[dict]:
    notes = []
    for path in sorted(glob.glob(str(shared / "data" / "realnotes" / "sessions" / "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            notes.extend(json.loads(line) for line in f if line.strip())
    return notes


#: Key material standing alone (issue 29 item 2): encodings of random bytes, and the sizes in bytes
KEY_ENCODINGS = {
    "base64": lambda b: base64.b64encode(b).decode(),
    "base64url": lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="),
    "hex": lambda b: b.hex(),
    "base32": lambda b: base64.b32encode(b).decode(),
}
KEY_SIZES = (16, 20, 24, 32, 48, 64, 128, 300)


def key_material_table(samples: int) -> None:
    """Recall of the gate on random keys standing alone (no keyword, alone in a note), by encoding
    and size, and the highest word score (consolidate/rules/key_material.py, ``_word_score``) of the
    base64/base32 keys next to the floor from which a run reads as words."""
    import random

    from consolidate.rules import key_material

    rng = random.Random(29)
    print(f"\nkey material standing alone ({samples} random keys per cell, alone in a note): recall, "
          "and for base64/base64url/base32 the highest word score / the floor")
    print(f"{'bytes':>8}" + "".join(f"{enc:>24}" for enc in KEY_ENCODINGS))
    for size in KEY_SIZES:
        cells = []
        for enc, encode in KEY_ENCODINGS.items():
            keys = [encode(rng.randbytes(size)) for _ in range(samples)]
            found = sum(any(f.start == 0 and f.end == len(k) for f in scan(k)) for k in keys)
            cell = pct(found / samples).strip()
            if enc != "hex":
                cores = [k.rstrip("=") for k in keys]
                top = max(key_material._word_score(c) for c in cores)
                floor = key_material._word_floor(len(cores[0]), upper_only=enc == "base32")
                cell += f" {top:.2f}/{floor:.2f}"
            cells.append(cell)
        print(f"{size:>8}" + "".join(f"{c:>24}" for c in cells))


#: The last commit whose consolidate/rules/provider_rules.py ran gitleaks' rules through the hand-written
#: Go-to-Python translator and Python's ``re`` (issue 27 item 6 compiles them with google-re2 as written).
ENGINE_BEFORE_REV = "84cfaf3"
LONG_NOTE_CHARS = 64_000


def engine_side_by_side(texts: list[str], contents: list[str], rev: str, runs: int) -> None:
    """The gate with gitleaks' rules compiled by RE2 (now) and with the translator and Python ``re`` of
    ``rev`` (before), in one process, timing runs interleaved: whole-``scan`` notes per second and
    ``provider_rules.find`` alone, on the corpus notes, the real notes and long notes (real notes joined
    into texts of :data:`LONG_NOTE_CHARS` characters, where a backtracking engine would pay the most);
    and whether the two find the same secrets, note by note (every finding's kind and span, and every
    gitleaks finding before the gate's overlap filter)."""
    from _bench import module_at

    from consolidate.rules import provider_rules
    from consolidate.rules.secrets import providers

    before = module_at(rev, "consolidate/rules/provider_rules.py")
    if before is None:
        print(f"\nprovider rules engine: commit {rev} not found in git; skipped")
        return
    # the module reads the rule file beside it: the same pinned file (a link, not a copy)
    (Path(before.__file__).parent / "data").symlink_to(provider_rules.RULES_FILE.parent)
    now_rules = providers._provider_rules

    def with_rules(module):
        providers._provider_rules = lambda: module  # the gate reaches gitleaks' rules through this one seam

    def gate_findings(module, corpus):
        with_rules(module)
        try:
            return [[(f.kind, f.start, f.end) for f in scan(t)] + [(v.rule, v.start, v.end) for v in module.find(t)]
                    for t in corpus]
        finally:
            providers._provider_rules = now_rules

    def timed_scan(module, corpus):
        def run():
            with_rules(module)
            try:
                [scan(t) for t in corpus]
            finally:
                providers._provider_rules = now_rules
        return run

    joined = "\n\n".join(contents)
    long_notes = [joined[i:i + LONG_NOTE_CHARS] for i in range(0, len(joined), LONG_NOTE_CHARS)][:20]
    print(f"\nprovider rules engine, side by side in one run (CPU time, median of {runs}, interleaved): "
          f"RE2 (google-re2, rules as written) now, the translator + Python re of {rev} before")
    print(f"{'':34}{'notes':>7}{'RE2 now':>14}{'re before':>14}{'now / before':>14}{'same findings':>16}")
    for name, corpus in (("secret corpus", texts), ("real notes", contents),
                         (f"long notes ({LONG_NOTE_CHARS // 1000} k chars)", long_notes)):
        if not corpus:
            continue
        for module in (provider_rules, before):  # compile every rule a note opens, outside the clock
            gate_findings(module, corpus)
        same = sum(a == b for a, b in zip(gate_findings(provider_rules, corpus), gate_findings(before, corpus)))
        t_now, t_before = timed_pair(timed_scan(provider_rules, corpus), timed_scan(before, corpus), runs)
        print(f"{name + ': scan':34}{len(corpus):>7}{len(corpus) / t_now:>11,.0f}/s{len(corpus) / t_before:>11,.0f}/s"
              f"{t_before / t_now:>13.2f}x{f'{same}/{len(corpus)}':>16}")
        f_now, f_before = timed_pair(lambda c=corpus: [list(provider_rules.find(t)) for t in c],
                                     lambda c=corpus: [list(before.find(t)) for t in c], runs)
        print(f"{name + ': provider_rules.find':34}{len(corpus):>7}{len(corpus) / f_now:>11,.0f}/s"
              f"{len(corpus) / f_before:>11,.0f}/s{f_before / f_now:>13.2f}x")
    print("  (now / before: above 1.00x RE2 is faster)")


def detect_secrets_share(entries: list[Entry]) -> None:
    """What detect-secrets adds to the gate (issue 27 item 6: drop it if gitleaks' rules and the gate
    cover it): the corpus scanned with the gate as it is and with every rule taken from detect-secrets
    switched off (its plugin regexes, its AWS, PEM-label and PuTTY patterns, its JWT validation), the
    gate's own rules and gitleaks' left as they are. Printed: the findings of detect-secrets' rules that
    no other rule overlaps, by kind; the secret notes only it blocks, and those whose secret survives
    ``redact`` without it, by format; false positives with and without it."""
    import re

    from consolidate.rules.secrets import gate, providers, redact

    real = providers._detect_secrets
    never = re.compile(r"(?!)")

    def without_detect_secrets():
        rules, by_needle = providers._indexed_rules((), ())  # the gate's own prefixed-key rules only
        return real()._replace(aws_key_id=never, aws_secret_quoted=never, pem_header=never, putty_header=never,
                               jwt_valid=lambda v: False, token_rules=(), extra_rules=(), rules=rules,
                               rules_by_needle=by_needle)

    def without(fn, text):
        gate._detect_secrets = without_detect_secrets  # scan reaches detect-secrets' rules through this seam
        try:
            return fn(text)
        finally:
            gate._detect_secrets = real

    only: Counter[str] = Counter()
    blocked_only: Counter[str] = Counter()
    leaked: Counter[str] = Counter()
    false_pos = [0, 0]
    for e in entries:
        with_ds, without_ds = scan(e.text), without(scan, e.text)
        if e.expect == "allow":
            false_pos[0] += bool(with_ds)
            false_pos[1] += bool(without_ds)
            continue
        only.update(f.kind for f in with_ds if not any(g.start < f.end and f.start < g.end for g in without_ds))
        blocked_only[e.format] += bool(with_ds) and not without_ds
        redacted = without(redact, e.text)
        leaked[e.format] += any(s in redacted for s in e.secrets)
    n_secret = sum(e.expect == "block" for e in entries)
    print(f"\nwhat detect-secrets adds ({n_secret} secret notes, {len(entries) - n_secret} ordinary; the gate with and "
          "without the rules it takes from detect-secrets):")
    print("  its findings no other rule overlaps: " + (", ".join(f"{k} {v}" for k, v in only.most_common()) or "none"))
    print("  secret notes only it blocks: " + (", ".join(f"{k} {v}" for k, v in blocked_only.most_common() if v) or "none"))
    print("  secret notes whose secret survives redact without it: "
          + (", ".join(f"{k} {v}" for k, v in leaked.most_common() if v) or "none"))
    print(f"  false positives: {false_pos[0]} with it, {false_pos[1]} without")


def pct(x: float) -> str:
    return f"{100 * x:6.2f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timing runs (median reported); default 5")
    ap.add_argument("--min-notes", type=int, default=5000, help="corpus notes per timing run")
    ap.add_argument("--quick", action="store_true", help="one timing run; detect-secrets not timed")
    ap.add_argument("--no-detect-secrets", action="store_true", help="skip detect-secrets alone")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared/ folder (realnotes)")
    ap.add_argument("--before", action="append", help="commit of a gate to compare with, repeatable"
                    f" (default {' and '.join(BEFORE_REVS)})")
    ap.add_argument("--engine-before", default=ENGINE_BEFORE_REV,
                    help="commit whose provider_rules.py (translator + Python re) the RE2 engine is timed against"
                         f" (default {ENGINE_BEFORE_REV}); '' skips it")
    ap.add_argument("--wall", action="store_true", help="time with the wall clock instead of CPU time")
    ap.add_argument("--key-samples", type=int, default=2000,
                    help="random keys per encoding and size in the key-material table; default 2000")
    args = ap.parse_args(argv)
    if args.wall:
        global CLOCK
        CLOCK = time.perf_counter
    runs = 1 if args.quick else max(1, args.runs)
    before_revs = args.before or list(BEFORE_REVS)

    base = load(0)
    entries = build_corpus(args.min_notes)
    texts = [e.text for e in entries]
    n_block = sum(e.expect == "block" for e in base)
    print(f"secret corpus: {n_block} secret notes in {len({e.format for e in base if e.expect == 'block'})} "
          f"formats, {len(base) - n_block} ordinary notes per seed; "
          f"{len(entries)} notes over {len(entries) // len(base) + (len(entries) % len(base) > 0)} seeds")

    from consolidate.rules import provider_rules

    scan("warm up: import detect-secrets' plugin classes")
    stats = provider_rules.stats()
    print(f"gitleaks rules (commit {stats['upstream_commit'][:12]}): {stats['used']} of {stats['total']} in use, "
          f"{len(stats['not_compiled'])} do not compile in RE2"
          + (f" ({', '.join(stats['not_compiled'])})" if stats["not_compiled"] else ""))
    for rule, reason in sorted(stats["skipped"].items()):
        print(f"  left out: {rule}: {reason}")
    ours = [bool(scan(t)) for t in texts]
    our_median, our_times = timed(lambda: [scan(t) for t in texts], runs)
    our_speed = len(texts) / our_median
    o_recall, o_fp, o_tp, o_p, o_fpn, o_n = rates(entries, ours)

    befores = []  # (rev, scan, rates..., speed before, speed now), each timed interleaved with the gate now
    for rev in before_revs:
        before_scan = load_before(rev)
        if before_scan is None:
            print(f"gate before ({rev}): not found in git; skipped")
            continue
        before_scan("warm up")
        b_blocked = [bool(before_scan(t)) for t in texts]
        b_median, o_median2 = timed_pair(lambda before_scan=before_scan: [before_scan(t) for t in texts], lambda: [scan(t) for t in texts],
                                         runs)
        befores.append((rev, before_scan, *rates(entries, b_blocked), len(texts) / b_median, len(texts) / o_median2))

    ds_rows = None
    if not args.no_detect_secrets:
        ds = DetectSecretsAlone(texts)
        try:
            ds.scan_all()  # warm up (imports, settings)
            ds_types = ds.scan_all()
            ds_blocked = [bool(t) for t in ds_types]
            ds_median = None
            if not args.quick:
                ds_median, _ = timed(ds.scan_all, runs)
        finally:
            ds.close()
        d_recall, d_fp, d_tp, d_p, d_fpn, d_n = rates(entries, ds_blocked)
        ds_rows = (d_recall, d_fp, d_tp, d_p, d_fpn, d_n, ds_median)

    print()
    print(f"{'':28}{'consolidate gate':>22}{'detect-secrets alone':>24}")
    ds_cell = (lambda s: f"{s:>24}") if ds_rows else (lambda s: f"{'(skipped)':>24}")
    print(f"{'recall (secrets blocked)':28}{pct(o_recall) + f' {o_tp}/{o_p}':>22}"
          + ds_cell(f"{pct(ds_rows[0])} {ds_rows[2]}/{ds_rows[3]}" if ds_rows else ""))
    print(f"{'false positives (ordinary)':28}{pct(o_fp) + f' {o_fpn}/{o_n}':>22}"
          + ds_cell(f"{pct(ds_rows[1])} {ds_rows[4]}/{ds_rows[5]}" if ds_rows else ""))
    ds_speed = f"{len(texts) / ds_rows[6]:,.0f}" if ds_rows and ds_rows[6] else "(not timed)"
    print(f"{'notes/s (median of ' + str(runs) + ')':28}{f'{our_speed:,.0f}':>22}{ds_speed:>24}")
    print(f"  gate runs (s): {', '.join(f'{t:.3f}' for t in our_times)} for {len(texts)} notes")
    for rev, _, b_recall, b_fp, b_tp, b_p, b_fpn, b_n, b_speed, o_speed2 in befores:
        print(f"\nside by side with the gate before ({rev}), timing runs interleaved:")
        print(f"{'':28}{'gate now':>22}{'gate before':>24}{'now / before':>14}")
        print(f"{'recall (secrets blocked)':28}{pct(o_recall) + f' {o_tp}/{o_p}':>22}{pct(b_recall) + f' {b_tp}/{b_p}':>24}")
        print(f"{'false positives (ordinary)':28}{pct(o_fp) + f' {o_fpn}/{o_n}':>22}{pct(b_fp) + f' {b_fpn}/{b_n}':>24}")
        print(f"{'notes/s (median of ' + str(runs) + ')':28}{f'{o_speed2:,.0f}':>22}{f'{b_speed:,.0f}':>24}"
              f"{o_speed2 / b_speed:>13.2f}x")

    # where the two differ, by format (seed 0 corpus sizes, counts over all seeds)
    by_format: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for i, e in enumerate(entries):
        row = by_format[(e.expect, e.format)]
        row[0] += 1
        row[1] += ours[i] == (e.expect == "block")
        if ds_rows:
            row[2] += ds_blocked[i] == (e.expect == "block")
    print("\ncorrect decisions by format (gate / detect-secrets alone), formats where either errs:")
    for (expect, fmt), (total, ok_ours, ok_ds) in sorted(by_format.items()):
        if ok_ours < total or (ds_rows and ok_ds < total):
            ds_part = f"{ok_ds}/{total}" if ds_rows else "-"
            print(f"  {expect:5} {fmt:24} gate {ok_ours}/{total:<5} detect-secrets {ds_part}")
    if ds_rows:
        fp_types = Counter(t for e, ts in zip(entries, ds_types) if e.expect == "allow" for t in ts)
        print("detect-secrets' plugins behind its false positives:",
              ", ".join(f"{k} {v}" for k, v in fp_types.most_common()))
    missed = sorted({e.id for e, b in zip(entries, ours) if e.expect == "block" and not b})
    flagged = sorted({e.id for e, b in zip(entries, ours) if e.expect == "allow" and b})
    if missed:
        print("gate misses:", ", ".join(missed))
    if flagged:
        print("gate false positives:", ", ".join(flagged))

    notes = realnotes(args.shared)
    if notes:
        contents = [n.get("content") or "" for n in notes]
        real_median, _ = timed(lambda: [scan(c) for c in contents], runs)
        hits = [(n, scan(c)) for n, c in zip(notes, contents)]
        hits = [(n, f) for n, f in hits if f]
        print(f"\nreal notes: {len(notes)} notes in {real_median:.3f} s "
              f"({len(notes) / real_median:,.0f} notes/s), {len(hits)} flagged")
        for rev, before_scan, *_ in befores:
            b_real, o_real = timed_pair(lambda before_scan=before_scan: [before_scan(c) for c in contents], lambda: [scan(c) for c in contents],
                                        runs)
            b_hits = sum(bool(before_scan(c)) for c in contents)
            print(f"real notes side by side with {rev}: gate now {len(notes) / o_real:,.0f} notes/s, {len(hits)} flagged"
                  f" ({pct(len(hits) / len(notes)).strip()});"
                  f" gate before {len(notes) / b_real:,.0f} notes/s, {b_hits} flagged"
                  f" ({pct(b_hits / len(notes)).strip()}); now / before {b_real / o_real:.2f}x")
        for note, findings in hits:  # previews only: a real secret must not reach this output
            print(f"  {note.get('id')}: " + ", ".join(f"{f.kind} {f.preview}" for f in findings))
        if not args.no_detect_secrets and not args.quick:
            ds = DetectSecretsAlone(contents)
            try:
                ds_real = ds.scan_all()
            finally:
                ds.close()
            types = Counter(t for ts in ds_real for t in ts)
            print(f"real notes through detect-secrets alone: {sum(bool(t) for t in ds_real)} flagged ("
                  + ", ".join(f"{k} {v}" for k, v in types.most_common()) + ")")
    else:
        print(f"\nreal notes: none under {args.shared / 'data/realnotes/sessions'}; skipped")

    detect_secrets_share(entries)
    if args.engine_before:
        engine_side_by_side(texts, [n.get("content") or "" for n in notes], args.engine_before, runs)

    key_material_table(args.key_samples)

    met = o_recall >= GOAL_RECALL and o_fp <= GOAL_FP and our_speed >= GOAL_SPEED
    print(
        f"\nGOALS recall {pct(o_recall).strip()} / 100 % = {o_recall / GOAL_RECALL:.3f}; "
        f"false positives {pct(o_fp).strip()} / <= 1 % = {o_fp / GOAL_FP:.2f}; "
        f"speed {our_speed:,.0f} / >= 2,000 notes/s = {our_speed / GOAL_SPEED:.1f}x; "
        + ("all met" if met else "NOT MET")
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
