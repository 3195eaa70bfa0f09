"""``memory/context.md`` in the store: what the SessionStart hook prints. The one owner of that file
and of ``memory/context.top.json``, the ranked list the next write merges from.

:func:`write` is the only writer of both (a run's apply step, review, undo, forget, a team pull): it
ranks the top active (and disputed) durable memories of a scope, writes ``context.md`` (a notice,
then one line a memory, through the context guard) and ``context.top.json`` atomically
(consolidate/core/atomic.py), then has the files it depends on written by their owners:
``memory/context.json`` (the memory id of each line, consolidate.store.anchors.write_context_index) and
``memory/context.start.json`` (the light SessionStart path, consolidate.store.views.recalled.write_start_file).
"""

from __future__ import annotations

import json
from pathlib import Path
from consolidate.store.layout import CONTEXT_MD, CONTEXT_TOP as _TOP

from consolidate.core.vocab import CONFIDENCE_LEVELS
from consolidate.store.views import shown as agent_view
from consolidate.store.views.recalled import write_start_file
from consolidate.core.atomic import write_json_atomic, write_text_atomic
from consolidate.rules.persisted import gate
from collections import Counter
from consolidate.rules.guard import NOTICE
from consolidate.store.anchors import read_section, write_context_index
from consolidate.store.index.longterm import RECALLED

#: How many memories ``memory/context.md`` (the SessionStart context) holds.
CONTEXT_MEMORIES = 30


def path_of(store) -> Path:
    """The path of ``memory/context.md`` in ``store``."""
    return store.sub(CONTEXT_MD)


def top_path(store) -> Path:
    """The path of ``memory/context.top.json`` in ``store``."""
    return store.sub(_TOP)


#: The ids of the memories ``memory/context.md`` shows and of the next CONTEXT_RESERVE below them,
#: with the scope, whether they were every memory it could show, and a rank no memory outside them
#: beats: what the next :func:`write` starts from.
CONTEXT_TOP = _TOP.name
#: Memories kept ranked below the shown ones in ``context.top.json``: as many members may leave the
#: top (an undo, a forget, a weakened entry) before the index must be read again.
CONTEXT_RESERVE = 30
_CONFIDENCE_ORDER = tuple(reversed(CONFIDENCE_LEVELS))


def write(store, scope: str, limit: int = CONTEXT_MEMORIES, touched: list[str] | None = None,
                  run_id: str | None = None, undoing: str | None = None) -> None:
    """Rewrite ``memory/context.md``: the top active (and disputed) durable memories of ``scope`` (high confidence
    first, then most recently confirmed), one line each with its suffix. The SessionStart hook prints
    this file, so starting a session imports nothing heavy. Memories whose anchored file is gone
    (stale) are left out; ``memory/context.json`` maps each line to its memory for the hook's drift check.

    With ``touched`` (the ids a run wrote, re-confirmed, updated, or an undo removed or restored) the
    top is merged, not searched: the previous list (``memory/context.top.json``: the top and
    CONTEXT_RESERVE more) and the touched ids are read again by id and ranked, which reads about
    ``limit`` + CONTEXT_RESERVE + len(touched) memories whatever the store's size (at 100,000
    memories reading every active one took 8-60 s: benchmarks/bench_scale.py). Every memory outside
    both ranks no better than the bound the previous list recorded and did not change, so the merge
    is the true top unless fewer than ``limit`` remain or the ``limit``-th ranks below that bound
    (more members left or weakened than the reserve holds): then, and without a previous list, the
    store is read one confidence level at a time (:func:`_top_by_scan`).

    ``run_id``: the run this context is written for; the file keeps the list it replaced
    (``before``). ``undoing``: an undo of that run, while the file is still the one it wrote (no
    write since): the merge starts from the list before the run, with the run's touched ids, which
    gives the top the store had before it whatever the run pushed out."""
    lt = store.longterm()
    stale = read_section(store.path)["stale"]
    size = limit + CONTEXT_RESERVE
    top = read_top(store)
    previous = top
    if undoing is not None and top is not None and top.get("run_id") == undoing and isinstance(top.get("before"), dict):
        previous = top["before"]  # nothing changed the store since the run: its list before the run holds
    merged = _top_by_merge(previous, lt, scope, limit, size, touched, stale) \
        if touched is not None and previous is not None else None
    if merged is None:
        rows = _top_by_scan(lt, scope, size, stale)
        every, bound = len(rows) < size, _bound(rows[-1]) if rows else None
    else:
        rows, every, bound = merged
    got = agent_view.view(rows[:limit], "session-start",  # drift is checked as the hook prints it
                          forgotten=agent_view.forgotten_ids(store))
    text = render(scope, ["- " + line for line in got.lines], held=len(got.held), held_ids=got.held)
    write_text_atomic(path_of(store), gate(text))  # consolidate/rules/persisted.py
    write_context_index(store, got.rows, got.lines)
    entry = {"scope": scope, "limit": limit, "reserve": CONTEXT_RESERVE, "all": every, "ids": [r["id"] for r in rows],
             "last": bound}
    if run_id is not None:
        entry["run_id"] = run_id
        if top is not None and top.get("run_id") == run_id:  # the run replayed (a crash): its list before stays
            if isinstance(top.get("before"), dict):
                entry["before"] = top["before"]
        elif top is not None:
            entry["before"] = {k: v for k, v in top.items() if k not in ("before", "run_id")}
    write_json_atomic(top_path(store), entry)
    _start_file(store)


