"""End-to-end measure of a judge (``consolidate eval --end-to-end``): what a user gets, not what the
judge says.

Each labeled session runs alone through the whole pipeline (count, purge, secret gate, flag-promote,
judge, write policy, contradiction check, provenance, apply) into a throwaway store of its own (MiniLM
embedding, project named after the session), and every labeled note is scored by its note id
(``id`` of the label file, kept as note metadata on import) from what the run decided:

- ``active``: written, durable, active: shown by default recall after one session;
- ``quarantined`` / ``disputed``: written, not shown by default recall;
- ``transient``: kept by the judge, made transient by the write policy (never indexed);
- ``rejected``: kept by the judge, rejected by the write policy or the contradiction check;
- ``duplicate``: kept, the same as a memory already stored (which it re-confirms); a keeper folded into
  another keeper of the same run lives on in that keeper's memory and takes its status (counted
  apart as ``gold_keepers_active_folded``);
- ``dropped``: dropped by the judge; ``purged``: removed before the judge (task and status lines);
  ``blocked``: held secret material; ``unjudged``: no judge answered (the note waits).

Figures: the share of gold keepers active (goal: at least 80 %), and the share of active memories
from labeled notes that come from labeled drops (goal: at most 5 %); besides, for every session's run,
how many notes, judge keeps, and written memories by status, and the write policy's and contradiction
check's reasons for every keep it did not write active.

The label file is the one ``consolidate eval`` reads, with a ``session_id`` on every line; the sessions
are ``<sessions dir>/<session_id>.jsonl`` (../shared/data/realnotes/sessions beside
../shared/data/labels by default). ``sessions`` picks a deterministic subset: the N labeled sessions
with the fewest notes (ties by id), or the ids given.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consolidate.core.errors import BadInput
from consolidate.core.vocab import ACTIVE, DISPUTED, QUARANTINED
from consolidate.evals.judges import read_label_file
from consolidate.evals.policy import fold_specifics
from consolidate.evals.split import PARTS, SEED, split_sessions
from consolidate import Store
from consolidate.store.resolve import in_folder
from consolidate.pipeline.run import run_queue

OUTCOMES = (ACTIVE, QUARANTINED, DISPUTED, "transient", "rejected", "duplicate", "dropped", "purged",
            "blocked", "unjudged")
#: The outcomes that wrote a memory (durable by status, or transient).
WRITTEN = (ACTIVE, QUARANTINED, DISPUTED, "transient")


def default_sessions_dir(labels: Path) -> Path:
    """``<labels dir>/../realnotes/sessions`` (the layout of ../shared/data)."""
    return Path(labels).resolve().parent.parent / "realnotes" / "sessions"


def _paths(labels: Any) -> list[Path]:
    """One label file or several, as a list of paths."""
    return [Path(labels)] if isinstance(labels, (str, Path)) else [Path(p) for p in labels]


def label_rows(labels: Path | list[Path]) -> list[dict[str, Any]]:
    """The labeled notes (``id``, ``session_id``, ``verdict``, ``type``) of one label file or of several
    (both dev sets, say), read by consolidate/evals/judges.py's :func:`read_label_file`, the one reader
    of label files: a two-annotator file's disagreements (null ``verdict``, ``agree`` false) are left
    out. Raises BadInput when a labeled note has no ``session_id``, when two files hold the same id,
    or as :func:`read_label_file` does."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    paths = _paths(labels)
    for i, path in enumerate(paths):
        if path.resolve() in {p.resolve() for p in paths[:i]}:
            raise BadInput(f"label file {path} is given twice", path=str(path))
        for n in read_label_file(path).notes:
            if not n.session_id:
                raise BadInput(f"{path}: note {n.id!r} has no `session_id`: --end-to-end needs the session of"
                               " every labeled note", path=str(path))
            if n.id in seen:
                raise BadInput(f"{path}: note id {n.id!r} is also in {seen[n.id]}: the label files must not share"
                               " an id", path=str(path))
            seen[n.id] = str(path)
            rows.append({"id": n.id, "session_id": n.session_id, "verdict": n.verdict, "type": n.type})
    return rows


