"""File recall hook latency (issue 34, goals 1 and 2): the installed PreToolUse hook against the floor.

1. On stores of 100 and 100,000 memories (written straight into the graph files and the lexical
   index, as a consolidation leaves them: each memory mentions one of 2,000 files, in its text and
   by a ``mentions`` edge; the 100,000 store is cached under /tmp/consolidate-bench-cache), the
   command ``consolidate install-hook claude-code`` writes for PreToolUse, fed a Claude Code ``Read``
   payload (``tool_input.file_path``) on stdin, against ``python -c "import sqlite3, json"``,
   interleaved round by round: medians, p95 and the ratio of the medians. Each call reads a file
   with memories, a different session each round (nothing is held back as already shown).
2. Under load: two CPU-bound processes (``python -c "while True: pass"``) run beside the floor and
   the three installed hooks (SessionEnd of ``install-hook claude-code --harvest``, on a transcript of
   400 entries, its worker waited for untimed; SessionStart; the file recall), p50 and p95 each
   against the floor under the same load.

Goal (issue 34): the file recall hook at most 1.5x the floor at both sizes (medians).

    python benchmarks/bench_file_recall.py [--runs 11] [--sizes 100,100000] [--rebuild] [--skip-load]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import CACHE, PYTHON, check_venv, goal_line, interleaved, median, ms, parser, run_cmd  # noqa: E402
from bench_hook import HARVEST_ENTRIES, wait_for_worker, write_transcript  # noqa: E402

FLOOR = 'python -c "import sqlite3, json"'
FILES = 2000
VERSION = 1  # of the cached store layout: bump to rebuild


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def env() -> dict:
    """The environment of the hook commands: this checkout first on the path, no store override."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_") or k == "CONSOLIDATE_SHARED"}
    out["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return out


def build_project(n: int, project: Path) -> None:
    """A project folder with a store of ``n`` memories at ``project/.memofs``: the graph files,
    the lexical index, and the source files the memories name."""
    from consolidate.store.index.lexical import LexicalIndex, index_path
    from consolidate.store.store import Store

    if project.exists():
        shutil.rmtree(project)
    (project / "src").mkdir(parents=True)
    for j in range(FILES):
        (project / "src" / f"module{j}.py").write_text(f"def f{j}():\n    return {j}\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    store_dir = project / ".memofs"
    Store(store_dir, embedding="hash").close()  # the private folder, its .gitignore and tier
    graph = store_dir / "graph"
    graph.mkdir(parents=True, exist_ok=True)
    records = []
    with open(graph / "nodes.jsonl", "w", encoding="utf-8") as nodes, \
            open(graph / "edges.jsonl", "w", encoding="utf-8") as edges:
        for i in range(n):
            mid = f"mem-{i:08d}"
            f = f"src/module{i % FILES}.py"
            status = "quarantined" if i % 25 == 3 else "active"
            doc = f"{f}: component {i} needs option {i % 89} because of constraint {i % 31}."
            nodes.write(json.dumps({"id": mid, "kind": "memory", "type": "fact", "status": status,
                                    "statement": doc}, sort_keys=True) + "\n")
            edges.write(json.dumps({"source": mid, "target": "entity:" + f, "key": "mentions",
                                    "kind": "mentions"}, sort_keys=True) + "\n")
            records.append({"id": mid, "document": doc, "metadata": {"status": status, "tier": "durable"}})
        for j in range(FILES):
            nodes.write(json.dumps({"id": f"entity:src/module{j}.py", "kind": "entity", "entity_kind": "file",
                                    "name": f"src/module{j}.py"}, sort_keys=True) + "\n")
    idx = LexicalIndex(index_path(store_dir))
    for k in range(0, n, 5000):
        idx.upsert(records[k:k + 5000])
    idx.close()


def cached_project(n: int, tmp: Path, rebuild: bool) -> Path:
    """The project of ``n`` memories: cached under CACHE when n >= 10,000, else built in ``tmp``."""
    folder = CACHE / f"file-recall-{n}" if n >= 10_000 else tmp / f"project-{n}"
    info = folder / "info.json"
    if not rebuild and info.exists() and json.loads(info.read_text()).get("version") == VERSION:
        return folder / "project"
    print(f"building a store of {n:,} memories in {folder} ...", flush=True)
    t = time.time()
    build_project(n, folder / "project")
    info.write_text(json.dumps({"version": VERSION, "memories": n}))
    print(f"  built in {time.time() - t:.1f} s", flush=True)
    return folder / "project"


def installed(project: Path, *extra: str) -> dict[str, list[str]]:
    """``{event: argv}`` of the commands ``consolidate install-hook claude-code *extra`` writes."""
    settings = project / ".claude" / "settings.json"
    if settings.exists():
        settings.unlink()
    subprocess.run([str(Path(PYTHON).parent / "consolidate"), "install-hook", "claude-code", *extra],
                   cwd=project, env=env(), check=True, capture_output=True)
    hooks = json.loads(settings.read_text())["hooks"]
    import shlex

    return {event: shlex.split(groups[0]["hooks"][0]["command"]) for event, groups in hooks.items()}


class Calls:
    """The hook calls of one project, a fresh session id each."""

    def __init__(self, project: Path, commands: dict[str, list[str]], harvest: dict[str, list[str]] | None = None):
        self.project, self.commands, self.harvest, self.n = project, commands, harvest, 0
        self.transcript = write_transcript(project.parent / "transcript.jsonl", HARVEST_ENTRIES)

    def _run(self, argv: list[str], body: dict) -> float:
        t = time.perf_counter()
        p = subprocess.run(argv, input=json.dumps(body).encode(), cwd=self.project, env=env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"hook failed: {argv}\n{p.stderr.decode()[-2000:]}")
        self.last = p.stdout.decode()
        return dt

    def sid(self) -> str:
        self.n += 1
        return f"bench-{os.getpid()}-{self.n}"

    def file_recall(self) -> float:
        j = [k for k in range(100) if k % 25 != 3][(self.n * 7) % 96]  # files with an active memory
        f = self.project / "src" / f"module{j}.py"
        return self._run(self.commands["PreToolUse"], {
            "session_id": self.sid(), "hook_event_name": "PreToolUse", "cwd": str(self.project),
            "transcript_path": str(self.transcript), "tool_name": "Read", "tool_input": {"file_path": str(f)}})

    def session_start(self) -> float:
        return self._run(self.commands["SessionStart"], {
            "session_id": self.sid(), "hook_event_name": "SessionStart", "source": "startup",
            "cwd": str(self.project), "transcript_path": str(self.transcript)})

    def session_end(self) -> float:
        took = self._run(self.harvest["SessionEnd"], {
            "session_id": self.sid(), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit",
            "cwd": str(self.project), "transcript_path": str(self.transcript)})
        wait_for_worker(self.project / ".memofs")  # untimed: the next round starts without it
        return took


def floor() -> float:
    return run_cmd([PYTHON, "-c", "import sqlite3, json"])


def row(name: str, xs: list[float], base: list[float]) -> str:
    return (f"  {name:<52} p50 {ms(median(xs)):>9}  p95 {ms(p95(xs)):>9}   "
            f"{median(xs) / median(base):.2f}x p50, {p95(xs) / p95(base):.2f}x p95 of the floor")


def main() -> int:
    ap = parser(__doc__, 11)
    ap.add_argument("--sizes", default="100,100000")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--skip-load", action="store_true", help="goal 1 only")
    args = ap.parse_args()
    check_venv()
    runs = max(11, args.runs)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-file-recall-"))
    ok = True
    small = None
    for n in [int(s) for s in args.sizes.split(",")]:
        project = cached_project(n, tmp, args.rebuild)
        small = small or project
        calls = Calls(project, installed(project))
        calls.file_recall()
        if "remembered about" not in calls.last:
            raise SystemExit(f"the file recall hook printed no memory: {calls.last!r}")
        res = interleaved({FLOOR: floor, "file recall hook (PreToolUse, Read)": calls.file_recall}, runs, warmup=2)
        print(f"\n{n:,} memories ({runs} interleaved rounds; {' '.join(calls.commands['PreToolUse'])})")
        for name, xs in res.items():
            print(row(name, xs, res[FLOOR]))
        ratio = median(res["file recall hook (PreToolUse, Read)"]) / median(res[FLOOR])
        ok &= goal_line(f"file recall hook at {n:,} memories", ratio, 1.5, what=f"of {FLOOR} (medians)")
    if not args.skip_load and small is not None:
        load = [subprocess.Popen([PYTHON, "-c", "while True: pass"]) for _ in range(2)]
        try:
            calls = Calls(small, installed(small), installed(small, "--harvest", "--judge", "noop",
                                                             "--embedding", "hash"))
            res = interleaved({FLOOR: floor, "SessionEnd --harvest (worker waited, untimed)": calls.session_end,
                               "SessionStart": calls.session_start,
                               "file recall (PreToolUse, Read)": calls.file_recall}, runs, warmup=2)
        finally:
            for p in load:
                p.kill()
                p.wait()
        print(f"\nUnder load: two CPU-bound processes beside them ({runs} interleaved rounds, the small store)")
        for name, xs in res.items():
            print(row(name, xs, res[FLOOR]))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
