"""The fail-soft judge chain (docs/design.md#judges).

Per batch, judges in order. A judge that answers part of a batch is asked once more for the rest, as a
smaller batch (``judge.reask`` event); a judge that fails, times out, returns invalid output or still
leaves notes unanswered passes the rest of the batch to the next judge. A judge that failed once is skipped for the rest
of the run (circuit breaker). Each note ends judged-keep, judged-drop or unjudged (with each failed
judge's reason). Batches are bounded by note count and by characters; a note longer than the
per-note limit is truncated for the judge, and the truncation is recorded.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from consolidate.core import interruptible
from consolidate.core.errors import CassetteMiss, JudgeError, JudgeOutputInvalid, JudgeTimeout
from consolidate.core.settings import REASK
from consolidate.core.vocab import COMPARE_ALIASES, COMPARE_RELATIONS
from consolidate.rules.redaction import error_text

from .base import (BaseJudge, ChainResult, CurateMember, Curated, Item, Judged, JudgeContext, JudgeNote, Pair, Verdict,  # noqa: F401 (re-exported)
                   as_judge, validate_verdicts)
from .curating import validate_curation
from .injection import instruction_like
from .prompting import selected_curate_prompt_version

#: Defaults for batching: one judge call per 25 notes, rounded down, the remainder spread over the
#: batches, so a batch holds 25 to 49 notes and a session's last batch is never a near-empty call:
#: every run of 25 or more short notes makes at most 4 calls per 100 judged notes (issue #3). On the
#: 41 real sessions of ../shared/data/realnotes this is 3.60 calls per 100 notes and no run over 4;
#: greedy batches of 25 made 4.31 (benchmarks/bench_judge_cost.py). A batch also holds at most
#: 16,000 characters of notes (about 4,000 tokens, leaving room for the prompt and the verdicts in an
#: 8k context); where that bound closes batches, they are as many as it needs. The API judge's output
#: budget is 150 tokens a verdict, capped at 4,096 (judges/api.py): about 80 a verdict in a batch of
#: 49, enough when most verdicts are drops (about 20 tokens each); from an answer cut at that budget
#: the verdicts the model completed stand and the rest of the batch passes on down the chain
#: (judges/api.py: salvage_objects). A note is cut at 4,000 characters for the judge.
NOTES_PER_CALL = 25
MAX_BATCH_NOTES = 49
MAX_BATCH_CHARS = 16_000
MAX_NOTE_CHARS_FOR_JUDGE = 4_000
#: Extra seconds granted to a judge past its time box before the chain stops waiting for it.
GRACE_SECONDS = 2.0


def _greedy(run: list, cap: int, max_chars: int) -> list[list]:
    """Fill batches in order, closing one before the note that would take it past ``cap`` notes or
    ``max_chars`` characters: the fewest batches those two bounds allow."""
    batches: list[list] = []
    current: list = []
    chars = 0
    for pair in run:
        n = len(pair[1].content)
        if current and (len(current) >= cap or chars + n > max_chars):
            batches.append(current)
            current, chars = [], 0
        current.append(pair)
        chars += n
    if current:
        batches.append(current)
    return batches


def make_batches(items: list[Item], max_notes: int = MAX_BATCH_NOTES, max_chars: int = MAX_BATCH_CHARS,
                 max_note_chars: int = MAX_NOTE_CHARS_FOR_JUDGE, notes_per_call: int = NOTES_PER_CALL,
                 isolate: bool = True) -> list[list[tuple[Item, JudgeNote]]]:
    """Split items into batches for the judge.

    Batches hold at most ``max_notes`` notes and ``max_chars`` characters of content. Within those
    bounds there is one batch per ``notes_per_call`` notes, rounded down (at least one, and never
    fewer than the bounds allow), and the notes are spread evenly over them (sizes differ by at most
    one) unless the character bound forbids it; then the batches are filled in order under the
    smallest note cap that still needs no more of them. 60 short notes make 2 batches of 30, not
    25 + 25 + 10; long notes make smaller batches (16,000 characters hold five notes of 3,000).

    Set apart, after those batches, without splitting them: a note longer than ``max_note_chars``
    is truncated for the judge (``truncated_from`` set to its length in characters) and gets a batch
    of its own; notes that look like an instruction to the judge (``isolated`` set to why:
    judges/injection.py) are judged together in batches of their own, so none can sway an ordinary
    note's verdict (``isolate=False`` turns that off, for tests that show what it prevents). Short
    ids restart at n1 per batch.

    Returns a list of batches of (item, judge note) pairs. Raises ValueError when ``max_notes``
    or ``notes_per_call`` is below 1."""
    if max_notes < 1 or notes_per_call < 1:
        raise ValueError(f"max_notes and notes_per_call must be at least 1, not {max_notes} and {notes_per_call}")
    plain: list[tuple[Item, JudgeNote]] = []
    alone: list[list[tuple[Item, JudgeNote]]] = []
    suspect: list[tuple[Item, JudgeNote]] = []
    for item in items:
        content = item.content
        truncated = None
        if len(content) > max_note_chars:
            truncated = len(content)
            content = content[:max_note_chars] + " […truncated]"
        note = JudgeNote(id="", content=content, section=item.section, kind=item.kind, truncated_from=truncated,
                         isolated=instruction_like(item.content) if isolate else None)
        if truncated is not None:
            alone.append([(item, note)])
        elif note.isolated is not None:
            suspect.append((item, note))
        else:
            plain.append((item, note))
    batches = _spread(plain, max_notes, max_chars, min(notes_per_call, max_notes)) + alone
    batches += _greedy(suspect, max_notes, max_chars)
    for batch in batches:
        for i, (_, jn) in enumerate(batch, 1):
            jn.id = f"n{i}"
    return batches


def _spread(run: list, max_notes: int, max_chars: int, per_call: int) -> list[list]:
    """``run`` in one batch per ``per_call`` notes (at least as many as the bounds need), evenly."""
    if not run:
        return []
    k = max(len(_greedy(run, max_notes, max_chars)), len(run) // per_call)
    size, extra = divmod(len(run), k)  # k batches whose sizes differ by at most one
    cuts = [j * size + min(j, extra) for j in range(k + 1)]
    even = [run[cuts[j]:cuts[j + 1]] for j in range(k)]
    if all(sum(len(jn.content) for _, jn in b) <= max_chars for b in even):
        return even
    # the character bound forbids that split: the smallest per-batch cap that needs at most k
    lo, hi = -(-len(run) // k), max_notes
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_greedy(run, mid, max_chars)) <= k:
            hi = mid
        else:
            lo = mid + 1
    return _greedy(run, lo, max_chars)


def _call_with_deadline(judge, batch, context, timeout: float | None):
    """Run ``judge.judge`` in a daemon thread and stop waiting ``GRACE_SECONDS`` after its time box:
    a judge that ignores its timeout cannot hold the run (the thread is abandoned).

    The wait hears Ctrl-C at once (consolidate.core.interruptible: one join for the whole time box made
    the run wait for the judge's answer first). On Ctrl-C (any exception while waiting) the judge's
    process is ended too: a judge with a ``cancel()`` method (the CLI judge: its process group) is
    asked to stop."""
    if timeout is None:
        return judge.judge(batch, context, None)
    box: dict[str, Any] = {}

    def target():
        try:
            box["result"] = judge.judge(batch, context, timeout)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name=f"judge-{judge.name}")
    try:
        t.start()
        interruptible.join(t, timeout + GRACE_SECONDS)
    except BaseException:
        cancel = getattr(judge, "cancel", None)
        if callable(cancel):
            cancel()
        raise
    if t.is_alive():
        raise JudgeTimeout(f"{judge.name}: no answer within {timeout:.1f} s", judge=judge.name, seconds=timeout)
    if "error" in box:
        raise box["error"]
    return box.get("result")


class JudgeChain:
    """Judges tried in order per batch. ``deadline`` (absolute Unix seconds, or None) bounds the
    whole chain: each call gets the time left, never more."""

    def __init__(self, judges: list, *, max_notes: int = MAX_BATCH_NOTES, max_chars: int = MAX_BATCH_CHARS,
                 max_note_chars: int = MAX_NOTE_CHARS_FOR_JUDGE, notes_per_call: int = NOTES_PER_CALL,
                 isolate: bool = True, reask: bool | None = None):
        #: the judges in order, each seen through the contract (consolidate.judges.base.as_judge)
        self.judges: list[BaseJudge] = [as_judge(j, strict=False) for j in judges]
        #: ask a judge that answered part of a batch once more for the rest (default on;
        #: ``CONSOLIDATE_REASK=0`` turns it off, for replaying cassettes recorded without it)
        self.reask = reask if reask is not None else REASK.get()
        self.isolate = isolate
        self.max_notes = max_notes
        self.notes_per_call = notes_per_call
        self.max_chars = max_chars
        self.max_note_chars = max_note_chars
        #: id(judge) -> failure kind: the circuit breaker, per judge object (two judges may share a name)
        self.failed: dict[int, str] = {}

    @property
    def names(self) -> list[str]:
        return [j.name for j in self.judges]

    def run(self, items: list[Item], context: JudgeContext, deadline: float | None = None) -> ChainResult:
        """Judge every item; never raises for a judge's failure (it becomes an event)."""
        result = ChainResult()
        for batch in self.batches(items):
            self._run_batch(batch, context, deadline, result)
        return result

    def batches(self, items: list[Item]) -> list[list[tuple[Item, JudgeNote]]]:
        """The batches :meth:`run` would send for ``items`` (:func:`make_batches` with this chain's
        bounds): a list of batches of (item, judge note) pairs."""
        return make_batches(items, self.max_notes, self.max_chars, self.max_note_chars, self.notes_per_call,
                            self.isolate)

    def compare(self, pairs: list[Pair], context: JudgeContext,
                deadline: float | None = None) -> tuple[dict[str, tuple[str, str]], list[dict[str, Any]]]:
        """The contradiction check over this chain's comparing judges: :func:`compare_pairs`."""
        return compare_pairs(self, pairs, context, deadline)

    def curate(self, members: list[CurateMember], context: JudgeContext, deadline: float | None = None) -> Curated:
        """The curation pass for one group over this chain's curating judges: :func:`curate_members`."""
        return curate_members(self, members, context, deadline)

    def _run_batch(self, batch, context, deadline, result: ChainResult) -> None:
        pending = list(batch)
        reasons: dict[int, list[str]] = {item.key: [] for item, _ in batch}
        for judge in self.judges:
            if not pending:
                break
            pending, partly = self._ask(judge, pending, reasons, context, deadline, result)
            if partly and self.reask:
                # answered part of the batch: the rest is asked again once, as a smaller batch (issue 12)
                result.events.append({"event": "judge.reask", "judge": judge.name, "batch_size": len(pending),
                                      "reason": "answered part of the batch; the unanswered notes asked once more"})
                pending, _ = self._ask(judge, pending, reasons, context, deadline, result)
        for item, _ in pending:
            result.unjudged[item.key] = reasons[item.key] or ["no judge configured"]

    def _ask(self, judge, pending, reasons, context, deadline, result: ChainResult) -> tuple[list, bool]:
        """One call of ``judge`` for the ``pending`` (item, judge note) pairs. Returns the pairs it
        left unanswered (each with the reason appended to ``reasons``) and whether it answered part
        of the batch (at least one valid verdict, not all)."""
        if id(judge) in self.failed:
            for item, _ in pending:
                reasons[item.key].append(f"{judge.name}: skipped (failed earlier in this run: {self.failed[id(judge)]})")
            return pending, False
        timeout = None if deadline is None else deadline - time.time()
        if timeout is not None and timeout <= 0:
            for item, _ in pending:
                reasons[item.key].append("time box exhausted before this batch was judged")
            return pending, False
        notes = [jn for _, jn in pending]
        started = time.time()
        try:
            raw = _call_with_deadline(judge, notes, context, timeout)
            if not isinstance(raw, list):
                raise JudgeOutputInvalid(f"{judge.name}: answer is not a list of verdicts", judge=judge.name)
        except CassetteMiss:
            raise  # a replayed prompt that changed: the regression test fails loudly, nothing is deferred
        except JudgeError as exc:
            self._fail(judge, exc.kind, error_text(exc), pending, reasons, result, started)
            return pending, False
        except Exception as exc:  # a plug-in's own bug must not end the run
            self._fail(judge, "judge-error", f"{judge.name}: {error_text(exc, typed=True)}", pending, reasons, result, started)
            return pending, False
        report = validate_verdicts(notes, raw)
        result.events.append({"event": "judge.call", "judge": judge.name, "batch_size": len(notes),
                              "answered": len(report.verdicts), "seconds": round(time.time() - started, 3),
                              **judge.last_call})
        if judge.name not in result.judges_used:
            result.judges_used.append(judge.name)
        if report.problems:
            result.events.append({"event": "judge.output_problems", "judge": judge.name,
                                  "problems": report.problems[:20]})
        still = []
        for item, jn in pending:
            v = report.verdicts.get(jn.id)
            if v is None:
                reasons[item.key].append(f"{judge.name}: judge-output-invalid (no valid verdict for this note)")
                still.append((item, jn))
            else:
                result.judged[item.key] = Judged(v, judge.name, judge.model, judge.prompt_version,
                                                 jn.truncated_from, jn.isolated)
        if still and not raw:
            # Answered nothing at all (the no-op judge's job): say so plainly.
            for item, _ in still:
                reasons[item.key][-1] = f"{judge.name}: answered no note"
        return still, bool(still) and len(still) < len(pending)

    def _fail(self, judge, kind, message, pending, reasons, result, started) -> None:
        self.failed[id(judge)] = kind
        call = judge.last_call  # tokens of a refused answer, when the judge knows them
        spent = {k: call[k] for k in ("prompt_tokens", "completion_tokens", "cost") if k in call}
        result.events.append({"event": "judge.failed", "judge": judge.name, "kind": kind,
                              "reason": message, "seconds": round(time.time() - started, 3),
                              "batch_size": len(pending), **spent})
        for item, _ in pending:
            reasons[item.key].append(f"{judge.name}: {kind}: {message}")


#: Pairs per contradiction call: 40 pairs of two statements stay far inside an 8k context, and 40
#: relations fit the API judge's output budget for them (60 tokens each + 100, judges/api.py).
MAX_PAIRS_PER_CALL = 40


class _CompareAdapter:
    """Lets :func:`_call_with_deadline` time-box ``compare()`` exactly like ``judge()``."""

    def __init__(self, judge):
        self.name = judge.name
        self._judge = judge

    def judge(self, batch, context, timeout):
        return self._judge.compare(batch, context, timeout)

    def cancel(self) -> None:
        cancel = getattr(self._judge, "cancel", None)
        if callable(cancel):
            cancel()


def compare_pairs(chain: "JudgeChain", pairs: list[Pair], context: JudgeContext,
                  deadline: float | None = None) -> tuple[dict[str, tuple[str, str]], list[dict[str, Any]]]:
    """Ask the chain's judges that can compare (``can_compare``: they override ``compare``) how each pair
    relates: ``duplicate``, ``updates`` (the new statement replaces the old: something changed),
    ``contradicts`` or ``unrelated``. Returns ``({key: (relation, judge)},
    events)``; a pair no judge answered is absent (nothing is guessed). Answers for unknown pair
    ids, unknown relations and second answers are ignored and listed in a ``judge.output_problems``
    event (``stage: contradiction``). Same fail-soft rules as judging: a judge that fails is skipped
    for the rest of the run. Pairs go to a judge at most ``MAX_PAIRS_PER_CALL`` at a time, so a run
    with many similar keepers never sends one prompt past a model's context."""
    answered: dict[str, tuple[str, str]] = {}
    events: list[dict[str, Any]] = []
    for start in range(0, len(pairs), MAX_PAIRS_PER_CALL):
        _compare_chunk(chain, pairs[start:start + MAX_PAIRS_PER_CALL], context, deadline, answered, events)
    return answered, events


def _compare_chunk(chain: "JudgeChain", pairs: list[Pair], context: JudgeContext, deadline: float | None,
                   answered: dict[str, tuple[str, str]], events: list[dict[str, Any]]) -> None:
    """One chunk of :func:`compare_pairs`: the chain's comparing judges in order, each given the
    pairs not answered yet; fills ``answered`` and ``events``."""
    pending = list(pairs)
    for judge in chain.judges:
        if not pending:
            break
        if not judge.can_compare or id(judge) in chain.failed:
            continue
        timeout = None if deadline is None else deadline - time.time()
        if timeout is not None and timeout <= 0:
            break
        ids = {f"p{i}": p for i, p in enumerate(pending, 1)}
        started = time.time()
        try:

            raw = _call_with_deadline(_CompareAdapter(judge), [(pid, p) for pid, p in ids.items()], context, timeout)
            if not isinstance(raw, list):
                raise JudgeOutputInvalid(f"{judge.name}: compare answer is not a list", judge=judge.name)
        except CassetteMiss:
            raise
        except JudgeError as exc:
            chain.failed[id(judge)] = exc.kind
            events.append({"event": "judge.failed", "judge": judge.name, "kind": exc.kind, "reason": error_text(exc),
                           "seconds": round(time.time() - started, 3), "stage": "contradiction"})
            continue
        except Exception as exc:
            chain.failed[id(judge)] = "judge-error"
            events.append({"event": "judge.failed", "judge": judge.name, "kind": "judge-error",
                           "reason": f"{error_text(exc, typed=True)}", "stage": "contradiction"})
            continue
        events.append({"event": "judge.call", "judge": judge.name, "stage": "contradiction",
                       "batch_size": len(ids), "seconds": round(time.time() - started, 3), **judge.last_call})
        problems: list[str] = []
        for item in raw:
            if not isinstance(item, dict):
                problems.append(f"answer {str(item)[:60]!r} is not an object; ignored")
                continue
            pid, rel = str(item.get("id", "")).strip(), str(item.get("relation", "")).strip().lower()
            rel = COMPARE_ALIASES.get(rel, rel)
            if pid not in ids and f"p{pid}" in ids:
                pid = f"p{pid}"
            if pid not in ids:
                problems.append(f"relation for unknown pair id {pid[:40]!r} ignored")
            elif rel not in COMPARE_RELATIONS:
                problems.append(f"unknown relation {rel[:40]!r} for pair {pid!r} ignored")
            elif ids[pid].key in answered:
                problems.append(f"second relation for pair {pid!r} ignored")
            else:
                answered[ids[pid].key] = (rel, judge.name)
        if problems:
            events.append({"event": "judge.output_problems", "judge": judge.name, "stage": "contradiction",
                           "problems": problems[:20]})
        pending = [p for p in pending if p.key not in answered]


class _CurateAdapter:
    """Lets the chain's time-boxed call run ``curate()`` exactly like ``judge()``."""

    def __init__(self, judge):
        self.name = judge.name
        self._judge = judge

    def judge(self, batch, context, timeout):
        return self._judge.curate(batch, context, timeout)

    def cancel(self) -> None:
        cancel = getattr(self._judge, "cancel", None)
        if callable(cancel):
            cancel()


def curate_members(chain, members: list[CurateMember], context: JudgeContext,
                   deadline: float | None = None) -> Curated:
    """Ask the judges of ``chain`` (a consolidate.judges.chain.JudgeChain) that can curate
    (``can_curate``), in order, for one group, until one gives an answer :func:`validate_curation`
    takes. Fail-soft like the chain: a judge that raises is skipped for the rest of the run (the
    chain's circuit breaker), an answer that cannot be read (JudgeOutputInvalid) or that the check
    rejects passes this group only to the next judge (so a capture judge, ../shared/tools/judgelab,
    sees every group), and with none left
    (or the ``deadline``, absolute Unix seconds, passed) the group is deferred. Raises CassetteMiss
    only (a replayed prompt that changed)."""
    out = Curated()
    ids = [m.id for m in members]
    for judge in chain.judges:
        if not getattr(judge, "can_curate", False):
            continue
        if id(judge) in chain.failed:
            out.reasons.append(f"{judge.name}: skipped (failed earlier in this run: {chain.failed[id(judge)]})")
            continue
        timeout = None if deadline is None else deadline - time.time()
        if timeout is not None and timeout <= 0:
            out.reasons.append("time box exhausted before this group was curated")
            break
        started = time.time()
        try:
            raw = _call_with_deadline(_CurateAdapter(judge), members, context, timeout)
        except CassetteMiss:
            raise
        except JudgeOutputInvalid as exc:  # an answer that cannot be read: this group only, like a rejected one
            out.reasons.append(f"{judge.name}: answer rejected ({error_text(exc)})")
            out.events.append({"event": "judge.output_problems", "judge": judge.name, "stage": "curate",
                               "problems": [error_text(exc)], "seconds": round(time.time() - started, 3)})
            continue
        except Exception as exc:  # noqa: BLE001 - a judge's failure (or a plug-in's bug) defers, never deletes
            kind = exc.kind if isinstance(exc, JudgeError) else "judge-error"
            chain.failed[id(judge)] = kind
            out.reasons.append(f"{judge.name}: {kind}: {error_text(exc)}")
            out.events.append({"event": "judge.failed", "judge": judge.name, "kind": kind, "stage": "curate",
                               "reason": error_text(exc, typed=not isinstance(exc, JudgeError)),
                               "seconds": round(time.time() - started, 3)})
            continue
        out.events.append({"event": "judge.call", "judge": judge.name, "stage": "curate", "batch_size": len(ids),
                           "seconds": round(time.time() - started, 3), **judge.last_call})
        actions, problems = validate_curation(ids, raw)
        if actions is None:
            out.reasons.append(f"{judge.name}: answer rejected ({'; '.join(problems[:3])})")
            out.events.append({"event": "judge.output_problems", "judge": judge.name, "stage": "curate",
                               "problems": problems[:20]})
            continue
        out.actions, out.judge = actions, judge.name
        out.prompt_version = getattr(judge, "curate_prompt_version", None) or selected_curate_prompt_version()
        return out
    if not out.reasons:
        out.reasons.append("no judge of the chain can curate")
    return out