def pick_sessions(rows: list[dict[str, Any]], sessions_dir: Path, sessions: int | list[str] | None) -> list[str]:
    """The labeled sessions to run: all (sorted by id), the ``sessions`` ids given, or the N with the
    fewest notes (ties by id). BadInput for an id with no labeled note or no session file, or one
    that is no plain file name (``../x``, ``a/b``: it would name a file outside ``sessions_dir``)."""
    labeled = sorted({r["session_id"] for r in rows})
    outside = [s for s in labeled if not s or Path(s).name != s or s in (".", "..") or "\\" in s]
    if outside:
        raise BadInput(f"session id {outside[0]!r} of the labels is not a file name in {sessions_dir}:"
                       " a session id names its file <id>.jsonl there")
    missing = [s for s in labeled if not (sessions_dir / f"{s}.jsonl").is_file()]
    if missing:
        raise BadInput(f"no session file for {', '.join(missing[:5])} in {sessions_dir}")
    if sessions is None:
        return labeled
    if isinstance(sessions, int):
        size = {s: sum(1 for line in (sessions_dir / f"{s}.jsonl").open(encoding="utf-8") if line.strip())
                for s in labeled}
        return sorted(sorted(labeled, key=lambda s: (size[s], s))[:sessions])
    unknown = [s for s in sessions if s not in labeled]
    if unknown:
        raise BadInput(f"session {unknown[0]!r} has no labeled note in the label file")
    return sorted(set(sessions))


@dataclass
class SessionResult:
    """One session's run: ``notes`` imported, ``keeps`` (judge keep verdicts), ``written`` memories by
    status (``active``, ``quarantined``, ``disputed``, ``transient``), ``not_written`` reasons of the
    keeps that were not written (reason -> count), ``outcomes``: labeled note id -> outcome (a keeper
    folded into another keeper of the run takes the status of the memory it lives on in),
    ``judge_calls`` / ``compare_calls``, ``seconds``, ``folded``: the labeled note ids whose outcome
    is that of the memory they were folded into."""

    session_id: str
    notes: int
    keeps: int
    written: dict[str, int]
    not_written: dict[str, int]
    outcomes: dict[str, str]
    judge_calls: int
    compare_calls: int
    seconds: float
    run_outcome: str = "success"
    folded: list[str] = field(default_factory=list)


