"""The one agent view: what an agent or a user is shown about memories (issue 28, concern 1).

Every surface that shows memories (SessionStart and its fast start file, the compaction
re-injection, the PreToolUse / BeforeTool file recall, MCP ``recall``, ``graph`` and the session
tools, CLI ``recall``, a workspace's ``context/``, ``export`` to AGENTS.md / CLAUDE.md, ``review
--list``, ``disputes``, the pages of ``consolidate ui`` and the Python API) passes its memory rows
(``{"id", "document", "metadata"}``) through :func:`view` with its surface name, and prints
:attr:`Shown.lines`. The view applies, in this order:

1. **status and tombstones**: only the surface's statuses (active and disputed; quarantined ones
   where asked for, an as-of recall's superseded ones where asked for); a forgotten memory (status
   ``forgotten`` or a tombstone in ``archive/forgotten.jsonl``: :func:`forgotten_ids`) never, unless
   a later run wrote it again from a flagged or user-stated note (its ``restates`` metadata names
   the forget's run: consolidate/pipeline/stages/provenance.py); every caller passes the tombstones;
2. **drift and staleness** (consolidate.store.anchors, through :func:`drift_of`): ``[drifted: path]``
   after the line; a memory whose anchored file is gone is marked ``[stale: path gone]`` by recall
   and left out of a context;
3. **evidence as credited** (:func:`credited_evidence`): a judge's claim of ``user-stated`` for a note
   the agent wrote is shown as ``observed``, as the store credits it (the contradiction stage ranks
   it so: consolidate/pipeline/stages/credibility.py); the claim stays in ``claimed_evidence``;
4. **the context guard** (consolidate/rules/guard.py): a memory worded as an order or running remote
   code is held back, counted in one "left out" line (:attr:`Shown.held_line`);
5. **one size budget** (consolidate/rules/context_budget.py): each line cut to the surface's
   ``line_chars``, at most ``max_memories`` lines; the SessionStart context as a whole through
   :func:`fit_context`;

every string of a surface's JSON answer (``--json``, an MCP tool's) is written as its lines are,
through :func:`json_answer` (the stored text is unchanged); and the **echo record**
(consolidate.store.echo) of what was shown goes through :func:`record`, :func:`record_safely` or
:func:`record_digests`. :data:`SURFACES` lists every surface, the function
that renders it and how tests/unit/store/test_agent_view.py drives it; that test also fails when a module
outside this one calls the guard, the budget, the echo record, the drift marks or the line renderer
to show memories.

Light: the standard library, consolidate.core, consolidate.model.credit and .memory_line, the budget and the
echo record at module level; the guard (its patterns take 50-140 ms to compile), the anchors and the
tombstones when a view needs them (the light SessionStart hook imports this module for
:func:`record_digests`).
"""

from __future__ import annotations

from consolidate.core.vocab import (DECLINED, ENDED_STATUSES, FORGOTTEN as FORGOTTEN_STATUS, LIVE_STATUSES,
                                    MEMORY_STATUSES, QUARANTINED, RECALLED_STATUSES, REMOVED_STATUSES)
from consolidate.model import credit
from consolidate.model.memory_line import drift_suffix
from consolidate.store import echo
from consolidate.store.layout import FORGOTTEN
import json
from pathlib import Path
from collections.abc import Collection, Mapping
from consolidate.model.memory_line import marks, render_memory

TYPE_CHECKING = False  # typing is not imported at run time: the light SessionStart hook imports this module
if TYPE_CHECKING:
    from typing import Any, Iterable

    from consolidate.rules.context_budget import Fitted

#: The budget's line lengths (consolidate/rules/context_budget.py LINE_MAX_CHARS and
#: FILE_LINE_MAX_CHARS; tests/unit/store/test_agent_view.py checks they agree): that module is imported when
#: a context is fitted, not by the light hook.
LINE_MAX_CHARS = 1_000
FILE_LINE_MAX_CHARS = 240
CONTEXT_MAX_CHARS = 8_000

