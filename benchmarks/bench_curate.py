"""The store curation pass end to end on the validation sessions (issue 31 item 5), with capable-model
answers made by people through judgelab (../shared/tools/judgelab/README.md).

Phases (``DATA`` is outside git, default /work/wt/curatecap-data):

1. ``build``: the 14 validation sessions of the dev-label split (consolidate/evals/split.py) run end
   to end (``consolidate eval --end-to-end --session ID ...``), judge-v1 answers replayed from
   ``cassettes/e2e-all-realnotes-judge-v1-capable.yaml`` through a ``cli:template:/nonexistent`` judge
   as tests/scenarios/test_capable_cassettes.py does, each session's store kept (one store per session, each its
   own project, MiniLM): ``DATA/before/<session>/.memofs``, the pristine "before" stores, never
   changed after. The memories' ``last_confirmed`` is the build day and goes into the curate prompt:
   later phases copy these stores, never rebuild them, or every captured prompt would change.
2. ``capture``: ``consolidate curate`` on a copy (``DATA/capture``) with the judgelab capture judge,
   every group's exact prompt saved to ``DATA/prompts/<sha1-12>.txt``. The capture judge's answer is no
   curate answer, so every group is deferred; an answer the check rejects passes the group on without
   tripping the chain's circuit breaker (consolidate/judges/chain.py ``curate_members``), so every group
   is asked. Checked: prompt files == groups.
3. ``replay --answers DIR``: the same pass on a fresh copy (``DATA/after``) with
   ``cli:template:../shared/tools/judgelab/replay.sh``; a prompt with no answer leaves its group
   deferred and is reported.
4. ``figures``: per store the memories by status, and over the stores the gold keepers active (a
   labeled keep note behind an active memory, its own or one merged into it) and the labeled drops
   active, for ``before`` and, when present, ``after``. Note ids are mapped to the label ids by
   importing each session file into a throwaway session tier, as the end-to-end run did; the before
   figure is checked against the build report's.

    python benchmarks/bench_curate.py build
    python benchmarks/bench_curate.py capture
    python benchmarks/bench_curate.py replay --answers DIR
    python benchmarks/bench_curate.py figures
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CONSOLIDATE_SHARED", REPO.parent / "shared"))
LABELS = SHARED / "data" / "labels" / "realnotes-dev-labels.jsonl"
SESSIONS = SHARED / "data" / "realnotes" / "sessions"
JUDGELAB = SHARED / "tools" / "judgelab"
CASSETTE = REPO / "cassettes" / "e2e-all-realnotes-judge-v1-capable.yaml"
DATA = Path(os.environ.get("CURATECAP_DATA", "/work/wt/curatecap-data"))
PYTHON = sys.executable


def validation_sessions() -> list[str]:
    """The validation session ids of the dev-label split, sorted."""
    from consolidate.evals.split import VALIDATION, split_sessions

    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    part = split_sessions(r["session_id"] for r in rows)
    return sorted(s for s, p in part.items() if p == VALIDATION)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without CONSOLIDATE_* settings (a user's store or judges must not leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def build(data: Path) -> None:
    """Phase 1a: the before stores and the build report."""
    before = data / "before"
    if before.exists():
        sys.exit(f"{before} exists: the before stores are kept pristine, remove it to rebuild")
    data.mkdir(parents=True, exist_ok=True)
    argv = [PYTHON, "-m", "consolidate", "eval", "--json", "--judge", "cli:template:/nonexistent/capable-model",
            "--end-to-end", "--prompt-version", "judge-v1", "--labels", str(LABELS), "--split", "validation",
            "--keep-stores", str(before)]
    for s in validation_sessions():
        argv += ["--session", s]
    done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(CONSOLIDATE_CASSETTE=str(CASSETTE)))
    if done.returncode:
        sys.exit(done.stderr)
    (data / "build-report.json").write_text(done.stdout, encoding="utf-8")
    print(json.dumps(json.loads(done.stdout)["figures"], indent=1))


def curate(data: Path, copy: str, judge: str, **env: str) -> dict[str, dict]:
    """``consolidate curate`` on a fresh copy ``DATA/<copy>`` of every before store; session -> summary."""
    target = data / copy
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data / "before", target, symlinks=True)
    out = {}
    for store in sorted(target.glob("*/.memofs")):
        done = subprocess.run([PYTHON, "-m", "consolidate", "curate", "--store", str(store), "--judge", judge,
                               "--time-box", "3600", "--json"], capture_output=True, text=True, env=clean_env(**env))
        if done.returncode:
            sys.exit(f"{store}: {done.stderr}")
        out[store.parent.name] = json.loads(done.stdout)
    (data / f"{copy}-curate.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


def capture(data: Path) -> None:
    """Phase 1b: every group's prompt saved to DATA/prompts."""
    prompts = data / "prompts"
    got = curate(data, "capture", f"cli:template:{JUDGELAB / 'capture.py'}", JUDGELAB_PROMPTS=str(prompts))
    groups = sum(r["groups"] for r in got.values())
    deferred = sum(len(r["deferred"]) for r in got.values())
    files = sorted(prompts.glob("*.txt"))
    print(f"groups {groups}, deferred {deferred}, prompt files {len(files)}, {sum(f.stat().st_size for f in files)} bytes")
    if not groups == deferred == len(files):
        sys.exit("not every group's prompt was captured (or two groups share a prompt)")


