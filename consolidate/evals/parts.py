"""The eval report per part of the tuning / validation split (issue 31; the split itself:
consolidate/evals/split.py).

:func:`evaluate_files` is what ``consolidate eval --labels A [--labels B ...]`` runs: each label file
is judged whole, in the chain's normal batches and in file order, so the prompts (and so one answer
set, one cassette) do not depend on the split; the verdicts are then counted per part, with the
same confusion and metrics as the whole report (consolidate/evals/judges.py). With several files the
parts are also summed over all of them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from consolidate.evals import split as splits
from consolidate.evals.judges import Confusion, EvalReport, LabeledNote, LabelFile, always_drop, confusion
from consolidate.evals.judges import evaluate, metrics, read_label_file, render_report
from consolidate.judges.base import JudgeContext


def part_figures(labels: list[LabeledNote], report: EvalReport, part: dict[str, str],
                 name: str) -> dict[str, Any]:
    """The figures of ``report`` (one eval over ``labels``) over the notes that ``part`` (note id ->
    part) puts in part ``name``: sessions, notes, label keeps, judged / unjudged / blocked counts, the
    confusion, its metrics and the always-drop baseline's, computed exactly as the whole report's, and
    the part's ``session_ids`` (sorted)."""
    mine = [n for n in labels if part.get(n.id) == name]
    ids = {n.id for n in mine}
    gold = {n.id: n.verdict for n in mine}
    c = confusion(gold, {k: v for k, v in report.predicted.items() if k in ids})
    return {"sessions": len({n.session_id for n in mine}), "session_ids": sorted({str(n.session_id) for n in mine}),
            "notes": len(mine),
            "label_keeps": sum(v == "keep" for v in gold.values()), "judged": c.n,
            "unjudged": sum(k in ids for k in report.unjudged), "blocked_by_secret_gate": sum(k in ids for k in report.blocked),
            "confusion": asdict(c), "metrics": metrics(c), "always_drop_baseline": metrics(always_drop(c))}


def split_report(labels: list[LabeledNote], report: EvalReport, part: dict[str, str],
                 parts: tuple[str, ...] = splits.PARTS,
                 seed: int = splits.SEED) -> dict[str, Any]:
    """The ``split`` entry of an eval report: the seed, the rule's module and one
    :func:`part_figures` per part of ``parts``. ``without_session``: notes in neither part."""
    return {"seed": seed, "rule": "by session: consolidate/evals/split.py", "validation_fraction": splits.VALIDATION_FRACTION,
            "without_session": sum(n.id not in part for n in labels),
            "parts": {p: part_figures(labels, report, part, p) for p in parts}}


def combine(splits: list[dict[str, Any]]) -> dict[str, Any]:
    """Several label files' ``split`` entries summed part by part (counts and confusion added, the
    metrics computed again from the summed confusion): the figures over all the label sets."""
    out: dict[str, Any] = {k: splits[0][k] for k in ("seed", "rule", "validation_fraction")}
    out["without_session"] = sum(s["without_session"] for s in splits)
    out["parts"] = {}
    for p in splits[0]["parts"]:
        rows = [s["parts"][p] for s in splits]
        summed = {k: sum(r[k] for r in rows) for k in ("notes", "label_keeps", "judged", "unjudged",
                                                       "blocked_by_secret_gate")}
        summed["session_ids"] = sorted(set().union(*(r["session_ids"] for r in rows)))
        summed["sessions"] = len(summed["session_ids"])
        c = Confusion(**{k: sum(r["confusion"][k] for r in rows) for k in ("tp", "fp", "fn", "tn")})
        out["parts"][p] = {**summed, "confusion": asdict(c), "metrics": metrics(c),
                           "always_drop_baseline": metrics(always_drop(c))}
    return out


_ROWS = (("accuracy", "accuracy"), ("keep precision", "keep_precision"), ("keep recall", "keep_recall"),
         ("keep F1", "keep_f1"), ("Cohen's kappa", "cohen_kappa"))