@dataclass
class EndToEndReport:
    """What :func:`evaluate_end_to_end` measured (see the module docstring)."""

    labels: str
    sessions: list[SessionResult]
    gold: dict[str, str]
    judges: list[str]
    subset: str = "all labeled sessions"
    extra: dict[str, Any] = field(default_factory=dict)
    #: Session id -> its part of the tuning / validation split ("tuning" or "validation").
    parts: dict[str, str] = field(default_factory=dict)
    #: The parts the report shows (``eval --split``: both, or one of them).
    shown_parts: tuple[str, ...] = PARTS

    def outcome_counts(self, verdict: str) -> dict[str, int]:
        """Outcome -> count over the labeled notes with ``verdict`` (keep or drop)."""
        counts = {o: 0 for o in OUTCOMES}
        for s in self.sessions:
            for nid, o in s.outcomes.items():
                if self.gold.get(nid) == verdict:
                    counts[o] = counts.get(o, 0) + 1
        return counts

    def part(self, name: str) -> "EndToEndReport":
        """The same report over the sessions of one part of the split (``tuning`` or ``validation``)."""
        return EndToEndReport(self.labels, [s for s in self.sessions if self.parts.get(s.session_id) == name],
                              self.gold, self.judges, f"the {name} part", parts=self.parts)

    def split_figures(self) -> dict[str, Any]:
        """Per part of the split: its session ids and its :meth:`figures` (the ``split`` of the report)."""
        return {"seed": SEED, **{name: {"session_ids": [s.session_id for s in self.sessions
                                                         if self.parts.get(s.session_id) == name],
                                         "figures": self.part(name).figures()} for name in self.shown_parts}}

    def figures(self) -> dict[str, Any]:
        """The headline figures: gold keepers active (share), labeled drops among the active memories
        that come from labeled notes (share), and the write policy's acceptance of the judge's keeps."""
        keep, drop = self.outcome_counts("keep"), self.outcome_counts("drop")
        gold_keepers = sum(keep.values())
        active_labeled = keep["active"] + drop["active"]
        keeps = sum(s.keeps for s in self.sessions)
        written = {k: sum(s.written.get(k, 0) for s in self.sessions) for k in WRITTEN}
        folded = sum(n for s in self.sessions for why, n in s.not_written.items() if why.startswith("duplicate:"))
        return {
            "sessions": len(self.sessions), "notes": sum(s.notes for s in self.sessions),
            "labeled_notes": gold_keepers + sum(drop.values()), "gold_keepers": gold_keepers,
            "gold_keepers_active": keep["active"],
            "gold_keepers_active_share": keep["active"] / gold_keepers if gold_keepers else None,
            "gold_keepers_active_folded": sum(1 for s in self.sessions for nid in s.folded
                                              if self.gold.get(nid) == "keep" and s.outcomes.get(nid) == "active"),
            "active_from_labeled_notes": active_labeled, "labeled_drops_active": drop["active"],
            "labeled_drops_active_share": drop["active"] / active_labeled if active_labeled else None,
            "labeled_drops_written": sum(drop[o] for o in WRITTEN),
            "judge_keeps": keeps, "written": written,
            "keeps_written_active_share": written["active"] / keeps if keeps else None,
            "keeps_folded_as_duplicates": folded,
            "keeps_active_or_folded_share": (written["active"] + folded) / keeps if keeps else None,
            "judge_calls": sum(s.judge_calls for s in self.sessions),
            "compare_calls": sum(s.compare_calls for s in self.sessions),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"labels": self.labels, "judges": self.judges, "subset": self.subset, "figures": self.figures(),
                "gold_keepers": self.outcome_counts("keep"), "labeled_drops": self.outcome_counts("drop"),
                "not_written": _merge(s.not_written for s in self.sessions),
                "sessions": [asdict(s) for s in self.sessions], "split": self.split_figures(), **self.extra}


def _merge(dicts) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _memory_status(store, memory_ids: list[str | None]) -> dict[str | None, str]:
    ids = [m for m in memory_ids if m]
    if not ids:
        return {}
    got = store.longterm().collection.get(ids=ids, include=["metadatas"])
    return {i: (m or {}).get("status", "active") for i, m in zip(got["ids"], got["metadatas"])}


