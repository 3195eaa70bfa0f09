"""Judge cost (issue 7, benchmark 5): model calls and prompt tokens per 100 judged notes, our
batched judge against a per-note judge (one call per note, as per-fact pipelines do), on the same
real notes, with the same prompt template.

Batched: each real session's notes go through ``judges.chain.make_batches`` (at most
MAX_BATCH_NOTES notes and MAX_BATCH_CHARS characters a batch, as the judge stage sends them, one
session per run) and each batch through ``judges.api.render_prompt``. Per-note: each note alone
through the same two functions. Notes the secret gate blocks are not judged (as in the pipeline).
Tokens are counted with tiktoken's cl100k_base, loaded offline from the copy litellm ships
(``litellm/litellm_core_utils/tokenizers``); when that fails, with the MiniLM ``tokenizer.json``
of consolidate.embeddings (WordPiece), else with a whitespace-and-punctuation count; the output
says which. The counts are deterministic (no timing, so no repeated runs).

Goal: at most 1/20 of the per-note judge's calls and 1/3 of its prompt tokens.

    python benchmarks/bench_judge_cost.py
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import real_sessions, skip_without_notes  # noqa: E402


def tokenizer():
    """(name, count function)."""
    try:
        spec = importlib.util.find_spec("litellm")  # its file only: litellm is not imported
        if spec and spec.submodule_search_locations:
            folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
            if folder.is_dir():
                os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base")
        enc.encode("probe")
        return "tiktoken cl100k_base (offline, from litellm's bundled copy)", lambda t: len(enc.encode(t, disallowed_special=()))
    except Exception as exc:  # no network and no bundled copy
        print(f"note: tiktoken cl100k_base unavailable ({type(exc).__name__}); falling back")
    try:
        from tokenizers import Tokenizer

        from consolidate.embeddings import tokenizer_path

        tok = Tokenizer.from_file(str(tokenizer_path()))
        tok.no_truncation()
        tok.no_padding()
        return "MiniLM WordPiece tokenizer.json (fallback)", lambda t: len(tok.encode(t, add_special_tokens=False).ids)
    except Exception as exc:
        print(f"note: WordPiece tokenizer unavailable ({type(exc).__name__}); falling back")
    rx = re.compile(r"\w+|[^\w\s]")
    return "whitespace and punctuation (fallback)", lambda t: len(rx.findall(t))


def tool_schema_text() -> str | None:
    """The function schema instructor sends with every call in Mode.TOOLS (the ``tools`` parameter)."""
    try:
        from instructor.function_calls import openai_schema

        from judges.api import Verdicts

        return json.dumps([{"type": "function", "function": openai_schema(Verdicts).openai_schema}])
    except Exception:
        return None


def batch_reason(batch, is_last: bool, max_notes: int) -> str:
    if len(batch) == 1 and batch[0][1].truncated_from is not None:
        return "a note over the per-note limit, alone"
    if len(batch) >= max_notes:
        return f"full ({max_notes} notes)"
    if is_last:
        return "the session's last batch (partial)"
    return "closed by the character bound"


def count(sessions, count_tokens, *, max_notes=None, max_chars=None):
    """(calls, prompt tokens, output budget, reasons) of the batched judge over ``sessions``."""
    from judges.api import MAX_TOKENS_CAP, TOKENS_PER_NOTE, render_prompt
    from judges.base import JudgeContext
    from judges.chain import MAX_BATCH_CHARS, MAX_BATCH_NOTES, Item, make_batches

    max_notes = max_notes or MAX_BATCH_NOTES
    max_chars = max_chars or MAX_BATCH_CHARS
    calls = tokens = budget = 0
    reasons: dict[str, int] = {}
    for slug, notes in sessions.items():
        items = [Item(key=i, content=n["content"], section=n.get("section")) for i, n in enumerate(notes)]
        batches = make_batches(items, max_notes, max_chars)
        for j, batch in enumerate(batches):
            calls += 1
            tokens += count_tokens(render_prompt([jn for _, jn in batch], JudgeContext(core="", project=slug)))
            budget += min(MAX_TOKENS_CAP, TOKENS_PER_NOTE * len(batch) + 200)
            r = batch_reason(batch, j == len(batches) - 1, max_notes)
            reasons[r] = reasons.get(r, 0) + 1
    return calls, tokens, budget, reasons


def main() -> int:
    sessions = real_sessions()
    skip_without_notes(sessions)
    from consolidate import secrets
    from judges.api import MAX_TOKENS_CAP, TOKENS_PER_NOTE, render_prompt
    from judges.base import JudgeContext
    from judges.chain import MAX_BATCH_CHARS, MAX_BATCH_NOTES, Item, make_batches

    blocked = 0
    judged = {}
    for slug, notes in sessions.items():
        keep = [n for n in notes if not secrets.scan(n["content"])]
        blocked += len(notes) - len(keep)
        if keep:
            judged[slug] = keep
    n_notes = sum(len(v) for v in judged.values())
    name, count_tokens = tokenizer()
    print(f"{n_notes:,} real notes in {len(judged)} sessions judged ({blocked} blocked by the secret gate, not judged);"
          f" tokens counted with {name}")
    print(f"batching: at most {MAX_BATCH_NOTES} notes and {MAX_BATCH_CHARS:,} characters a batch, one session per run\n")

    b_calls, b_tokens, b_budget, reasons = count(judged, count_tokens)
    p_calls = p_tokens = p_budget = 0
    for slug, notes in judged.items():
        for i, n in enumerate(notes):
            (batch,) = make_batches([Item(key=i, content=n["content"], section=n.get("section"))])
            p_calls += 1
            p_tokens += count_tokens(render_prompt([jn for _, jn in batch], JudgeContext(core="", project=slug)))
            p_budget += min(MAX_TOKENS_CAP, TOKENS_PER_NOTE + 200)
    template = count_tokens(render_prompt([], JudgeContext(core="", project="x")))
    per100 = 100.0 / n_notes
    print(f"{'per 100 judged notes':<34}{'batched (ours)':>16}{'per-note':>14}{'ratio':>10}")
    print(f"{'model calls':<34}{b_calls * per100:>16.2f}{p_calls * per100:>14.2f}{b_calls / p_calls:>10.4f}"
          f"  (1/{p_calls / b_calls:.1f})")
    print(f"{'prompt tokens (render_prompt)':<34}{b_tokens * per100:>16,.0f}{p_tokens * per100:>14,.0f}"
          f"{b_tokens / p_tokens:>10.4f}  (1/{p_tokens / b_tokens:.1f})")
    schema = tool_schema_text()
    if schema:
        st = count_tokens(schema)
        bt, pt = b_tokens + st * b_calls, p_tokens + st * p_calls
        print(f"{'  + tool schema sent per call':<34}{bt * per100:>16,.0f}{pt * per100:>14,.0f}{bt / pt:>10.4f}"
              f"  (instructor Mode.TOOLS sends the Verdicts schema, {st} tokens, with every call)")
    print(f"{'output budget (max_tokens)':<34}{b_budget * per100:>16,.0f}{p_budget * per100:>14,.0f}"
          f"{b_budget / p_budget:>10.4f}")
    print(f"\nThe template alone (no notes, empty core.md) is {template} tokens: the per-note judge pays it once per"
          f" note, the batched one once per {n_notes / b_calls:.1f} notes.")
    print(f"Total: batched {b_calls:,} calls, {b_tokens:,} prompt tokens; per-note {p_calls:,} calls, {p_tokens:,} tokens.")

    calls_ok = b_calls / p_calls <= 1 / 20
    if not calls_ok:
        floor_calls = sum(math.ceil(len(v) / MAX_BATCH_NOTES) for v in judged.values())
        print(f"\nWhere the calls go (batches by what closed them): "
              + ", ".join(f"{v} {k}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])))
        print(f"  even with no character bound, one session per run needs sum(ceil(notes/{MAX_BATCH_NOTES}))"
              f" = {floor_calls} calls = 1/{n_notes / floor_calls:.1f} of per-note: 1/20 needs every batch full.")
        print("  What-if (same notes and template, other bounds of make_batches; output budget"
              f" {TOKENS_PER_NOTE} tokens a note + 200 must stay under MAX_TOKENS_CAP {MAX_TOKENS_CAP}, so at most"
              f" {(MAX_TOKENS_CAP - 200) // TOKENS_PER_NOTE} notes a batch):")
        for mn, mc in ((20, 16_000), (25, 12_000), (25, 16_000), (25, 20_000)):
            c, t, _, _ = count(judged, count_tokens, max_notes=mn, max_chars=mc)
            print(f"    max_notes={mn}, max_chars={mc:>6,}: {c * per100:5.2f} calls per 100 notes = 1/{p_calls / c:.1f},"
                  f" tokens 1/{p_tokens / t:.1f}")

    print(f"\nGOAL judge calls: {b_calls / p_calls:.4f} = 1/{p_calls / b_calls:.1f} of the per-note judge's"
          f" (goal <= 1/20 = 0.0500): {'MET' if calls_ok else 'MISSED'}")
    tokens_ok = b_tokens / p_tokens <= 1 / 3
    print(f"GOAL judge prompt tokens: {b_tokens / p_tokens:.4f} = 1/{p_tokens / b_tokens:.1f} of the per-note judge's"
          f" (goal <= 1/3 = 0.3333): {'MET' if tokens_ok else 'MISSED'}")
    return 0 if calls_ok and tokens_ok else 1


if __name__ == "__main__":
    sys.exit(main())
