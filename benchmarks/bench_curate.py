"""The store curation pass end to end on the sessions of the dev-label split (issue 31 items 2 and 5),
with capable-model answers made by people through judgelab (../shared/tools/judgelab/README.md).

Phases (``DATA`` is outside git: ``--data``, default /work/wt/curatecap-data/<split>):

1. ``build --split tuning|validation``: the sessions of that part of the split over both dev label
   sets (consolidate/evals/split.py; 27 tuning, 14 validation) run end to end (``consolidate eval
   --end-to-end``), judge-v1 answers (``--judge-prompt judge-v5``, ``judge-v10`` or ``judge-v11``: theirs) replayed from
   ``cassettes/e2e-all-realnotes-judge-v1-capable.yaml``
   through a ``cli:template:/nonexistent`` judge, one store per session (MiniLM):
   ``DATA/before/<session>/.memofs``, the pristine "before" stores, never changed after. Every memory's
   ``last_confirmed`` (a curate prompt shows it) is then set to PINNED_DAY, so a build on any day makes
   the same prompts and the recorded answers replay.
2. ``capture --prompt-version V``: ``consolidate curate --prompt-version V`` on a copy with the
   judgelab capture judge, every group's exact prompt saved to ``DATA/prompts-V/<sha1-12>.txt``. The
   capture judge's answer is no curate answer, so every group is deferred and every group is asked.
   Checked: prompt files == groups.
3. ``replay --prompt-version V --answers DIR|CASSETTE``: the same pass on a fresh copy
   (``DATA/after-V``) with judgelab's replay judge over an answer folder, or replaying a CLI cassette
   recorded before (``cassettes/curate-V-*-capable.yaml``); ``--record CASSETTE --how TEXT`` records one.
   A prompt with no answer leaves its group deferred and is reported.
4. ``figures``: per store the memories by status, and the gold keepers active (a labeled keep note
   behind an active memory, its own or one merged into it) and the labeled drops active, of both label
   sets and of the first alone (checked against the build report), for ``before`` and every ``after-V``.
5. ``grades --grades F F``: two curators' grades of the before stores (``curator_grades.py export
   --stores DATA/before``; cassettes/curate-grades/) scored against ``before`` and every ``after-V``:
   duplicates and junk among the active memories, contradicting pairs left active, and how the
   curators graded what each pass merged or dropped.

    python benchmarks/bench_curate.py build --split validation
    python benchmarks/bench_curate.py capture --split validation --prompt-version curate-v3
    python benchmarks/bench_curate.py replay --split validation --prompt-version curate-v3 \
        --answers cassettes/curate-v3-validation-capable.yaml
    python benchmarks/bench_curate.py figures --split validation
    python benchmarks/bench_curate.py grades --split validation \
        --grades cassettes/curate-grades/validation-1.json cassettes/curate-grades/validation-2.json
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
#: Both dev label sets: the gold keepers and labeled drops of the figures (the second set's agreed notes).
LABEL_SETS = (LABELS, SHARED / "data" / "labels" / "realnotes-dev-labels-2.jsonl")
#: The ``last_confirmed`` every memory of the before stores is set to after the build (a curate prompt
#: carries it), so a build on another day makes the same prompts: the day curate-v1's answers were made.
PINNED_DAY = "2026-12-02"
SESSIONS = SHARED / "data" / "realnotes" / "sessions"
JUDGELAB = SHARED / "tools" / "judgelab"
#: The end-to-end judge cassette of a judge prompt version (both cover all 41 real-notes sessions).
JUDGE_CASSETTES = {v: REPO / "cassettes" / f"e2e-all-realnotes-{v}-capable.yaml" for v in ("judge-v1", "judge-v5", "judge-v10", "judge-v11")}
DATA = Path(os.environ.get("CURATECAP_DATA", "/work/wt/curatecap-data"))
PYTHON = sys.executable


def label_rows() -> list[dict]:
    """The rows of both label sets with an agreed verdict (keep or drop): ``id``, ``session_id``, ``verdict``."""
    rows = []
    for path in LABEL_SETS:
        if path.is_file():
            rows += [r for r in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
                     if r.get("verdict") in ("keep", "drop") and r.get("session_id")]
    return rows


def part_sessions(part: str) -> list[str]:
    """The session ids of ``part`` (tuning or validation) of the dev-label split over both label
    sets (consolidate/evals/split.py, the split ``eval --split`` reports), sorted."""
    from consolidate.evals.split import split_sessions

    split = split_sessions(r["session_id"] for r in label_rows())
    return sorted(s for s, p in split.items() if p == part)


def pin_day(before: Path) -> int:
    """Set every memory's ``last_confirmed`` of the stores under ``before`` to PINNED_DAY; how many."""
    from consolidate import Store

    n = 0
    for path in sorted(before.glob("*/.memofs")):
        store = Store(path)
        try:
            col = store.longterm().collection
            got = col.get(include=["metadatas"])
            if got["ids"]:
                metas = [dict(m or {}, last_confirmed=PINNED_DAY) for m in got["metadatas"]]
                col.update(ids=got["ids"], metadatas=metas)
                n += len(got["ids"])
        finally:
            store.close()
    return n


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without CONSOLIDATE_* settings (a user's store or judges must not leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def build(data: Path, part: str, judge: str = "judge-v1") -> None:
    """Phase 1a: the before stores of the sessions of ``part``, written by judge prompt ``judge``
    (a key of JUDGE_CASSETTES), and the build report."""
    before = data / "before"
    if before.exists():
        sys.exit(f"{before} exists: the before stores are kept pristine, remove it to rebuild")
    data.mkdir(parents=True, exist_ok=True)
    argv = [PYTHON, "-m", "consolidate", "eval", "--json", "--judge", "cli:template:/nonexistent/capable-model",
            "--end-to-end", "--prompt-version", judge, "--labels", str(LABELS), "--split", part,
            "--keep-stores", str(before)]
    for s in part_sessions(part):
        argv += ["--session", s]
    done = subprocess.run(argv, capture_output=True, text=True, env=clean_env(CONSOLIDATE_CASSETTE=str(JUDGE_CASSETTES[judge])))
    if done.returncode:
        sys.exit(done.stderr)
    (data / "build-report.json").write_text(done.stdout, encoding="utf-8")
    print(f"{pin_day(before)} memories confirmed {PINNED_DAY}")
    print(json.dumps(json.loads(done.stdout)["figures"], indent=1))


def curate(data: Path, copy: str, judge: str, version: str, **env: str) -> dict[str, dict]:
    """``consolidate curate --prompt-version version`` on a fresh copy ``DATA/<copy>`` of every
    before store; session -> summary."""
    target = data / copy
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data / "before", target, symlinks=True)
    out = {}
    for store in sorted(target.glob("*/.memofs")):
        done = subprocess.run([PYTHON, "-m", "consolidate", "curate", "--store", str(store), "--judge", judge,
                               "--time-box", "3600", "--prompt-version", version, "--json"], capture_output=True, text=True, env=clean_env(**env))
        if done.returncode not in (0, 75):  # 75: no group answered (every group deferred, as capture makes them)
            sys.exit(f"{store}: {done.stderr}")
        out[store.parent.name] = json.loads(done.stdout)
    (data / f"{copy}-curate.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


def capture(data: Path, version: str) -> None:
    """Phase 1b: every group's prompt of ``version`` saved to DATA/prompts-<version>."""
    prompts = data / f"prompts-{version}"
    got = curate(data, f"capture-{version}", f"cli:template:{JUDGELAB / 'capture.py'}", version,
                 JUDGELAB_PROMPTS=str(prompts))
    groups = sum(r["groups"] for r in got.values())
    deferred = sum(len(r["deferred"]) for r in got.values())
    files = sorted(prompts.glob("*.txt"))
    print(f"groups {groups}, deferred {deferred}, prompt files {len(files)}, {sum(f.stat().st_size for f in files)} bytes")
    if not groups == deferred == len(files):
        sys.exit("not every group's prompt was captured (or two groups share a prompt)")


def replay(data: Path, version: str, answers: Path, record: Path | None = None, how: str = "") -> None:
    """Phase 2: the same pass with the answers into DATA/after-<version>; prints the curate counts.
    With ``record``, every exchange is also written to that CLI cassette (consolidate/judges/
    cli_cassette.py; answers that echo ../shared/data/realnotes masked), saying ``how`` it was made."""
    extra = {}
    if record:
        extra = {"CONSOLIDATE_RECORD": "1", "CONSOLIDATE_CASSETTE": str(record.resolve()),
                 "CONSOLIDATE_CASSETTE_MODEL": "capable model answered via judgelab helpers",
                 "CONSOLIDATE_CASSETTE_HOW": how, "CONSOLIDATE_CASSETTE_SCRUB": str(SHARED / "data" / "realnotes")}
    if answers.suffix == ".yaml":  # a CLI cassette recorded before: replayed, no CLI started
        got = curate(data, f"after-{version}", "cli:template:/nonexistent/capable-model", version,
                     CONSOLIDATE_CASSETTE=str(answers.resolve()))
    else:
        got = curate(data, f"after-{version}", f"cli:template:{JUDGELAB / 'replay.sh'}", version,
                     JUDGELAB_ANSWERS=str(answers), **extra)
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
    """Phase 3, printed: see :func:`gold_figures`."""
    print(json.dumps(gold_figures(data), indent=1))


def gold_figures(data: Path) -> dict:
    """The before stores and every DATA/after-<version> side by side, the gold keepers of label set
    1 alone (as the build report) and of both sets; warns when the before figures differ from the
    build report's."""
    rows = label_rows()
    set1 = {json.loads(line)["id"] for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()}
    gold = {r["id"]: (r["verdict"], r["session_id"]) for r in rows}
    names = ["before"] + sorted(p.name for p in data.glob("after-*") if p.is_dir())
    out = {}
    for name in names:
        both = store_figures(data / name, gold)
        one = store_figures(data / name, {i: g for i, g in gold.items() if i in set1})
        both["label_set_1"] = {k: one[k] for k in ("gold_keepers", "gold_keepers_active", "labeled_drops_active")}
        out[name] = both
    report = data / "build-report.json"
    if report.is_file():
        want = json.loads(report.read_text(encoding="utf-8"))["figures"]
        got = out["before"]["label_set_1"]
        if (got["gold_keepers_active"], got["labeled_drops_active"]) != (want["gold_keepers_active"], want["labeled_drops_active"]):
            print(f"warning: before figures differ from the build report's ({want['gold_keepers_active']}, "
                  f"{want['labeled_drops_active']})")
    return out


def grades(data: Path, files: list[Path]) -> None:
    """Phase 4, printed: see :func:`grade_figures`."""
    print(json.dumps(grade_figures(data, files), indent=1))


def grade_figures(data: Path, files: list[Path]) -> dict:
    """Phase 4: the curators' grades of the before stores (made on ``curator_grades.py export
    --stores DATA/before``, blind to every curation pass) scored against the before stores and each
    DATA/after-<version>: a curation pass changes which memories are active (an archived memory
    leaves the collection), never their text, so one grading scores every pass: the before export's
    key with each memory's status in the after stores (``archived`` when it left)."""
    from consolidate.evals.curation import export_stores, read_stores, score_grades

    names = ["before"] + sorted(p.name for p in data.glob("after-*") if p.is_dir())
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        export_stores(data / "before", Path(tmp) / "before.md")
        key = json.loads((Path(tmp) / "before.md.key.json").read_text(encoding="utf-8"))
        for name in names:
            status = {(m["store"], m["memory_id"]): m["status"] for m in read_stores(data / name)}
            now = {i: dict(v, status=status.get((v["store"], v["memory_id"]), "archived")) for i, v in key.items()}
            key_file = Path(tmp) / f"{name}.key.json"
            key_file.write_text(json.dumps(now), encoding="utf-8")
            r = score_grades(key_file, list(files))
            out[name] = {"curators": [{"active": c["active"]["graded"], "duplicates": c["active"]["duplicates"],
                                       "duplicate_share": c["active"]["duplicate_share"], "junk": c["active"]["junk"],
                                       "junk_share_of_the_rest": c["active"]["junk_share_of_the_rest"],
                                       "unresolved_contradictions": c["unresolved_contradictions"]}
                                      for c in r["curators"]], "agreement": r["agreement"]}
            if name != "before":
                out[name]["proposals"] = _proposal_grades(data / f"{name}-curate.json", key, files)
    return out


def _proposal_grades(summary: Path, key: dict, files: list[Path]) -> dict:
    """How the curators graded what a pass changed: per curator, of its merges those whose two
    memories the curator graded duplicates of each other (the others fold away a memory the curator
    read as saying something of its own), and of its drops those the curator graded junk."""
    opaque = {(v["store"], v["memory_id"]): i for i, v in key.items()}
    graded = [{g["id"]: g for g in json.loads(Path(f).read_text(encoding="utf-8"))["memories"]} for f in files]
    passes = json.loads(summary.read_text(encoding="utf-8"))
    merges = [(opaque[(s, p["memory_id"])], opaque[(s, p["into"])]) for s, r in passes.items()
              for p in r["proposals"] if p["action"] == "merge" and p["outcome"] == "applied"]
    drops = [opaque[(s, p["memory_id"])] for s, r in passes.items()
             for p in r["proposals"] if p["action"] == "drop" and p["outcome"] == "applied"]

    def twins(g: dict, a: str, b: str) -> bool:
        return any(g.get(x, {}).get("grade") == "duplicate" and g[x].get("duplicate_of") == y for x, y in ((a, b), (b, a)))

    return {"merges": len(merges), "merges_graded_duplicate": [sum(twins(g, a, b) for a, b in merges) for g in graded],
            "drops": len(drops), "drops_graded_junk": [sum(g.get(d, {}).get("grade") == "junk" for d in drops)
                                                       for g in graded]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=("build", "capture", "replay", "figures", "grades"))
    ap.add_argument("--split", choices=("tuning", "validation"), default="validation",
                    help="which part of the dev-label split's sessions (default validation)")
    ap.add_argument("--data", type=Path, help="folder of the stores and prompts (outside git; default DATA/<split>)")
    ap.add_argument("--prompt-version", default="curate-v3", help="capture, replay: the curate prompt version")
    ap.add_argument("--judge-prompt", choices=sorted(JUDGE_CASSETTES), default="judge-v1",
                    help="build: the judge prompt whose capable end-to-end answers write the stores")
    ap.add_argument("--answers", type=Path, help="replay: the folder of <sha1-12>.json answers, or a CLI cassette"
                                                 " (cassettes/curate-*-capable.yaml) recorded from one")
    ap.add_argument("--grades", type=Path, nargs="+", help="grades: the curators' grade files of the before stores")
    ap.add_argument("--record", type=Path, help="replay: also record the exchanges into this CLI cassette")
    ap.add_argument("--how", default="", help="replay --record: how the answers were made (kept in the cassette)")
    a = ap.parse_args()
    if not LABELS.is_file():
        sys.exit(f"labels not found at {LABELS} (../shared is absent)")
    data = a.data or DATA / a.split
    if a.phase == "build":
        build(data, a.split, a.judge_prompt)
    elif a.phase == "capture":
        capture(data, a.prompt_version)
    elif a.phase == "replay":
        if not a.answers:
            sys.exit("replay needs --answers DIR")
        replay(data, a.prompt_version, a.answers, a.record, a.how)
    elif a.phase == "grades":
        if not a.grades:
            sys.exit("grades needs --grades FILE [FILE ...]")
        grades(data, a.grades)
    else:
        figures(data)


if __name__ == "__main__":
    main()