def run_session(session_id: str, session_file: Path, labeled: set[str], chain_factory, workdir: Path,
                embedding: str | None = None) -> SessionResult:
    """Import ``session_file`` into a fresh store under ``workdir``, end the session, run the pipeline
    once with ``chain_factory()``'s chain, and score the ``labeled`` note ids."""

    started = time.time()
    kwargs = {"embedding": embedding} if embedding else {}
    store = Store(in_folder(workdir / session_id), project=session_id, **kwargs)
    try:
        written_rows: list[dict[str, Any]] = []
        store.sessions.import_jsonl(session_file, session_id, written=written_rows)
        by_note = {r["note_id"]: str((r.get("metadata") or {}).get("id")) for r in written_rows}
        if not written_rows:
            raise BadInput(f"session file {session_file} holds no note", path=str(session_file))
        absent = sorted(labeled - set(by_note.values()))
        if absent:
            raise BadInput(f"{len(absent)} labeled note(s) of session {session_id} not in {session_file} (no note with"
                           f" that `id`): {', '.join(map(repr, absent[:5]))}", path=str(session_file))
        store.sessions.end(session_id, "success")
        plans = run_queue(store, session_id=session_id, chain_factory=chain_factory, time_box=None)
        plan = plans[-1] if plans else None
        outcomes: dict[str, str] = {}
        folded: list[str] = []
        written = dict.fromkeys(WRITTEN, 0)
        not_written: dict[str, int] = {}
        keeps = judge_calls = compare_calls = 0
        if plan is not None:
            status = _memory_status(store, [c.memory_id for c in plan.candidates if c.outcome == "write"])
            by_candidate: dict[int, str] = {}
            folded_into: set[int] = set()
            for c in plan.candidates:
                if c.source.startswith("judge:"):
                    keeps += 1
                if c.outcome == "write":
                    o = "transient" if c.tier == "transient" else status.get(c.memory_id, c.status)
                    o = o if o in written else "active"
                    written[o] += 1
                else:
                    o = "duplicate" if c.outcome == "duplicate" else "rejected"
                    why = (c.outcome_reason or c.outcome).split(" (")[0][:80]
                    not_written[f"{o}: {why}"] = not_written.get(f"{o}: {why}", 0) + 1
                if o != "active" and c.outcome == "write":
                    not_written[f"{o}: " + _why(plan, c)] = not_written.get(f"{o}: " + _why(plan, c), 0) + 1
                for nid in c.note_ids:
                    # a keeper folded into another keeper of the run lives on in that keeper's memory
                    # (whose note ids include it): the memory's status wins over "duplicate"
                    if c.outcome == "write" or nid not in by_candidate:
                        by_candidate[nid] = o
                    if c.outcome == "duplicate":
                        folded_into.add(nid)
            for nid, st in plan.note_status.items():
                label_id = by_note.get(nid)
                if label_id not in labeled:
                    continue
                if nid in by_candidate:
                    outcomes[label_id] = by_candidate[nid]
                    if nid in folded_into and by_candidate[nid] != "duplicate":
                        folded.append(label_id)
                else:
                    outcomes[label_id] = {"drop": "dropped", "purged": "purged", "blocked": "blocked"}.get(st, "unjudged")
            judge_calls = sum(1 for e in plan.events if e.get("event") == "judge.call" and e.get("stage") != "contradiction")
            compare_calls = sum(1 for e in plan.events if e.get("event") == "judge.call" and e.get("stage") == "contradiction")
        for label_id in labeled - set(outcomes):
            outcomes[label_id] = "unjudged"  # imported but never reached a decision (a run that failed)
        return SessionResult(session_id, len(written_rows), keeps, written, not_written, dict(sorted(outcomes.items())),
                             judge_calls, compare_calls, round(time.time() - started, 3),
                             plan.outcome if plan is not None else "not run", sorted(folded))
    finally:
        store.close()


def _why(plan, c) -> str:
    """The reason the write policy or the contradiction check gave for a written keeper's status."""
    for e in reversed(plan.events):
        if e.get("event") in ("candidate.quarantined", "candidate.transient", "memory.disputed") \
                and set(e.get("note_ids") or []) & set(c.note_ids):
            return fold_specifics(str(e.get("reason") or e["event"]).split(" (")[0])[:80]
    return c.status