#: The credit rule (consolidate/model/credit.py), re-exported: the view owns what is shown.
JUDGED_MAX_RANK = credit.JUDGED_MAX_RANK
CREDITED_OBSERVED = credit.CREDITED_OBSERVED


class Surface:
    """One surface that shows memories: its ``name``, the ``renders`` function (``module:function``)
    that calls :func:`view` for it, how tests/unit/store/test_agent_view.py drives it (``driven_by``), and its
    view: the ``statuses`` shown by default, whether the line carries the ``[confidence, evidence,
    month]`` suffix, the longest line (characters, None: whole), the most lines (None: all the
    caller passes), and whether a stale memory is shown marked (recall) or left out (a context)."""

    __slots__ = ("name", "renders", "driven_by", "statuses", "suffix", "line_chars", "max_memories", "keep_stale")

    def __init__(self, name: str, renders: str, driven_by: str, *, statuses: tuple[str, ...] = RECALLED_STATUSES,
                 suffix: bool = True, line_chars: int | None = LINE_MAX_CHARS, max_memories: int | None = None,
                 keep_stale: bool = False) -> None:
        self.name, self.renders, self.driven_by, self.statuses = name, renders, driven_by, tuple(statuses)
        self.suffix, self.line_chars, self.max_memories, self.keep_stale = suffix, line_chars, max_memories, keep_stale

    def __repr__(self) -> str:
        return f"Surface({self.name!r}, {self.renders!r})"


#: What the store browser (``consolidate ui``) shows on a memory's own page and on an explicit status
#: filter: every status but a tombstoned one (forgotten, declined), whose text no surface shows.
BROWSED_STATUSES: tuple[str, ...] = tuple(s for s in (*MEMORY_STATUSES, *REMOVED_STATUSES) if s not in (FORGOTTEN_STATUS, DECLINED))

#: Every surface that shows memories to an agent or a user (issue 28's list).
SURFACES: tuple[Surface, ...] = (
    Surface("session-start", "consolidate.store.views.context_md:write",
            "`consolidate hook` SessionStart (source startup) on stdin; memory/context.md is written by each run"),
    Surface("session-start-fast", "consolidate.agents.hooks.fast_start:session_start",
            "`consolidate hook` SessionStart a second time: the start file written from the same context"),
    Surface("compact", "consolidate.store.views.recalled:recalled_context",
            "`consolidate hook` SessionStart with source compact (the re-injection after PreCompact)"),
    Surface("file-recall", "consolidate.agents.file_recall:file_context",
            "`consolidate hook` PreToolUse (Read, Edit) and BeforeTool (read_file) naming the file",
            suffix=False, line_chars=FILE_LINE_MAX_CHARS, max_memories=5),
    Surface("cli-recall", "consolidate.cli.commands.read:cmd_recall", "`consolidate recall QUERY`",
            keep_stale=True),
    Surface("python-api", "consolidate.pipeline.recall:recall", "consolidate.recall(store, query)",
            line_chars=None, keep_stale=True),
    Surface("mcp-recall", "consolidate.mcp.server:recall_result", "the MCP server's `recall` tool over stdio",
            keep_stale=True),
    Surface("mcp-graph", "consolidate.mcp.server:graph_result", "the MCP server's `graph` tool",
            suffix=False),
    Surface("cli-graph", "consolidate.cli.commands.read:cmd_graph", "`consolidate graph ENTITY`", suffix=False,
            statuses=(*RECALLED_STATUSES, QUARANTINED)),
    Surface("workspace-context", "consolidate.pipeline.workspace:context_memories",
            "`consolidate session start --task` (and MCP session_start): context/memories.md"),
    # each entry (its line and its marker) in the one line budget: one huge memory never fills the block
    # (its marker then holds no exact text: consolidate/agents/export_md.py marks it cut, an import leaves it out)
    Surface("export", "consolidate.agents.export_md:exportable", "`consolidate export --file AGENTS.md`"),
    Surface("review-list", "consolidate.pipeline.review:queue", "`consolidate review --list` and the MCP `review_list` tool",
            statuses=(*RECALLED_STATUSES, QUARANTINED), keep_stale=True),
    Surface("disputes", "consolidate.cli.commands.memory_cmd:cmd_disputes", "`consolidate disputes`",
            keep_stale=True),
    # consolidate ui (issue 33): a person's store browser; its pages show evidence, status and drift in
    # columns of their own (no suffix) and whole texts; a held back memory is named by its id
    Surface("ui-memories", "consolidate.ui.reads:listing",
            "`consolidate ui` Memories page (GET /, a search ?q=, status filters) in-process (Starlette TestClient)",
            statuses=LIVE_STATUSES, suffix=False, line_chars=None, keep_stale=True),
    Surface("ui-memory", "consolidate.ui.reads:memory", "`consolidate ui` one memory's page (GET /memory/ID)",
            statuses=BROWSED_STATUSES, suffix=False, line_chars=None, keep_stale=True),
    Surface("ui-review", "consolidate.pipeline.review:queue", "`consolidate ui` Review page (GET /review)",
            statuses=LIVE_STATUSES, suffix=False, line_chars=None, keep_stale=True),
    Surface("ui-runs", "consolidate.ui.reads:runs", "`consolidate ui` Runs page (GET /runs): what each run wrote",
            statuses=LIVE_STATUSES, suffix=False, line_chars=None, keep_stale=True),
)
_BY_NAME = {s.name: s for s in SURFACES}


