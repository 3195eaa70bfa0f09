"""Deferred judging: a note no judge answered waits in the session tier for one, within a bound.

A maybe-note that no judge of the chain answered, for whatever reason (unavailable, timed out,
rate-limited past the time box, refused, invalid or partial answer, circuit breaker open), is not
deleted with its session: the run records it in the session tier's ``waiting`` table with a bound
(``until``, Unix seconds: the first time it was left unjudged plus the wait bound, default 7 days,
``CONSOLIDATE_WAIT_DAYS`` or ``wait_days=``), marks the session end ``partial`` and says so in its
summary, its events (``note.unjudged`` with ``waiting_until``, ``run.partial``) and the exit code of
``consolidate run`` (:data:`EXIT_PARTIAL`). Nothing unjudged is written to the long-term store.

The next ``run``, ``worker`` or ``batch`` that has an answering judge (:func:`answering_judges`:
available now, and not one that answers nothing such as ``noop``) puts each partial session end back
in the queue (:func:`requeue_ready`); its run loads the session's rows, which by then are only the
waiting notes (the judged ones were deleted by the run that judged them), so exactly those are
judged. A note still unanswered keeps its first bound (it never moves); past it, the purge stage
deletes it with a ``note.expired_unjudged`` event that says it was never judged
(:func:`expire_waiting`). A partial session is also re-queued, without a judge, once one of its
notes is past its bound, so expiry happens on the next run whatever the judges.

Only the standard library is imported here (the session-end path).
"""

from __future__ import annotations

from typing import Any, Callable

from consolidate.core.dates import iso
import time
from consolidate.core.settings import WAIT_DAYS

#: Default wait bound of an unjudged note, in days (issue 12: "default 7 days, configurable").
DEFAULT_WAIT_DAYS = 7.0
#: Exit code of ``consolidate run`` when a run left notes waiting for a judge: EX_TEMPFAIL of
#: BSD sysexits.h ("a temporary failure; the user is invited to retry"): not 0, and not one of the
#: error codes 1-5.
EXIT_PARTIAL = 75


def wait_days(value: float | None = None) -> float:
    """The wait bound in days: ``value`` when given, else ``$CONSOLIDATE_WAIT_DAYS``, else 7.
    A value that is not a positive number raises ConfigError (the variable; consolidate/core/settings.py)
    or ValueError (an explicit ``value``)."""
    if value is not None:
        if not value > 0:
            raise ValueError(f"the wait bound must be a positive number of days, not {value!r}")
        return float(value)

    return WAIT_DAYS.get()


def answers_notes(judge) -> bool:
    """False for a judge that answers nothing by design (``answers_notes = False``, the no-op judge).
    ``judge`` is one of a chain's judges (a ``consolidate.judges.base.BaseJudge``)."""
    return bool(judge.answers_notes)


def answering_judges(chain, probe: bool = True) -> list[str]:
    """Names of the chain's judges that could answer now: ``available()`` (and, for a judge on a
    local server, the server answers ``GET /models``: ``consolidate.judges.registry.availability``), not
    tripped by the chain's circuit breaker, and not a judge that answers nothing. No model call."""
    from consolidate.judges.registry import availability  # noqa: PLC0415 - heavy (pydantic): loaded only when used

    names = []
    for judge in chain.judges:
        if not answers_notes(judge) or id(judge) in chain.failed:
            continue
        ok, _ = availability(judge, probe=probe)
        if ok:
            names.append(judge.name)
    return names


def no_judge_line(store, judges: list | None = None, days: float | None = None) -> str | None:
    """The line ``run`` and ``batch`` print first when no judge of the configured chain can answer
    now (naming ``consolidate judges``), or None when one can (or the chain cannot be built: the run
    reports that error itself)."""
    try:
        chain = build_chain(store, judges)
    except Exception:
        return None
    if answering_judges(chain):
        return None
    return (f"no judge available (chain: {', '.join(chain.names) or 'empty'}): notes that need a judge will wait"
            f" in the session tier for up to {wait_days(days):g} days; run `consolidate judges` to see why and set one up")