def evaluate_end_to_end(labels: str | Path | list[str | Path], chain_factory, *, sessions_dir: str | Path | None = None,
                        sessions: int | list[str] | None = None, keep_stores: str | Path | None = None,
                        embedding: str | None = None, progress=None) -> EndToEndReport:
    """Run every picked labeled session alone through the pipeline (see the module docstring) and
    score the labeled notes. ``chain_factory`` returns a fresh JudgeChain per session. The stores go
    to a temporary folder removed afterwards, or to ``keep_stores`` (one ``<session>/.memofs`` each).
    ``labels`` is one label file or several (their labeled notes together; the sessions folder
    defaults to the first one's). The report carries the figures per part of the tuning / validation
    split (consolidate/evals/split.py, drawn over the labeled sessions of all the files).
    Raises BadInput for a bad label file, sessions folder or subset."""
    files = _paths(labels)
    if not files:
        raise BadInput("no label file given")
    rows = label_rows(files)
    sdir = Path(sessions_dir) if sessions_dir else default_sessions_dir(files[0])
    if not sdir.is_dir():
        what = "is a file, not a folder" if sdir.exists() else "not found"
        raise BadInput(f"sessions folder {sdir} {what} (give --sessions-dir: the folder of the <session id>.jsonl files)")
    picked = pick_sessions(rows, sdir, sessions)
    gold = {r["id"]: r["verdict"] for r in rows if r["session_id"] in set(picked)}
    work = Path(keep_stores) if keep_stores else Path(tempfile.mkdtemp(prefix="consolidate-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    results: list = []
    judges: list = []
    try:
        for sid in picked:
            labeled = {r["id"] for r in rows if r["session_id"] == sid}
            names: list[str] = []

            def factory(names=names):
                chain = chain_factory()
                names[:] = chain.names
                return chain

            results.append(run_session(sid, sdir / f"{sid}.jsonl", labeled, factory, work, embedding))
            judges = judges or names
            if progress:
                progress(results[-1])
    finally:
        if not keep_stores:
            shutil.rmtree(work, ignore_errors=True)
    if sessions is None:
        subset = f"all {len(picked)} labeled sessions"
    elif isinstance(sessions, int):
        subset = f"the {len(picked)} labeled sessions with the fewest notes (of {len({r['session_id'] for r in rows})})"
    else:
        subset = f"{len(picked)} sessions named: {', '.join(picked)}"
    parts = split_sessions(r["session_id"] for r in rows)
    return EndToEndReport(", ".join(map(str, files)), results, gold, judges, subset,
                          parts={sid: parts[sid] for sid in picked})


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def render_end_to_end(report: EndToEndReport) -> str:
    """The report as text: headline figures with their goals, outcomes of gold keepers and of labeled
    drops, why keeps were not written active, and one line per session."""
    f = report.figures()
    keep, drop = report.outcome_counts("keep"), report.outcome_counts("drop")
    w = f["written"]
    lines = [f"end to end: {report.labels}: {report.subset}; judge chain: {', '.join(report.judges) or '-'}",
             f"{f['sessions']} sessions, {f['notes']} notes ({f['labeled_notes']} labeled, {f['gold_keepers']} gold keepers);"
             f" {f['judge_calls']} judge calls, {f['compare_calls']} compare calls",
             f"judge keeps {f['judge_keeps']}: written active {w['active']}, quarantined {w['quarantined']},"
             f" disputed {w['disputed']}, transient {w['transient']}; folded into another as a duplicate"
             f" {f['keeps_folded_as_duplicates']}; written active: {_pct(f['keeps_written_active_share'])},"
             f" active or folded: {_pct(f['keeps_active_or_folded_share'])}",
             "",
             f"gold keepers active after one session: {f['gold_keepers_active']} of {f['gold_keepers']}"
             f" ({_pct(f['gold_keepers_active_share'])}; goal >= 80 %); of them folded into another"
             f" keeper's memory: {f['gold_keepers_active_folded']}",
             f"active memories from labeled drops: {f['labeled_drops_active']} of {f['active_from_labeled_notes']} active"
             f" from labeled notes ({_pct(f['labeled_drops_active_share'])}; goal <= 5 %);"
             f" labeled drops written in any status: {f['labeled_drops_written']}",
             *(f"  {name} part ({len(p['session_ids'])} session{'' if len(p['session_ids']) == 1 else 's'}):"
               f" gold keepers active"
               f" {p['figures']['gold_keepers_active']} of {p['figures']['gold_keepers']}"
               f" ({_pct(p['figures']['gold_keepers_active_share'])}), labeled drops active"
               f" {p['figures']['labeled_drops_active']}" for name, p in report.split_figures().items() if name in PARTS),
             "",
             f"{'outcome':<12} {'gold keepers':>12} {'labeled drops':>14}"]
    for o in OUTCOMES:
        if keep.get(o) or drop.get(o):
            lines.append(f"{o:<12} {keep.get(o, 0):>12} {drop.get(o, 0):>14}")
    nw = _merge(s.not_written for s in report.sessions)
    if nw:
        lines.append("")
        lines.append("keeps not written active, by reason:")
        lines.extend(f"  {n:>4}  {why}" for why, n in nw.items())
    lines.append("")
    lines.append(f"{'session':<26} {'notes':>5} {'keeps':>5} {'active':>6} {'quar.':>5} {'trans.':>6} {'gold active':>11}")
    for s in report.sessions:
        gk = [o for nid, o in s.outcomes.items() if report.gold.get(nid) == "keep"]
        lines.append(f"{s.session_id:<26} {s.notes:>5} {s.keeps:>5} {s.written['active']:>6} {s.written['quarantined']:>5}"
                     f" {s.written['transient']:>6} {sum(o == 'active' for o in gk):>7}/{len(gk)}")
    return "\n".join(lines)