def replay(data: Path, answers: Path) -> None:
    """Phase 2: the same pass with the answers; prints the curate counts over the stores."""
    got = curate(data, "after", f"cli:template:{JUDGELAB / 'replay.sh'}", JUDGELAB_ANSWERS=str(answers))
    totals: dict[str, int] = {}
    for r in got.values():
        for k, v in r["summary"].items():
            if isinstance(v, int) and not isinstance(v, bool):
                totals[k] = totals.get(k, 0) + v
    print(json.dumps(totals, indent=1))
    missing = [d["reason"] for r in got.values() for d in r["deferred"]]
    if missing:
        print(f"{len(missing)} groups deferred, e.g.: {missing[0][:200]}")


def label_ids(session: str) -> dict[int, str]:
    """Note id -> label id of ``session``'s notes, imported into a throwaway session tier as the
    end-to-end run imported them into a fresh store."""
    from consolidate.store.sessions.tier import SessionTier

    with tempfile.TemporaryDirectory() as tmp:
        tier = SessionTier(Path(tmp) / "sessions.sqlite3")
        rows: list[dict] = []
        tier.import_jsonl(SESSIONS / f"{session}.jsonl", session, written=rows)
        tier.close()
    return {r["note_id"]: str((r.get("metadata") or {}).get("id")) for r in rows}


def behind(meta: dict) -> list[int]:
    """The note ids behind a memory: its own provenance's and those of every memory merged into it."""
    prov = json.loads(meta.get("provenance") or "{}")
    return list(prov.get("note_ids") or []) + [n for m in prov.get("merged") or [] for n in m.get("note_ids") or []]


def store_figures(stores: Path, gold: dict[str, tuple[str, str]]) -> dict:
    """Memories by status per store; gold keepers and labeled drops behind an active memory."""
    from consolidate import Store

    per, active_labels = {}, set()
    for path in sorted(stores.glob("*/.memofs")):
        session = path.parent.name
        ids = label_ids(session)
        store = Store(path)
        try:
            got = store.longterm().collection.get(include=["metadatas"])
        finally:
            store.close()
        status: dict[str, int] = {}
        for meta in got["metadatas"]:
            meta = meta or {}
            s = str(meta.get("status", "active"))
            status[s] = status.get(s, 0) + 1
            if s != "active":
                continue
            active_labels |= {ids.get(n) for n in behind(meta)}
        per[session] = {"memories": len(got["metadatas"]), "by_status": dict(sorted(status.items()))}
    keep = [i for i, (v, s) in gold.items() if v == "keep" and s in per]
    drop = [i for i, (v, s) in gold.items() if v == "drop" and s in per]
    return {"stores": per, "memories": sum(p["memories"] for p in per.values()),
            "gold_keepers": len(keep), "gold_keepers_active": sum(1 for i in keep if i in active_labels),
            "labeled_drops_active": sum(1 for i in drop if i in active_labels)}


def figures(data: Path) -> None:
    """Phase 3: before and after side by side."""
    from consolidate.evals.end_to_end import label_rows

    gold = {r["id"]: (r["verdict"], r["session_id"]) for r in label_rows(LABELS)}
    out = {name: store_figures(data / name, gold) for name in ("before", "after") if (data / name).is_dir()}
    report = data / "build-report.json"
    if report.is_file():
        want = json.loads(report.read_text(encoding="utf-8"))["figures"]
        got = out["before"]
        if (got["gold_keepers_active"], got["labeled_drops_active"]) != (want["gold_keepers_active"], want["labeled_drops_active"]):
            print(f"warning: before figures differ from the build report's ({want['gold_keepers_active']}, "
                  f"{want['labeled_drops_active']})")
    print(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=("build", "capture", "replay", "figures"))
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the stores and prompts (outside git)")
    ap.add_argument("--answers", type=Path, help="replay: the folder of <sha1-12>.json answers")
    a = ap.parse_args()
    if not LABELS.is_file():
        sys.exit(f"labels not found at {LABELS} (../shared is absent)")
    if a.phase == "build":
        build(a.data)
    elif a.phase == "capture":
        capture(a.data)
    elif a.phase == "replay":
        if not a.answers:
            sys.exit("replay needs --answers DIR")
        replay(a.data, a.answers)
    else:
        figures(a.data)


if __name__ == "__main__":
    main()
