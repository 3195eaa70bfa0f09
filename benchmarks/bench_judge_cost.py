"""Judge cost (issue 7, benchmark 5): model calls and prompt tokens per 100 judged notes, our
batched judge against a per-note judge (one call per note, as per-fact pipelines do), on the same
real notes, with the same prompt template.

Batched: each real session's notes go through ``consolidate.judges.chain.make_batches`` (one batch per
NOTES_PER_CALL notes rounded down, at most MAX_BATCH_NOTES notes and MAX_BATCH_CHARS characters a
batch, as the judge stage sends them, one session per run) and each batch through ``consolidate.judges.api.render_prompt``. Per-note: each note alone
through the same two functions. Notes the secret gate blocks are not judged (as in the pipeline).
Tokens are counted with tiktoken's cl100k_base, loaded offline from the copy litellm ships
(``litellm/litellm_core_utils/tokenizers``); when that fails, with the MiniLM ``tokenizer.json``
of consolidate.store.index.embeddings (WordPiece), else with a whitespace-and-punctuation count; the output
says which. The counts are deterministic (no timing, so no repeated runs).

Then the same sessions go through the real pipeline (``run_queue``, one session per run, a fresh
store each, a scripted judge that counts its calls): judge calls per 100 judged notes, as the events
of each run report them (``judge.call`` against ``note.judged_keep`` + ``note.judged_drop``).

Goals: at most 1/20 of the per-note judge's calls and 1/3 of its prompt tokens (issue 7); at most
4 judge calls per 100 judged notes in a run (issue 3).

``--graduated`` (issue 34 goal 4, reported, no goal): cost per graduated memory. The real-notes
end-to-end runs recorded as capable-model cassettes (``cassettes/e2e-*realnotes-judge-v*-capable.yaml``)
are replayed in this process (``consolidate eval --end-to-end``, the CLI judge ``cli:template`` absent,
as tests/scenarios/test_capable_cassettes.py does), every judge and compare exchange caught on its way through
``CLICassette.replay``: the exact prompt sent and the recorded answer. Tokens are counted with
``litellm.encode(model="gpt-4o")``, which in litellm 1.110 is tiktoken's cl100k_base read from the copy
litellm ships (no network: socket connections are refused while counting, and
``LITELLM_LOCAL_MODEL_COST_MAP`` is set). Per version: sessions, notes, memories written active,
and the judge's and the compare prompt's prompt and completion tokens per session and per memory
written active. Beside it the per-note design on the same notes: one prompt per judged note
(``render_prompt`` of that note alone, same version and context), its completion the note's own
verdict from the recorded answer, alone in a ``{"verdicts": [...]}`` object laid out as the answers are.
The answers are as recorded, with the runs of 40+ characters echoing the real notes masked (x), which
changes their token counts a little.

    python benchmarks/bench_judge_cost.py
    python benchmarks/bench_judge_cost.py --graduated [CASSETTE ...]   # default: every one of E2E_CASSETTES
"""

from __future__ import annotations

import importlib.util
import json
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

        from consolidate.store.index.embeddings import tokenizer_path

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

        from consolidate.judges.api import Verdicts

        return json.dumps([{"type": "function", "function": openai_schema(Verdicts).openai_schema}])
    except Exception:
        return None


def count(sessions, count_tokens, *, max_notes=None, max_chars=None, notes_per_call=None):
    """(calls, prompt tokens, output budget, batch sizes) of the batched judge over ``sessions``."""
    from consolidate.judges.api import MAX_TOKENS_CAP, TOKENS_PER_NOTE, render_prompt
    from consolidate.judges.base import JudgeContext
    from consolidate.judges.chain import MAX_BATCH_CHARS, MAX_BATCH_NOTES, NOTES_PER_CALL, Item, make_batches

    calls = tokens = budget = 0
    sizes: list[int] = []
    for slug, notes in sessions.items():
        items = [Item(key=i, content=n["content"], section=n.get("section")) for i, n in enumerate(notes)]
        for batch in make_batches(items, max_notes or MAX_BATCH_NOTES, max_chars or MAX_BATCH_CHARS,
                                  notes_per_call=notes_per_call or NOTES_PER_CALL):
            calls += 1
            tokens += count_tokens(render_prompt([jn for _, jn in batch], JudgeContext(core="", project=slug)))
            budget += min(MAX_TOKENS_CAP, TOKENS_PER_NOTE * len(batch) + 200)
            sizes.append(len(batch))
    return calls, tokens, budget, sizes