def surface(name: str) -> Surface:
    """The surface called ``name``; KeyError for one not in :data:`SURFACES`."""
    return _BY_NAME[name]


class Shown:
    """What :func:`view` shows on a surface: ``rows`` (the rows shown, their metadata with the drift
    marks and the credited evidence), ``lines`` (one rendered line a row, no list marker),
    ``held`` (ids held back by the context guard), ``hidden`` (rows left out by status, tombstone or
    staleness), ``cut`` (rows left out by the surface's ``max_memories``)."""

    def __init__(self, surface: str) -> None:
        self.surface = surface
        self.rows: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.held: list[str] = []
        self.hidden = 0
        self.cut = 0

    @property
    def held_line(self) -> str:
        """The one line saying how many were held back, naming their ids ('' for none): every surface
        that shows rows says it so (consolidate.rules.guard.held_back_line)."""
        return held_back_line(len(self.held), self.held)

    @property
    def texts(self) -> list[str]:
        """The memory texts shown (what the echo record records)."""
        return [r["document"] for r in self.rows]


def credited_evidence(meta: dict[str, Any]) -> str | None:
    """The evidence a stored entry is shown with: its own, except a judge's claim (``source``
    ``judge:...``) ranked above what a judged entry is credited (:data:`JUDGED_MAX_RANK`), which is
    shown as :data:`CREDITED_OBSERVED`, unless the user approved it in review
    (consolidate.model.credit.credited_entry)."""
    return credit.credited_entry(meta)


def judge_claimed(meta: dict[str, Any]) -> bool:
    """Whether a stored entry's evidence is a judge's claim (``source`` ``judge:...``), not recorded
    with its notes (flagged, written by the user, imported)."""
    return credit.claimed_by_judge(meta.get("source"))


