"""Session-end hook with ``--harvest`` on transcripts of growing size (issue 15, seam 2): wall time
and peak memory (max RSS) of ``consolidate hook --harvest --no-worker`` on a Claude Code SessionEnd
payload, beside a reference that reads the whole transcript to keep its last 400 lines (what the
hook did before), side by side, interleaved, median of the runs.

Goal: the hook's time and peak memory on the largest transcript are at most 1.5 times those on the
smallest (bounded work: a fixed byte ceiling read from the end), while the reference grows with the
file. The transcripts are generated in a temporary folder (about 2 KB per entry) and deleted after.

    python benchmarks/bench_harvest.py [--runs 5] [--sizes 10,100,600]
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
from _bench import CONSOLE, check_venv, goal_line, median, parser  # noqa: E402

REFERENCE = "import sys; lines = open(sys.argv[1], 'rb').readlines()[-400:]"


def generate(path: Path, megabytes: int) -> None:
    filler = "x" * 1800
    entries = [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Looked at the logs " + filler}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "is_error": False, "content": filler}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "is_error": True, "content": "Error: " + filler[:300]}]}},
    ]
    block = "".join(json.dumps({**e, "uuid": f"{i}-{j}"}) + "\n" for i in range(300) for j, e in enumerate(entries))
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(max(1, megabytes * 1024 * 1024 // len(block))):
            f.write(block)


def measure(argv: list[str], stdin: bytes | None, env: dict) -> tuple[float, int]:
    """(wall seconds, max RSS in KB) of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    if stdin is not None:
        p.stdin.write(stdin)
    p.stdin.close()
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {argv}")
    return dt, usage.ru_maxrss


def main() -> None:
    ap = parser(__doc__, runs=5)
    ap.add_argument("--sizes", default="10,100,600", help="transcript sizes in MB, comma-separated")
    args = ap.parse_args()
    check_venv()
    sizes = [int(x) for x in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-harvest-"))
    env = {**os.environ, "CONSOLIDATE_STORE": str(tmp / ".memofs")}
    rows = {}
    try:
        for mb in sizes:
            path = tmp / f"t{mb}.jsonl"
            generate(path, mb)
            hook, ref = {"t": [], "m": []}, {"t": [], "m": []}
            for r in range(args.runs + 1):  # one warm-up round
                payload = json.dumps({"session_id": f"s{mb}-{r}", "transcript_path": str(path), "cwd": str(tmp),
                                      "hook_event_name": "SessionEnd", "reason": "other"}).encode()
                cases = [("hook", [CONSOLE, "hook", "--harvest", "--no-worker"], payload, hook),
                         ("ref", [sys.executable, "-c", REFERENCE, str(path)], None, ref)]
                for _name, argv, stdin, acc in (cases if r % 2 else cases[::-1]):
                    dt, rss = measure(argv, stdin, env)
                    if r:
                        acc["t"].append(dt)
                        acc["m"].append(rss)
            rows[mb] = (path.stat().st_size, hook, ref)
            path.unlink()
            print(f"{mb:>5} MB: hook --harvest {median(hook['t']) * 1000:7.1f} ms, {median(hook['m']) / 1024:6.1f} MB RSS"
                  f"   | whole-file read {median(ref['t']) * 1000:7.1f} ms, {median(ref['m']) / 1024:7.1f} MB RSS",
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    small, large = rows[sizes[0]], rows[sizes[-1]]
    t_ratio = median(large[1]["t"]) / median(small[1]["t"])
    m_ratio = median(large[1]["m"]) / median(small[1]["m"])
    ref_t = median(large[2]["t"]) / median(small[2]["t"])
    ref_m = median(large[2]["m"]) / median(small[2]["m"])
    print(f"ratio {sizes[-1]} MB / {sizes[0]} MB: hook time {t_ratio:.2f}x, hook memory {m_ratio:.2f}x"
          f"   | whole-file read time {ref_t:.2f}x, memory {ref_m:.2f}x")
    goal_line("harvest time bounded", t_ratio, 1.5, what=f"hook time at {sizes[-1]} MB / at {sizes[0]} MB")
    goal_line("harvest memory bounded", m_ratio, 1.5, what=f"hook peak RSS at {sizes[-1]} MB / at {sizes[0]} MB")


if __name__ == "__main__":
    main()
