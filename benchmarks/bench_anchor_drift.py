"""The drift check of memories anchored to code (issue 17): 1,000 anchored memories on an unchanged
tree, target at most 20 ms.

A fixture project of 250 Python files (8 functions each, about 4 KB) gets 1,000 memories, each
anchored to one function (750) or one whole file (250), recorded through the real
``anchors.find_anchors`` and ``anchors.record`` into a store's manifest.json. Timed side by side,
interleaved, median of ``--runs``:

- ``cached``: ``anchors.check`` on the unchanged tree (size and mtime compared with the cache in
  manifest.json; nothing read or hashed), the path recall, the SessionStart hook and batch take;
- ``rehash``: the same check with the cache emptied first (every file read, parsed and hashed), the
  cost the cache saves;
- ``one edit``: the check after one anchored file changed (one file hashed again), untimed reset.

Run: ``nice python benchmarks/bench_anchor_drift.py [--runs 9]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _bench import interleaved, median, parser, spread  # noqa: E402

FILES = 250
FUNCS = 8
MEMORIES = 1000
TARGET_MS = 20.0


def make_tree(root: Path) -> list[tuple[str, str]]:
    """The fixture project; returns (path, function) pairs to anchor."""
    targets = []
    for i in range(FILES):
        rel = f"pkg{i % 10}/mod{i}.py"
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        body = [f'"""Module {i}."""', "import os", ""]
        for j in range(FUNCS):
            body += ["", f"def func_{i}_{j}(path, retries=3):",
                     f'    """Read {i}/{j} with retries."""',
                     "    for attempt in range(retries):",
                     "        try:",
                     "            with open(path) as f:",
                     f"                return f.read() + '{i * j}'",
                     "        except OSError:",
                     "            continue",
                     "    return None", ""]
        p.write_text("\n".join(body))
        for j in range(FUNCS):
            targets.append((rel, f"func_{i}_{j}"))
    return targets


def main() -> int:
    args = parser(__doc__, runs=9).parse_args()
    from consolidate import Store
    from consolidate.store import anchors

    tmp = Path(tempfile.mkdtemp(prefix="bench-anchor-"))
    root = tmp / "proj"
    targets = make_tree(root)
    store = Store(root / ".memofs", embedding="hash")
    (store.path / "manifest.json").write_text(json.dumps({"layout_version": 1, "embedding": {"id": "hash", "dimension": 384}}))
    anchored = {}
    for n in range(MEMORIES):
        rel, fn = targets[(n * 7) % len(targets)]
        text = f"{fn}() in {rel} retries reads" if n % 4 else f"The reader module {rel} retries every read"
        got = anchors.find_anchors(root, text)
        assert len(got) == 1, (text, got)
        anchored[f"mem-{n:06d}"] = got
    t = time.perf_counter()
    anchors.record(store, anchored)
    record_s = time.perf_counter() - t
    size = (store.path / "manifest.json").stat().st_size
    assert anchors.check(store.path) == {}, "the unchanged tree must show no drift"
    saved = (store.path / "manifest.json").read_text()
    edited = root / targets[0][0]
    original = edited.read_text()
    original_ns = (edited.stat().st_atime_ns, edited.stat().st_mtime_ns)

    def reset(name, _round):
        (store.path / "manifest.json").write_text(saved)
        edited.write_text(original)
        os.utime(edited, ns=original_ns)  # the tree exactly as recorded: same size and mtime
        if name == "rehash":
            data = json.loads(saved)
            data["anchors"]["files"] = {}
            (store.path / "manifest.json").write_text(json.dumps(data))
        if name == "one edit":
            edited.write_text(original.replace("continue", "pass", 1))
            st = edited.stat()
            os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    def run_check():
        anchors.check(store.path)

    times = interleaved({"cached": run_check, "rehash": run_check, "one edit": run_check}, args.runs, setup=reset)
    print(f"drift check, {MEMORIES} anchored memories over {FILES} files ({len(targets)} functions),"
          f" manifest.json {size / 1024:.0f} KB; recording them took {record_s * 1000:.0f} ms")
    for name in ("cached", "rehash", "one edit"):
        print(f"  {name:<9} {spread(times[name])}")
    c, r = median(times["cached"]), median(times["rehash"])
    print(f"  cached vs rehash: {r / c:.1f}x faster with the size+mtime cache")
    verdict = "met" if c * 1000 <= TARGET_MS else "NOT met"
    print(f"goal: at most {TARGET_MS:.0f} ms for {MEMORIES} anchored memories on an unchanged tree:"
          f" median {c * 1000:.1f} ms ({verdict})")
    store.close()
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