def credit_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` (a copy is changed and returned) with its evidence as credited (:func:`credited_evidence`)
    wherever it says it: the ``evidence`` key and its ``provenance``'s (a JSON object or its text), the
    claim kept only under ``claimed_evidence`` (top level). ``meta`` itself when nothing is credited
    other than claimed."""
    claim = meta.get("evidence")
    shown = credited_evidence(meta)
    if shown == claim:
        return meta
    out = {**meta, "evidence": shown, "claimed_evidence": claim}
    prov = out.get("provenance")
    if isinstance(prov, str) and prov.startswith("{"):
        try:
            parsed = json.loads(prov)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "evidence" in parsed:
            out["provenance"] = json.dumps({**parsed, "evidence": shown}, ensure_ascii=False)
    elif isinstance(prov, dict) and "evidence" in prov:
        out["provenance"] = {**prov, "evidence": shown}
    return out


def drift_marks(meta: dict[str, Any]) -> str:
    """The drift marks of a memory's metadata as :func:`view` left it (`` [drifted: a.py]``,
    `` [stale: a.py gone]``; '' for none), for a page that shows the status in a column of its own."""
    return drift_suffix(meta)


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: max(1, limit - 1)] + "…"


def escaped(text: str) -> str:
    """``text`` (line breaks kept) with the characters no surface shows raw written visibly: control
    characters (``\\x1b``), bidi controls (``\\u202e``: a note cannot show a command reversed), tag
    characters and the variation selectors that carry bytes (consolidate.rules.guard.printable, the one
    escape). What a page shows whole (``consolidate ui``, consolidate/ui/html.py ``e``) and a graph
    statement go through it; a line through :func:`text_of`; a JSON answer through :func:`json_answer`. Idempotent; right-to-left text without
    controls is unchanged."""
    from consolidate.rules.guard import printable  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

    return printable(text)


def json_answer(value: Any) -> Any:
    """A JSON answer that shows memories (``recall --json``, ``review --list --json``, ``disputes
    --json``, ``graph --json`` and every MCP tool's answer, which goes into the model's context) as
    every text surface writes it: each string in it, at any depth (``statement``, ``with``, a
    field's or a provenance's ``reason``, a relation...), through :func:`escaped`; keys, numbers and
    the structure kept. The stored text is unchanged (a review decision names its memory by id). A
    copy; idempotent."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, Mapping):
        return {k: json_answer(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_answer(v) for v in value]
    return value


def text_of(document: str) -> str:
    """A memory's text as a line shows it: on one line (whitespace runs one space), control and bidi
    characters written visibly (:func:`escaped`). Idempotent."""
    return escaped(" ".join(document.split()))


def line(document: str, meta: dict[str, Any], name: str = "cli-recall", room: int | None = None) -> str:
    """One memory as surface ``name`` shows it (its metadata as :func:`view` leaves it): the text on
    one line with control characters written visibly, cut so the line fits the surface's
    ``line_chars`` (or ``room``, less, when the surface's entry holds more than the line: export's
    marker), then the suffix and the status and drift marks."""
    s = surface(name)
    limit = s.line_chars if room is None or s.line_chars is None else min(room, s.line_chars)
    text = text_of(document)
    whole = render_memory(text, meta) if s.suffix else text + marks(meta)
    if limit is None or len(whole) <= limit:
        return whole
    tail = len(whole) - len(text)
    return (render_memory(_cut(text, limit - tail), meta) if s.suffix
            else _cut(text, limit - tail) + marks(meta))


def held_back(text: str) -> bool:
    """Whether the context guard (consolidate.rules.guard.unsafe_reason) holds back a memory of
    ``text`` whose metadata has no fields (file recall's rows): what :func:`view` decides for it.
    File recall's table (consolidate/store/index/file_table.py) keeps the answer per memory."""
    from consolidate.rules.guard import unsafe_reason  # noqa: PLC0415 - off the hook paths (rules.guard)

    return bool(unsafe_reason(text))


def view(rows: Iterable[dict[str, Any]], name: str, *, drift: dict[str, dict] | None = None,
         forgotten: Mapping[str, Collection[str]] | Iterable[str], statuses: tuple[str, ...] | None = None,
         held: Collection[str] | None = None) -> Shown:
    """What surface ``name`` shows of ``rows`` (``{"id", "document", "metadata"}``, in the order to
    show them), in the order of the module docstring. ``drift``: :func:`drift_of`'s answer for
    the rows (None: their metadata's own ``drifted``/``stale`` marks); ``forgotten``: the
    tombstones, :func:`forgotten_ids`'s ``{id: the forget runs}`` (required, so that no surface
    starts without them; an iterable of ids: never shown whatever their metadata): a row of such an id
    is hidden unless every forget run of it is the one its ``restates`` metadata names; ``statuses``: in place of the surface's (``--all``, an as-of
    recall); ``held``: the ids of the rows :func:`held_back` holds back, computed earlier (file recall's
    table), used for the rows whose metadata has no fields (None: the guard is run here). Pure;
    KeyError for an unknown surface."""
    s = surface(name)
    allowed = tuple(statuses or s.statuses)
    runs = forgotten if isinstance(forgotten, Mapping) else dict.fromkeys(forgotten, ())
    restated = set()
    out = Shown(surface=s.name)
    for r in rows:
        meta = dict(r.get("metadata") or {})
        doc = r.get("document")
        if r.get("id") in runs and _restated(meta, runs[r["id"]]):
            restated.add(r["id"])
        if (not isinstance(doc, str) or not doc.strip() or (r.get("id") in runs and r["id"] not in restated)
                or (meta.get("status") or "active") not in allowed):
            out.hidden += 1
            continue
        d = (drift or {}).get(r.get("id") or "")
        if d is not None:
            meta["drifted"], meta["stale"] = ",".join(d.get("drifted") or ()), ",".join(d.get("stale") or ())
        if meta.get("stale") and not s.keep_stale:
            out.hidden += 1
            continue
        meta = credit_metadata(meta)
        fields = _field_texts(meta)
        if r.get("id") in held if held is not None and not fields else _unsafe(" ".join([doc, *fields])):
            out.held.append(str(r.get("id")))
            continue
        if s.max_memories is not None and len(out.rows) >= s.max_memories:
            out.cut += 1
            continue
        out.rows.append(_unlinked({**r, "metadata": meta}, runs.keys() - restated))
        out.lines.append(line(doc, meta, s.name))
    return out


def _restated(meta: dict[str, Any], forget_runs: Collection[str]) -> bool:
    """Whether a row of a tombstoned id was written again after its forget: its ``restates`` names
    the run of every tombstone of the id (a forget after the restatement hides it again)."""
    return bool(forget_runs) and bool(meta.get("restates")) and set(forget_runs) <= {meta["restates"]}


def _unlinked(row: dict[str, Any], gone: Collection[str]) -> dict[str, Any]:
    """``row`` without a link to a forgotten memory: its ``disputed_with`` (metadata) and the ids of
    its ``with`` (the entries it disputes) never name one (one side of a dispute forgotten)."""
    if row["metadata"].get("disputed_with") in gone:
        row["metadata"] = {k: v for k, v in row["metadata"].items() if k != "disputed_with"}
    if isinstance(row.get("with"), list):
        row["with"] = [o for o in row["with"] if o not in gone]
    return row


def _unsafe(text: str) -> bool:
    from consolidate.rules.guard import unsafe_reason  # noqa: PLC0415 - off the hook paths (rules.guard)

    return bool(unsafe_reason(text))


def _field_texts(meta: dict[str, Any]) -> list[str]:
    """The texts of a memory's fields (``rationale``, ...): they are shown with it by export."""
    raw = meta.get("fields")
    if not isinstance(raw, str) or raw in ("", "{}"):
        return []

    try:
        fields = json.loads(raw)
    except ValueError:
        return []
    return [str(v) for v in fields.values() if v] if isinstance(fields, dict) else []


#: What a graph answer shows of a memory the context guard holds back.
GRAPH_HELD_BACK = "(held back: worded as an instruction to the agent)"


def graph_view(res: dict[str, Any], store, name: str = "mcp-graph") -> dict[str, Any]:
    """A graph answer (consolidate.store.graph.relations_of: ``{"relations", "memories": {id:
    {"statement", "status", ...}}}``) as surface ``name`` shows it: forgotten memories and those of
    other statuses dropped (and from the relations' ``memory_ids``), a held back one's statement
    replaced by :data:`GRAPH_HELD_BACK`, and a memory whose anchored code changed or is gone
    (:func:`drift_of`) marked as every surface marks it: ``[drifted: path]`` / ``[stale: path gone]``
    after its statement, the paths under ``drifted`` / ``stale`` (lists). A relation that only hidden
    memories state is dropped, and an entity that only hidden memories name is ``found: False`` (a
    forgotten memory's names are not shown either). Changes and returns ``res``."""
    memories = res.get("memories", {})
    drift = drift_of(store, list(memories)) if memories else {}
    got = view([{"id": mid, "document": m.get("statement") or "", "metadata": {"status": m.get("status")}}
                for mid, m in memories.items()], name, forgotten=forgotten_ids(store), drift=drift)
    shown = {r["id"] for r in got.rows} | set(got.held)
    by_id = {r["id"]: r["metadata"] for r in got.rows}
    for mid in list(memories):
        if mid in got.held:
            memories[mid]["statement"] = GRAPH_HELD_BACK
        elif mid not in shown:
            del memories[mid]
        else:  # its text as every surface writes it (bidi and control characters visible), then its marks
            memories[mid]["statement"] = escaped(memories[mid].get("statement") or "") + drift_suffix(by_id[mid])
            d = drift.get(mid) or {}
            memories[mid].update({k: list(d[k]) for k in ("drifted", "stale") if d.get(k)})
    had_memories = bool(memories) or any(r.get("memory_ids") for r in res.get("relations", []))
    kept = []
    for r in res.get("relations", []):
        ids = r.get("memory_ids", [])
        r["memory_ids"] = [m for m in ids if m in shown]
        if r["memory_ids"] or not ids:  # a relation only hidden memories state is not shown either
            kept.append(r)
    if "relations" in res:
        res["relations"] = kept
    if had_memories and not memories and not kept:
        res["found"] = False  # only hidden memories name it: its name is not shown as known either
    return res


def as_of_statuses(include_quarantined: bool) -> tuple[str, ...]:
    """The statuses an as-of recall shows: those of its day, superseded and expired ones included."""
    return (*RECALLED_STATUSES, *ENDED_STATUSES, *((QUARANTINED,) if include_quarantined else ()))


def drift_of(store, ids: Iterable[str] | None, *, root=None, update: bool | None = None) -> dict[str, dict]:
    """The drift of the memories ``ids`` (None: every anchored memory) in ``store`` (a Store or a
    store folder): consolidate.store.anchors.check's ``{id: {"drifted": [paths], "stale": [paths]}}``
    for those whose anchored code moved; the drift queue is updated unless ``update`` is False (by
    default: when the store is writable). {} when the check cannot run (a drift check never fails a
    surface)."""
    from consolidate.store import anchors  # noqa: PLC0415 - off the SessionStart hook path (4 modules)

    wanted = None if ids is None else [i for i in ids if isinstance(i, str)]
    if wanted is not None and not wanted:
        return {}
    path = Path(getattr(store, "path", store))
    try:
        top = root if root is not None else (anchors.project_root(store) if hasattr(store, "path") else None)
        writable = getattr(store, "writable", True) if update is None else update
        return anchors.check(path, wanted, root=top, update=writable)
    except Exception:  # noqa: BLE001
        return {}


def forgotten_ids(store) -> dict[str, frozenset[str]]:
    """The memories forgotten in ``store`` (a Store or a store folder), ``{id: the runs of its
    tombstones}``: ``archive/forgotten.jsonl`` (consolidate/store/forgotten.py writes it); empty when
    unreadable. :func:`view` takes it."""
    from consolidate.core.jsonl import read_lines  # noqa: PLC0415 - off the SessionStart hook path (core.jsonl)

    try:
        rows = read_lines(FORGOTTEN.of(getattr(store, "path", store)))
    except (OSError, ValueError):
        return {}
    out: dict[str, set[str]] = {}
    for r in rows:
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            out.setdefault(r["id"], set()).add(str(r.get("run_id") or ""))
    return {i: frozenset(v) for i, v in out.items()}


def context_text(store_path) -> str | None:
    """``memory/context.md`` as the SessionStart hook prints it: the drift check of its memories'
    code anchors applied (consolidate.store.anchors.context_text: ``[drifted: path]`` after a line, a
    stale one left out); None without ``memory/context.json``."""
    from consolidate.store import anchors  # noqa: PLC0415 - off the SessionStart hook path (4 modules)

    text = anchors.context_text(store_path)
    if text is None:
        return None
    return "\n".join(_fit_line(ln, LINE_MAX_CHARS + 2) if ln.startswith("- ") else ln
                     for ln in text.split("\n"))


def _fit_line(rendered: str, limit: int) -> str:
    """A rendered memory line (``- text [suffix] [marks]``) within ``limit`` characters: its text cut
    with an ellipsis, its suffix and marks kept (the drift mark is added as the context is printed)."""
    if len(rendered) <= limit:
        return rendered
    m = echo.SUFFIX.search(rendered)
    head, tail = (rendered[: m.start()], rendered[m.start():]) if m else (rendered, "")
    return _cut(head, max(3, limit - len(tail))) + tail


def guard_context(context: str) -> str:
    """A context text (``memory/context.md``) as it may be printed: control characters written
    visibly, memory lines worded as orders or running remote code left out with the one "left out"
    line, and the notice that these are notes, not instructions, on top."""
    from consolidate.rules.guard import NOTICE, filter_lines, held_back_line, printable  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

    lines, held = filter_lines(printable(context).splitlines())
    if NOTICE not in lines:
        lines[1:1] = ["", NOTICE] if lines and lines[0].startswith("#") else [NOTICE, ""]
    if held:
        lines += ["", held_back_line(held)]
    return "\n".join(lines).strip()


def held_lines(lines: list[str]) -> tuple[list[str], int]:
    """Rendered memory lines (``- ...``) a context may hold (consolidate.rules.guard.filter_lines)
    and how many were held back."""
    from consolidate.rules.guard import filter_lines  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

    return filter_lines(lines)


def held_back_line(held: int, ids: Iterable[str] = ()) -> str:
    """The one "left out" line for ``held`` memories held back, naming ``ids`` when known ('' for none)."""
    from consolidate.rules.guard import held_back_line as _line  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

    return _line(held, ids) if held else ""


def fit_context(core: str, memories: str, max_chars: int = CONTEXT_MAX_CHARS, reserve: int = 0) -> Fitted:
    """The SessionStart context in its one size budget (consolidate.rules.context_budget.fit)."""
    from consolidate.rules.context_budget import fit  # noqa: PLC0415 - keeps `consolidate --help` light (16 modules)

    return fit(core, memories, max_chars, reserve=reserve)


def record(tier, session_id: str | None, texts: Iterable[str]) -> None:
    """Record the memory ``texts`` as shown to ``session_id`` (consolidate.store.echo.record_shown)."""
    echo.record_shown(tier, session_id, texts)


def record_digests(tier, session_id: str | None, digests: list[str]) -> None:
    """:func:`record` for texts already digested (the start file holds its context's digests)."""
    echo.record_digests(tier, session_id, digests)


def record_safely(store, session_id: str | None, texts: Iterable[str]) -> bool:
    """:func:`record` on ``store``'s session tier; never raises; whether it recorded."""
    return echo.record_shown_safely(store, session_id, texts)


def record_lines(tier, session_id: str | None, rendered: str) -> None:
    """Record the memory lines of a rendered context (``- text [suffix]``) as shown."""
    echo.record_shown(tier, session_id, echo.memory_texts(rendered))
