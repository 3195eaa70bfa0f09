"""Hook lifecycle latency and harvest yield (issue 21): every event the installed hook handles, timed
through the console script (``consolidate hook --harvest --no-worker``) side by side with ``python -c
"import sqlite3, json"``, interleaved, median of the runs; and how many notes each transcript entry
type gives on a realistic Claude Code transcript (tests/support/transcripts.py, repeated to ``--turns``
conversations).

Cases: SessionStart (startup; and startup recovering a killed session with its transcript), the
same with source ``compact``, PreToolUse on a file that memories name and on one none names (a store
of ``--memories`` memories naming files), PreCompact and SessionEnd with the transcript. Goal: every
event within the agent's hook budget (Claude Code's SessionEnd hooks share about 1.5 s); the
PreToolUse hook, which runs before each file read or edit, within 1.5x of the SessionEnd hook.

    python benchmarks/bench_hook_lifecycle.py [--runs 5] [--memories 300] [--turns 20]
"""

from __future__ import annotations

import collections
import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _bench import CONSOLE, PYTHON, check_venv, goal_line, interleaved, median, ms, parser, run_cmd, spread  # noqa: E402


def build_store(store: Path, project: Path, memories: int) -> None:
    """A store of ``memories`` active memories, each naming one of ``memories // 3`` files."""
    from consolidate import Store
    from consolidate.pipeline.run import run_queue

    s = Store(store, embedding="hash")
    for i in range(memories):
        s.sessions.add_note("seed", f"src/module_{i % max(1, memories // 3)}.py: rule {i}, handler h{i}() must"
                            f" validate its input before writing to table t{i}", flag=True, kind="constraint")
    s.sessions.end("seed", "success")
    run_queue(s, judges=["noop"], time_box=None)
    s.close()
    (project / "src").mkdir(exist_ok=True)


def transcript(path: Path, sid: str, project: Path, turns: int) -> list[dict]:
    import transcripts

    entries = []
    for t in range(turns):
        for e in transcripts.build(f"{sid}", str(project)):
            e = dict(e)
            if "uuid" in e:
                e["uuid"] = f"{e['uuid']}-{t}"
            entries.append(e)
    transcripts.write(path, entries)
    return entries


def main() -> int:
    ap = parser(__doc__, 5)
    ap.add_argument("--memories", type=int, default=300, help="memories in the store (default 300)")
    ap.add_argument("--turns", type=int, default=20, help="copies of the test conversation in the transcript (default 20)")
    args = ap.parse_args()
    check_venv()
    from consolidate.pipeline.harvest import harvest_transcript

    tmp = Path(tempfile.mkdtemp(prefix="bench-lifecycle-"))
    project = tmp / "app"
    project.mkdir()
    store = project / ".memofs"
    build_store(store, project, args.memories)
    big = project / "big.jsonl"
    entries = transcript(big, "big", project, args.turns)
    notes = harvest_transcript(str(big))
    kinds = collections.Counter(e.get("type") for e in entries)
    counts = collections.Counter(n["metadata"]["entry_type"] for n in notes)
    print(f"store: {args.memories} memories; transcript: {len(entries)} entries, {big.stat().st_size // 1024} KB"
          f" ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print(f"harvest (the last 400 entries): {len(notes)} notes: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; external {sum(1 for n in notes if n['metadata'].get('external'))},"
          f" secret removed {sum(1 for n in notes if n['metadata'].get('secret_removed'))}")

    ids = itertools.count()

    def hook(event: str, **extra):
        def run():
            sid = f"s{next(ids)}"
            payload = {"session_id": sid, "cwd": str(project), "hook_event_name": event,
                       "transcript_path": str(big), **extra}
            return run_cmd([CONSOLE, "hook", "--harvest", "--no-worker", "--store", str(store)],
                           stdin=json.dumps(payload).encode())
        return run

    def start_recovering():
        # a killed session (SessionStart recorded under a process that is gone, no end) to recover
        dead = f"dead{next(ids)}"
        from consolidate.store.sessions.agents import record_start
        from consolidate.agents.hooks.lifecycle import session_for_start
        from consolidate.store.sessions.tier import SessionTier

        tier = SessionTier(store / "sessions.sqlite3")
        record_start(tier, dead, cwd=str(project), pids=[2 ** 22 + 7])
        session_for_start(tier, dead, {"transcript_path": str(big), "cwd": str(project)})
        tier.close()
        return None

    target = str(project / "src" / "module_1.py")
    cases = {
        'python -c "import sqlite3, json"': lambda: run_cmd([PYTHON, "-c", "import sqlite3, json"]),
        "SessionStart startup": hook("SessionStart", source="startup"),
        "SessionStart startup, recovering a killed session (harvest)": hook("SessionStart", source="startup"),
        "SessionStart compact": hook("SessionStart", source="compact"),
        "PreToolUse Read, a file 3 memories name": hook("PreToolUse", tool_name="Read", tool_input={"file_path": target}),
        "PreToolUse Read, a file no memory names": hook("PreToolUse", tool_name="Read",
                                                         tool_input={"file_path": str(project / "README.md")}),
        "PreCompact (harvest since the last compaction)": hook("PreCompact", trigger="auto"),
        "SessionEnd (queue, harvest)": hook("SessionEnd", reason="prompt_input_exit"),
    }

    def setup(name, _round):
        # untimed: end the sessions earlier rounds opened (all under this process), so that only
        # the recovering case has a session to recover
        from consolidate.store.sessions.agents import open_sessions
        from consolidate.store.sessions.tier import SessionTier

        tier = SessionTier(store / "sessions.sqlite3")
        for s in open_sessions(tier):
            tier.end(s["session_id"], "success", "bench")
        tier.close()
        if "recovering" in name:
            start_recovering()

    res = interleaved(cases, args.runs, warmup=1, setup=setup)
    base = median(res['python -c "import sqlite3, json"'])
    print(f"\n{args.runs} interleaved rounds, wall clock of the hook process (median, min, max):")
    for name, xs in res.items():
        print(f"  {name:<62} {spread(xs)}   {median(xs) / base:.2f}x of import sqlite3, json")
    log = (store / "logs" / "hook.log").read_text()
    recovered = log.count("whose end never fired")
    print(f"  (recovered sessions logged: {recovered})")
    worst = max(median(v) for k, v in res.items() if not k.startswith("python"))
    tool = median(res["PreToolUse Read, a file 3 memories name"])
    end = median(res["SessionEnd (queue, harvest)"])
    print(f"\nslowest event {ms(worst)}; PreToolUse {ms(tool)} = {tool / end:.2f}x of SessionEnd {ms(end)}")
    shutil.rmtree(tmp, ignore_errors=True)
    ok = goal_line("slowest hook event", worst, 1.5, what="(Claude Code's SessionEnd budget)", unit=" s")
    ok = goal_line("PreToolUse vs SessionEnd", tool / end, 1.5, what="of the SessionEnd hook") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