def _cell(x: float | None) -> str:
    return "n/a" if x is None else f"{0.0 if abs(x) < 1e-9 else x:.3f}"


def render_split(split: dict[str, Any], title: str = "") -> list[str]:
    """The split as text: one column per part, rows for the counts and the judge's metrics (the
    always-drop baseline's F1 is 0 or n/a by construction and its accuracy is the drop share, given
    last)."""
    parts = list(split["parts"])
    cols = [split["parts"][p] for p in parts]
    if not any(c["notes"] for c in cols):
        return [f"{title or 'split by session'}: no note has a session id, so no part to report"]
    lines = [f"{title or 'split by session'} (seed {split['seed']}, {split['rule'].split(': ')[-1]})"
             + (f"; {split['without_session']} notes without a session id are in neither part"
                if split["without_session"] else "")]
    lines.append(f"{'':18}" + "".join(f"{p:>14}" for p in parts))
    for label, key in (("sessions", "sessions"), ("notes", "notes"), ("label keeps", "label_keeps"),
                       ("judged", "judged")):
        lines.append(f"{label:18}" + "".join(f"{c[key]:>14}" for c in cols))
    for label, key in _ROWS:
        lines.append(f"{label:18}" + "".join(f"{_cell(c['metrics'][key]):>14}" for c in cols))
    lines.append(f"{'tp/fp/fn/tn':18}" + "".join(
        f"{'/'.join(str(c['confusion'][k]) for k in ('tp', 'fp', 'fn', 'tn')):>14}" for c in cols))
    lines.append(f"{'always-drop accuracy':18}" + "".join(f"{_cell(c['always_drop_baseline']['accuracy']):>14}"
                                                         for c in cols))
    return lines


def evaluate_file(chain, file: LabelFile, sessions: dict[str, str], parts: tuple[str, ...], *,
                  project: str = "default", deadline: float | None = None, as_run: bool = False) -> tuple[str, dict]:
    """One label file judged whole (:func:`consolidate.evals.judges.evaluate`), then measured per part
    of ``sessions`` (a :func:`consolidate.evals.split.session_split`). Returns the text report and the
    JSON one: today's keys plus ``split`` (:func:`split_report`) and ``disagreements_left_out``."""
    report = evaluate(chain, file.notes, context=JudgeContext(project=project), deadline=deadline,
                      labels_name=file.path, as_run=as_run)
    split = split_report(file.notes, report, splits.parts_of(file.notes, sessions), parts)
    d = {**report.to_dict(), "disagreements_left_out": file.disagreements, "split": split}
    text = render_report(report)
    if file.disagreements:
        text += f"\nleft out: {file.disagreements} notes the two annotators disagreed on"
    return text + "\n\n" + "\n".join(render_split(split)), d


def evaluate_files(chain, paths: list[str], *, limit: int | None = None, parts: tuple[str, ...] = splits.PARTS,
                   project: str = "default", deadline: float | None = None,
                   as_run: bool = False) -> tuple[str, dict, list[dict]]:
    """Every label file of ``paths`` read (:func:`read_label_file`, ``limit`` per file: BadInput /
    InvalidImportLine as it raises), one split drawn over all their sessions, each file judged by
    :func:`evaluate_file`. Returns the text report, the JSON one (one file: its report; several:
    ``{"label_sets": [...], "combined": {"split": ...}}``) and the per-file JSON reports."""
    files = [read_label_file(p, limit=limit) for p in paths]
    sessions = splits.session_split(f.notes for f in files)
    done = [evaluate_file(chain, f, sessions, parts, project=project, deadline=deadline, as_run=as_run)
            for f in files]
    reports = [d for _, d in done]
    text = "\n\n".join(t for t, _ in done)
    if len(reports) == 1:
        return text, reports[0], reports
    combined = combine([d["split"] for d in reports])
    text += "\n\n" + "\n".join(render_split(combined, f"all {len(reports)} label sets, split by session"))
    return text, {"label_sets": reports, "combined": {"split": combined}}, reports