def pipeline_runs(sessions) -> tuple[int, int, list[float]]:
    """(judge calls, judged notes, per-run calls per 100 judged notes) of ``run_queue`` over each
    session in its own fresh store, with a scripted judge that drops every note."""
    import tempfile

    from _bench import fill_session

    from consolidate.pipeline.run import run_queue
    from consolidate.store.store import Store
    from consolidate.judges.chain import JudgeChain
    from consolidate.judges.scripted import ScriptedJudge

    calls = judged = 0
    per_run = []
    with tempfile.TemporaryDirectory() as tmp:
        for slug, notes in sessions.items():
            store = Store(Path(tmp) / slug / ".memofs", project="bench")
            fill_session(store, slug, notes)
            [plan] = run_queue(store, chain_factory=lambda: JudgeChain([ScriptedJudge(default={"verdict": "drop", "reason": "bench"})]),
                               time_box=None)
            c = sum(1 for e in plan.events if e["event"] == "judge.call")
            j = sum(1 for e in plan.events if e["event"] in ("note.judged_keep", "note.judged_drop"))
            calls, judged = calls + c, judged + j
            if j:
                per_run.append(100.0 * c / j)
            store.close()
    return calls, judged, per_run


def main() -> int:
    sessions = real_sessions()
    skip_without_notes(sessions)
    from consolidate.rules import secrets
    from consolidate.judges.api import MAX_TOKENS_CAP, TOKENS_PER_NOTE, render_prompt
    from consolidate.judges.base import JudgeContext
    from consolidate.judges.chain import MAX_BATCH_CHARS, MAX_BATCH_NOTES, NOTES_PER_CALL, Item, make_batches

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
    print(f"batching: one call per {NOTES_PER_CALL} notes rounded down, at most {MAX_BATCH_NOTES} notes and"
          f" {MAX_BATCH_CHARS:,} characters a batch, one session per run\n")

    b_calls, b_tokens, b_budget, sizes = count(judged, count_tokens)
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

    from consolidate.judges.injection import instruction_like

    isolated = sum(1 for notes in judged.values() for n in notes if instruction_like(n["content"]))
    print(f"Notes judged alone because they look like an instruction to the judge (judges/injection.py):"
          f" {isolated} of {n_notes:,}.")
    sizes.sort()
    print(f"Batch sizes: median {sizes[len(sizes) // 2]}, smallest {sizes[0]}, largest {sizes[-1]}"
          f" (output budget {TOKENS_PER_NOTE} tokens a verdict + 200, capped at {MAX_TOKENS_CAP}).")
    print("What-if (same notes and template, other bounds of make_batches):")
    for per_call, mn in ((20, 20), (25, 25), (25, 30), (25, 40), (25, 49)):
        c, t, _, sz = count(judged, count_tokens, max_notes=mn, notes_per_call=per_call)
        print(f"    notes_per_call={per_call}, max_notes={mn}: {c * per100:5.2f} calls per 100 notes = 1/{p_calls / c:.1f},"
              f" tokens 1/{p_tokens / t:.1f}, largest batch {max(sz)}")
    calls_ok = b_calls / p_calls <= 1 / 20

    p_calls_run, p_judged, per_run = pipeline_runs(judged)
    per_run.sort()
    print(f"\nThe real pipeline, one run per session (run_queue, scripted judge): {p_calls_run} judge calls for"
          f" {p_judged:,} judged notes = {100.0 * p_calls_run / p_judged:.2f} calls per 100 judged notes;"
          f" per run: median {per_run[len(per_run) // 2]:.2f}, lowest {per_run[0]:.2f}, highest {per_run[-1]:.2f}"
          f" ({sum(1 for r in per_run if r > 4.0)} of {len(per_run)} runs over 4)")
    run_ok = 100.0 * p_calls_run / p_judged <= 4.0

    print(f"\nGOAL judge calls: {b_calls / p_calls:.4f} = 1/{p_calls / b_calls:.1f} of the per-note judge's"
          f" (goal <= 1/20 = 0.0500): {'MET' if calls_ok else 'MISSED'}")
    tokens_ok = b_tokens / p_tokens <= 1 / 3
    print(f"GOAL judge prompt tokens: {b_tokens / p_tokens:.4f} = 1/{p_tokens / b_tokens:.1f} of the per-note judge's"
          f" (goal <= 1/3 = 0.3333): {'MET' if tokens_ok else 'MISSED'}")
    print(f"GOAL judge calls per 100 judged notes in a run: {100.0 * p_calls_run / p_judged:.2f}"
          f" (goal <= 4): {'MET' if run_ok else 'MISSED'}")
    return 0 if calls_ok and tokens_ok and run_ok else 1