def build_chain(store, judges: list | None = None, chain_factory: Callable | None = None):
    """The chain a run would use (``chain_factory()`` or ``judges`` / the configuration)."""
    if chain_factory is not None:
        return chain_factory()
    from consolidate.judges.registry import build_chain as _build  # noqa: PLC0415 - heavy (pydantic): loaded only when used

    return _build(judges, store_config=store.judges_config)


def requeue_ready(store, *, judges: list | None = None, chain_factory: Callable | None = None,
                  now: float | None = None, session_id: str | None = None, force: bool = False) -> list[str]:
    """Put partial session ends back in the queue when their waiting notes can move: an answering
    judge is available now (checked once, without a model call), or one of their notes is past its
    bound (to expire it), or ``force``. Only ``session_id``'s when given. Returns the re-queued
    session ids; builds no chain when no session is partial."""
    rows = [r for r in store.sessions.partial() if session_id is None or r["session_id"] == session_id]
    if not rows:
        return []
    now = time.time() if now is None else now
    ready = force
    if not ready:
        try:
            ready = bool(answering_judges(build_chain(store, judges, chain_factory)))
        except Exception:  # a configuration error surfaces in the run itself
            ready = False
    waiting = store.sessions.waiting() if not ready else {}
    due = {w["session_id"] for w in waiting.values() if w["until"] <= now}
    out = []
    for row in rows:
        sid = row["session_id"]
        if (ready or sid in due) and store.sessions.requeue_partial(sid):
            out.append(sid)
    return out


def expire_waiting(plan, ctx) -> list[int]:
    """Purge-stage part: the session's notes waiting past their bound are deleted unjudged, each
    with a ``note.expired_unjudged`` event (when it started waiting, its bound, how many runs tried,
    the last judges' reasons). Returns their ids."""
    waiting = ctx.store.sessions.waiting(plan.session_id)
    expired = []
    for note in plan.notes:
        w = waiting.get(note.id)
        if w is None or plan.note_status.get(note.id, "live") != "live" or w["until"] > ctx.now:
            continue
        plan.note_status[note.id] = "expired"
        plan.delete_note_ids.append(note.id)
        expired.append(note.id)
        plan.decide("note.expired_unjudged", note_ids=[note.id], waiting_since=iso(w["since"]),
                    waiting_until=iso(w["until"]), attempts=w["attempts"], judge_reasons=w["reasons"],
                    reason=f"waited for a judge from {iso(w['since'])} to its bound {iso(w['until'])}"
                           f" ({w['attempts']} run(s) tried); deleted without ever being judged")
    return expired


def defer(plan, ctx, note_id: int, reasons: list[str], waiting: dict[int, dict[str, Any]],
          days: float | None = None) -> dict[str, Any]:
    """Judge-stage part: record that ``note_id`` waits for a judge. Its bound is the one it already
    had (``waiting`` from the session tier), else now plus the wait bound. Adds the note's
    ``note.unjudged`` event and returns the waiting row added to ``plan.waiting``."""
    old = waiting.get(note_id)
    since = old["since"] if old else ctx.now
    until = old["until"] if old else ctx.now + wait_days(days if days is not None else getattr(ctx, "wait_days", None)) * 86400
    row = {"note_id": note_id, "since": since, "until": until, "reasons": list(reasons)[:5],
           "attempts": (old["attempts"] + 1) if old else 1}
    plan.waiting.append(row)
    plan.note_status[note_id] = "unjudged"
    plan.decide("note.unjudged", note_ids=[note_id], judge_reasons=reasons, waiting_until=iso(until),
                attempts=row["attempts"],
                reason=f"no judge answered; waits in the session tier for a judge until {iso(until)}")
    return row


def announce(plan) -> None:
    """Add the run's ``run.partial`` event when notes were left waiting."""
    if not plan.waiting:
        return
    first = min(w["until"] for w in plan.waiting)
    plan.decide("run.partial", note_ids=[w["note_id"] for w in plan.waiting], waiting=len(plan.waiting),
                waiting_until=iso(first),
                reason=f"{len(plan.waiting)} note(s) wait for a judge (the first bound {iso(first)}); the next run"
                       " with an answering judge judges them (`consolidate judges` shows what can answer)")