def read_top(store) -> dict | None:
    """``memory/context.top.json`` (None when absent or unreadable)."""
    try:
        top = json.loads(top_path(store).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return top if isinstance(top, dict) else None


def _start_file(store) -> None:
    """What the SessionStart hook prints, written for its light path (consolidate/store/views/recalled.py).
    Never raises: without it the next SessionStart takes the full path and writes it."""
    try:
        write_start_file(store.path)
    except Exception:  # noqa: BLE001
        pass


def _rank(row) -> tuple[int, str]:
    """Sort key of a context row: higher confidence first, then the later ``last_confirmed``."""
    meta = row["metadata"] or {}
    level = meta.get("confidence")
    return (_CONFIDENCE_ORDER.index(level) if level in _CONFIDENCE_ORDER else len(_CONFIDENCE_ORDER),
            _neg(meta.get("last_confirmed")))


def _bound(row) -> list:
    """A row's rank as ``context.top.json`` keeps it: ``[confidence index, last_confirmed]``."""
    return [_rank(row)[0], (row["metadata"] or {}).get("last_confirmed") or ""]


def _top_by_scan(lt, scope: str, limit: int, stale) -> list:
    """The top ``limit`` read from the index one confidence level at a time (stops once found)."""
    rows: list = []
    for level in _CONFIDENCE_ORDER:
        # disputed ones too, with their suffix (issue 12); metadata only, the documents of the chosen
        found = [r for r in lt.active(scope, confidence=level, statuses=RECALLED, documents=False)
                 if r["id"] not in stale]
        found.sort(key=lambda r: _neg(r["metadata"].get("last_confirmed")))
        rows += found[: limit - len(rows)]
        if len(rows) >= limit:
            break
    docs = lt.get([r["id"] for r in rows])
    return [{**r, "document": docs[r["id"]]["document"]} for r in rows if r["id"] in docs]


def _top_by_merge(top: dict, lt, scope: str, limit: int, size: int, touched: list[str], stale):
    """``(rows, all, bound)``: the top ``size`` candidates from the previous list ``top`` (as
    ``context.top.json`` holds it) and the ``touched`` ids (the first ``limit`` exact), whether they
    are every memory that could be shown, and the rank bound to record; None when the first
    ``limit`` may not be the true top (see :func:`write`)."""
    try:
        previous = [str(i) for i in top["ids"]]
        if top.get("scope") != scope or top.get("limit") != limit or not isinstance(top.get("all"), bool):
            return None
    except (KeyError, TypeError):
        return None
    ids = list(dict.fromkeys(previous + list(touched)))
    current = lt.get(ids)
    eligible = [{"id": i, **current[i]} for i in ids if i in current and i not in stale
                and (current[i]["metadata"] or {}).get("scope") == scope
                and (current[i]["metadata"] or {}).get("tier") == "durable"
                and (current[i]["metadata"] or {}).get("status") in RECALLED]
    eligible.sort(key=_rank)  # stable: the previous top keeps its order among equals
    rows = eligible[:size]
    if top["all"]:
        return rows, len(eligible) <= size, _bound(rows[-1]) if rows else None
    before = _rank_before(top)
    if before is None or len(rows) < limit or _rank(rows[limit - 1]) > before:
        return None
    # no memory outside ranks better than the old bound, nor than the last row kept here
    last = _bound(rows[-1])
    return rows, False, last if _rank(rows[-1]) <= before else top["last"]


def _rank_before(top) -> tuple[int, str] | None:
    """The bound the previous list recorded (its ``last`` entry) as a rank."""
    last = top.get("last")
    if isinstance(last, list) and len(last) == 2:
        return int(last[0]), _neg(str(last[1]))
    return None


def render(scope: str, lines: list[str], held: int = 0, held_ids: list[str] | tuple[str, ...] = ()) -> str:
    """``memory/context.md``: the notice that its lines are remembered notes, not instructions, and the
    memory lines that may be printed as context (the agent view's, consolidate/store/views/shown.py;
    ``held``: how many it held back, ``held_ids``: their ids, named on the "left out" line as every
    surface names them)."""
    kept, more = agent_view.held_lines(lines)
    out = [f"# Project memory ({scope}): the top {len(kept)} active memories", "", NOTICE, "", *kept]
    if held + more:
        out += ["", agent_view.held_back_line(held + more, () if more else held_ids)]
    return "\n".join(out) + "\n"


def _neg(date: str | None) -> str:
    """Sort key putting later ISO dates first."""
    return "".join(chr(0x10FFFF - ord(c)) for c in (date or ""))


def differences(store, limit: int = CONTEXT_MEMORIES) -> str | None:
    """What is wrong with ``memory/context.md`` and ``memory/context.top.json`` against the recall
    index (doctor), or None: the file must show a true top (every memory it shows live in its
    scope; as many as ``limit`` or every one; none left out ranking better than the weakest shown,
    so ties may be shown either way), each line as the memory's record renders now. Reads the top
    ``limit`` + 1 of the index (one confidence level at a time) and the shown memories by id."""
    lt = store.longterm()
    top = read_top(store)
    scope: str = top["scope"] if top and isinstance(top.get("scope"), str) else str(store.project)
    stale = read_section(store.path)["stale"]
    best = _top_by_scan(lt, scope, limit + 1, stale)
    try:
        text = path_of(store).read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError):
        text = ""
    if top is None or not isinstance(top.get("ids"), list):
        if not best and text is None:
            return None  # no memory to show, and no file
        return f"{'context.top.json is missing or unreadable' if top is None else 'context.top.json has no ids'};" \
               f" the recall index's top holds {min(limit, len(best))} memories"
    shown = [str(i) for i in top["ids"][: int(top.get("limit") or limit)]]
    rows = lt.get(shown)
    gone = [i for i in shown if i not in rows or i in stale
            or (rows[i]["metadata"] or {}).get("status") not in RECALLED
            or (rows[i]["metadata"] or {}).get("tier") != "durable"
            or (rows[i]["metadata"] or {}).get("scope") != scope]
    kept = [i for i in shown if i not in gone]
    worst = max((_rank({"metadata": rows[i]["metadata"]}) for i in kept), default=None)
    better = [r["id"] for r in best if r["id"] not in kept and (worst is None or _rank(r) < worst)]
    short = max(0, min(limit, len(best)) - len(kept)) if len(best) <= limit else max(0, limit - len(kept))
    got = agent_view.view([{"id": i, **rows[i]} for i in shown if i in rows], "session-start",
                          forgotten=agent_view.forgotten_ids(store))
    expected = render(scope, ["- " + line for line in got.lines], held=len(got.held), held_ids=got.held)
    parts = []
    if gone:
        parts.append(f"shows {len(gone)} memories the recall index does not hold live")
    if better or short:
        parts.append(f"leaves out {max(len(better), short)} of the top {min(limit, len(best))}")
    if text is None:
        parts.append("is missing")
    elif not gone and Counter(text.splitlines()) != Counter(expected.splitlines()):
        parts.append("does not match the memories it lists (cut or edited)")
    return "; ".join(parts) if parts else None