#: The end-to-end cassettes replayed by ``--graduated``: name -> (prompt version, ``--sessions`` or None for all 41).
E2E_CASSETTES = {
    "e2e-all-realnotes-judge-v1-capable": ("judge-v1", None),
    "e2e-all-realnotes-judge-v5-capable": ("judge-v5", None),
    "e2e-realnotes-judge-v1-capable": ("judge-v1", 20),
    "e2e-realnotes-judge-v2-capable": ("judge-v2", 20),
    "e2e-realnotes-judge-v5-capable": ("judge-v5", 20),
    "e2e-realnotes-judge-v8-capable": ("judge-v8", 20),
}


def offline_counter(model: str = "gpt-4o"):
    """(name, count function) from ``litellm.encode(model=...)``, loaded with socket connections refused
    (litellm's tokenizer must be one it ships: a download attempt raises OSError here)."""
    import socket

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    real = socket.socket.connect

    def refuse(*_a, **_k):
        raise OSError("no network while loading the tokenizer")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        import litellm
        from litellm.utils import _select_tokenizer

        chosen = _select_tokenizer(model)
        litellm.encode(model=model, text="probe")
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]
    enc = getattr(chosen["tokenizer"], "name", "") or type(chosen["tokenizer"]).__name__
    from importlib.metadata import version

    return (f"litellm {version('litellm')} encode(model={model!r}): {chosen['type']} {enc}, offline",
            lambda t: len(litellm.encode(model=model, text=t)))


def per_note_completion(verdict: dict) -> str:
    """The answer a per-note judge gives for one note: that verdict alone, laid out as the recorded
    batched answers are (``{"verdicts": [...]}``, JSON indented by one space), its id ``n1``."""
    return json.dumps({"verdicts": [{**verdict, "id": "n1"}]}, indent=1, ensure_ascii=False)


def cost_rows(calls: list[dict], sessions: int, notes: int, memories: int) -> dict:
    """Token cost of one run. ``calls``: ``{"kind": "judge"|"compare"|"per-note", "prompt": int,
    "completion": int}`` (tokens) per model call. Returns, for each kind present, ``calls``, ``prompt``,
    ``completion`` (totals) and those per session and per memory (``None`` when ``memories`` is 0),
    besides ``sessions``, ``notes`` and ``memories``."""
    out: dict = {"sessions": sessions, "notes": notes, "memories": memories}
    for kind in dict.fromkeys(c["kind"] for c in calls):
        mine = [c for c in calls if c["kind"] == kind]
        row = {"calls": len(mine), "prompt": sum(c["prompt"] for c in mine),
               "completion": sum(c["completion"] for c in mine)}
        for what in ("calls", "prompt", "completion"):
            row[f"{what}_per_session"] = row[what] / sessions if sessions else None
            row[f"{what}_per_memory"] = row[what] / memories if memories else None
        out[kind] = row
    return out


