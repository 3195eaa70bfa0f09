"""Team memory on a Chroma server (issue 16): push and pull latency, and SessionStart and run latency in
team mode beside local mode, measured side by side against a real ``chroma run`` on 127.0.0.1.

Stores: L (local only), A and B (two machines of one team, each its own folder), each holding the
same ``--memories`` memories (default 200; hash embedding unless ``--embedding minilm``). Cases:

- SessionStart: ``consolidate hook`` on a Claude Code SessionStart payload (a new process, as an agent
  CLI runs it): L; B (a fresh pull, nothing new); B after A pushed ``--per-run`` new memories; and D, a
  team store whose server is down (the last pulled copy, said in the header).
- push: one applied run's outbox entry (``--per-run`` memories, their edges and events), timed in
  process (``team_sync.push``); pull: B taking those changes (``team_sync.pull``), and a pull with
  nothing new.
- run: ``consolidate run`` on a session of ``--per-run`` flagged notes: L against A (pull, apply,
  push).

    python benchmarks/bench_team.py [--runs 5] [--memories 200] [--per-run 5] [--embedding hash]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _bench import PYTHON, check_venv, interleaved, median, ms, parser, run_cmd, spread  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_chroma(folder: Path) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = free_port()
    log = open(folder / "chroma.log", "wb")
    proc = subprocess.Popen([exe, "run", "--path", str(folder / "server"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.1)
    raise SystemExit("chroma run did not answer")


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}


def cli(*args: str) -> str:
    out = subprocess.run([PYTHON, "-m", "consolidate", *args], capture_output=True, text=True, env=env())
    if out.returncode not in (0, 75):
        raise SystemExit(f"consolidate {' '.join(args)} failed: {out.stderr[-1500:]}")
    return out.stdout


def statement(tag: str, i: int) -> str:
    return f"Service {tag}-{i} listens on port {2000 + i} and logs to /var/log/{tag}-{i}.log"


def seed(store: Path, n: int, tag: str, embedding: str) -> None:
    from consolidate import Store

    s = Store(store, embedding=embedding)
    for i in range(n):
        s.sessions.add_note(f"seed-{tag}", statement(tag, i), flag=True, kind="fact")
    s.sessions.end(f"seed-{tag}", "success")
    s.close()
    cli("run", "--store", str(store), "--embedding", embedding, "--judge", "noop")


def main() -> None:
    ap = parser(__doc__, 5)
    ap.add_argument("--memories", type=int, default=200, help="memories in each store (default 200)")
    ap.add_argument("--per-run", type=int, default=5, help="memories one run writes and pushes (default 5)")
    ap.add_argument("--embedding", default="hash", help="hash (default) or minilm")
    args = ap.parse_args()
    check_venv()
    tmp = Path(tempfile.mkdtemp(prefix="bench-team-"))
    proc, url = start_chroma(tmp)
    try:
        run(args, tmp, url)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, tmp: Path, url: str) -> None:
    from consolidate import Store
    from consolidate.pipeline.run import run_session
    from consolidate.team.sync import pull, push

    L, A, B, D = (tmp / name / ".memofs" for name in "LABD")
    for store in (A, B, D):
        cli("team", "init", "--store", str(store), "--chroma-url", url, "--project", "bench", "--embedding", args.embedding)
    seed(L, args.memories, "seed", args.embedding)
    seed(A, args.memories, "seed", args.embedding)  # pushed by its run
    cli("sync", "--store", str(B))
    cli("sync", "--store", str(D))
    # D's server is gone: its team.json points at a closed port
    cfg = json.loads((D / "team.json").read_text())
    cfg["url"] = f"http://127.0.0.1:{free_port()}"
    (D / "team.json").write_text(json.dumps(cfg))
    print(f"stores of {Store(A).longterm().count()} memories ({args.embedding}); team server {url}; "
          f"{args.runs} rounds, medians")

    def payload(sid):
        return json.dumps({"session_id": sid, "hook_event_name": "SessionStart", "cwd": str(tmp)}).encode()

    counter = iter(range(10 ** 6))
    def hook(store):
        return run_cmd([PYTHON, "-m", "consolidate", "hook", "--store", str(store)],
                       stdin=payload(f"s{next(counter)}"), env=env())

    # push and pull: A applies a run (untimed), then its push and B's pull are timed
    a, b = Store(A), Store(B)
    timings: dict[str, list[float]] = {"push": [], "pull (new)": [], "pull (nothing new)": [], "SessionStart team (new)": []}
    for r in range(2 * args.runs + 2):
        sid = f"bench-{r}"
        for i in range(args.per_run):
            a.sessions.add_note(sid, statement(f"r{r}", i), flag=True, kind="fact")
        a.sessions.end(sid, "success")
        run_session(a, sid, judges=["noop"])
        t = time.perf_counter()
        pushed = push(a)
        dt_push = time.perf_counter() - t
        assert pushed["pushed"], pushed
        if r % 2 == 0:
            t = time.perf_counter()
            pulled = pull(b)
            dt_pull = time.perf_counter() - t
            assert pulled["ok"] and pulled["memories"] == args.per_run, pulled
            t = time.perf_counter()
            again = pull(b)
            dt_none = time.perf_counter() - t
            assert again["ok"] and again["memories"] == 0, again
            if r:
                timings["pull (new)"].append(dt_pull)
                timings["pull (nothing new)"].append(dt_none)
        else:
            timings["SessionStart team (new)"].append(hook(B))  # B's SessionStart pulls A's new run
        if r:
            timings["push"].append(dt_push)

    starts = interleaved({"SessionStart local": lambda: hook(L), "SessionStart team (fresh, nothing new)": lambda: hook(B),
                          "SessionStart team (server down)": lambda: hook(D)}, args.runs)
    n = iter(range(10 ** 6))

    def one_run(store: Path):
        sid = f"run-{next(n)}"
        s = Store(store)
        for i in range(args.per_run):
            s.sessions.add_note(sid, statement(sid, i), flag=True, kind="fact")
        s.sessions.end(sid, "success")
        s.close()
        return run_cmd([PYTHON, "-m", "consolidate", "run", "--store", str(store), "--judge", "noop"], env=env(),
                       check=False)

    runs = interleaved({"run local": lambda: one_run(L), "run team (pull, apply, push)": lambda: one_run(A)}, args.runs)
    local_start = median(starts["SessionStart local"])
    local_run = median(runs["run local"])
    print(f"{'case':44} {'median':>10}  {'vs local':>8}  spread")
    for name, xs in list(timings.items()) + list(starts.items()) + list(runs.items()):
        base = local_start if name.startswith("SessionStart") else local_run if name.startswith("run") else None
        ratio = f"{median(xs) / base:.2f}x" if base else ""
        print(f"{name:44} {ms(median(xs)):>10}  {ratio:>8}  {spread(xs)}")
    shown = subprocess.run([PYTHON, "-m", "consolidate", "hook", "--store", str(D)], input=payload("last"),
                           capture_output=True, env=env()).stdout.decode()
    print("server-down header:", next((line for line in shown.splitlines() if line.startswith("(team memory")), "-"))


if __name__ == "__main__":
    main()