def replay_e2e(name: str, version: str, sessions: int | None, count_tokens) -> dict:
    """Replay ``cassettes/<name>.yaml``'s end-to-end run in this process; :func:`cost_rows` of it,
    with the per-note design counted on the notes of its judge batches."""
    import contextlib
    import dataclasses
    import io

    from consolidate.judges import cli as cli_judge
    from consolidate.judges import cli_cassette
    from consolidate.judges.prompting import render_prompt

    shared = Path(os.environ.get("CONSOLIDATE_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
    labels = shared / "data" / "labels" / "realnotes-dev-labels.jsonl"
    calls: list[dict] = []
    pending: list = []
    orig_replay, orig_judge = cli_cassette.CLICassette.replay, cli_judge.CLIJudge.judge

    def replay(self, kind, prompt, ver):
        hit = orig_replay(self, kind, prompt, ver)
        answer = str(hit.get("answer") or "")
        calls.append({"kind": kind, "prompt": count_tokens(prompt), "completion": count_tokens(answer)})
        if kind == "judge" and pending:
            batch, context = pending.pop()
            value, _ = cli_judge.parse_output(answer)
            verdicts, _ = cli_judge.extract_verdicts(value)
            by_id = {str(v.get("id")): v for v in verdicts if isinstance(v, dict)}
            for n in batch:
                one = render_prompt([dataclasses.replace(n, id="n1")], context, ver)
                v = by_id.get(n.id, {"id": n.id, "verdict": "drop", "reason": "no verdict recorded"})
                calls.append({"kind": "per-note", "prompt": count_tokens(one),
                              "completion": count_tokens(per_note_completion(v))})
        return hit

    def judge(self, batch, context, timeout):
        pending.append((batch, context))
        return orig_judge(self, batch, context, timeout)

    env = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("CONSOLIDATE_") and k != "CONSOLIDATE_SHARED"}
    os.environ["CONSOLIDATE_CASSETTE"] = str(Path(__file__).resolve().parents[1] / "cassettes" / f"{name}.yaml")
    cli_cassette.CLICassette.replay, cli_judge.CLIJudge.judge = replay, judge  # type: ignore[method-assign]
    try:
        from consolidate.cli.main import main as cli_main

        args = ["eval", "--json", "--end-to-end", "--judge", "cli:template:/nonexistent/capable-model",
                "--prompt-version", version, "--labels", str(labels)]
        if sessions:
            args += ["--sessions", str(sessions)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli_main(args)
        if code:
            raise SystemExit(f"{name}: consolidate eval exited {code}")
    finally:
        cli_cassette.CLICassette.replay, cli_judge.CLIJudge.judge = orig_replay, orig_judge  # type: ignore[method-assign]
        os.environ.pop("CONSOLIDATE_CASSETTE", None)
        os.environ.update(env)
    f = json.loads(out.getvalue())["figures"]
    return cost_rows(calls, f["sessions"], f["notes"], f["written"]["active"]) | {
        "written_any": sum(f["written"].values()), "judge_calls_reported": f["judge_calls"],
        "compare_calls_reported": f["compare_calls"]}


def graduated(names: list[str]) -> int:
    """``--graduated``: the cost table per end-to-end cassette (see the module docstring)."""
    name, count_tokens = offline_counter()
    print(f"tokens counted with {name}\n")
    head = (f"{'cassette':<38}{'version':<10}{'sess':>5}{'notes':>7}{'mem':>5}  {'prompt':<9}{'calls':>7}"
            f"{'prompt/sess':>12}{'compl/sess':>11}{'prompt/mem':>11}{'compl/mem':>10}")
    print(head)
    results = {}
    for cassette in names:
        version, sessions = E2E_CASSETTES[cassette]
        r = replay_e2e(cassette, version, sessions, count_tokens)
        results[cassette] = r
        assert r["judge"]["calls"] == r["judge_calls_reported"], cassette
        assert r.get("compare", {"calls": 0})["calls"] == r["compare_calls_reported"], cassette
        for kind in ("judge", "compare", "per-note"):
            row = r.get(kind)
            if not row:
                continue
            pm = lambda x: "n/a" if x is None else f"{x:,.0f}"  # noqa: E731
            print(f"{cassette:<38}{version:<10}{r['sessions']:>5}{r['notes']:>7}{r['memories']:>5}  {kind:<9}"
                  f"{row['calls']:>7}{row['prompt_per_session']:>12,.0f}{row['completion_per_session']:>11,.0f}"
                  f"{pm(row['prompt_per_memory']):>11}{pm(row['completion_per_memory']):>10}")
        ours = r["judge"]["prompt"] + r["judge"]["completion"] + sum(r.get("compare", {}).get(k, 0) for k in ("prompt", "completion"))
        per = r["per-note"]["prompt"] + r["per-note"]["completion"]
        print(f"{'':<38}ours (judge + compare) {ours:,} tokens, per-note judge {per:,} = {per / ours:.1f}x;"
              f" {r['written_any']} memories written of any status\n", flush=True)
    return 0


if __name__ == "__main__":
    if "--graduated" in sys.argv[1:]:
        picked = [a for a in sys.argv[1:] if not a.startswith("--")] or list(E2E_CASSETTES)
        sys.exit(graduated(picked))
    sys.exit(main())
