"""The five pages of ``consolidate ui`` (Memories, one memory, Review, Runs, Overview) and the error
page, rendered on the server from what consolidate.ui.reads reads. Each page function takes the
store and a :class:`View` (the token the forms carry, the message to show) and returns the markup
of the page's body; consolidate.ui.server wraps it in the layout (consolidate.ui.html.page)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from consolidate.core.dates import display
from consolidate.core.errors import ConsolidateError
from consolidate.core.vocab import EVIDENCE_KINDS, LIVE_STATUSES, MEMORY_TYPES
from consolidate.pipeline import review
from consolidate.rules.redaction import error_text
from consolidate.store.views import shown
from consolidate.ui import reads
from consolidate.ui.html import action_form, data_script, dl, e, href, memory_link, run_link, select, table
from consolidate.ui.timeline import timeline


@dataclass
class View:
    """What every page needs besides the store: ``token`` (posted back by the forms), ``writable``
    (False: the forms are shown disabled)."""

    token: str
    writable: bool


def _marks(meta: dict[str, Any]) -> str:
    """The drift and status marks of a memory as the agent view left its metadata
    (``[drifted: a.py]``, ``[quarantined]``) as markup."""
    out = ""
    if meta.get("status") not in (None, "active"):
        out += f' <span class="tag st-{e(meta["status"])}">{e(meta["status"])}</span>'
    marks = shown.drift_marks(meta).strip()
    return out + (f' <span class="tag drift">{e(marks)}</span>' if marks else "")


def _evidence(meta: dict[str, Any]) -> str:
    """The evidence as credited (the agent view), and a judge's claim above it as a detail."""
    claimed = meta.get("claimed_evidence")
    return e(meta.get("evidence")) + (f' <span class="claimed muted">(claimed: {e(claimed)})</span>' if claimed else "")


def _statement(r: dict[str, Any]) -> str:
    """A memory's link as a list shows it: its text, or the held back line in place of it."""
    link = memory_link(r["id"], r["document"])
    return f'<span class="held">{link} <code>{e(r["id"])}</code></span>' if r.get("held_back") else link


def _provenance(meta: dict[str, Any]) -> str:
    """Session, run, judge, prompt version and note ids of a memory, as one cell (three short lines)."""
    prov = reads.loads(meta.get("provenance"))
    prov = prov if isinstance(prov, dict) else {}
    notes = prov.get("note_ids") or []
    lines = [f"session {e(prov.get('session_id') or meta.get('session_id') or '?')} · run "
             + (run_link(prov.get("run_id") or meta.get("run_id")) or "?"),
             f"judge {e(prov.get('source') or meta.get('source') or '?')}"]
    if prov.get("prompt_version") or meta.get("prompt_version"):
        lines[-1] += f" · prompt {e(prov.get('prompt_version') or meta.get('prompt_version'))}"
    if notes:
        lines.append(f"notes {e(', '.join(str(n) for n in notes[:8]))}" + ("…" if len(notes) > 8 else ""))
    return '<span class="prov">' + "<br>".join(lines) + "</span>"


def _anchors_cell(meta: dict[str, Any]) -> str:
    anchors = reads.loads(meta.get("anchors"))
    if not isinstance(anchors, list) or not anchors:
        return '<span class="muted">none</span>'
    paths = sorted({str(a.get("path")) for a in anchors if isinstance(a, dict)})
    return e(", ".join(paths[:3]) + (f" +{len(paths) - 3}" if len(paths) > 3 else ""))


def _filters(f: reads.Filters) -> str:
    return ('<form method="get" action="/" class="filters" id="filters">'
            f'<input type="search" name="q" id="f-q" value="{e(f.q)}" placeholder="search (the recall of the CLI)"'
            ' size="32">'
            f'<label>type {select("type", MEMORY_TYPES, f.type)}</label>'
            f'<label>status {select("status", ("all", *reads.STATUSES), f.status, blank="live")}</label>'
            f'<label>evidence {select("evidence", EVIDENCE_KINDS, f.evidence)}</label>'
            f'<label>confirmed from <input type="date" name="since" id="f-since" value="{e(f.since)}"></label>'
            f'<label>to <input type="date" name="until" id="f-until" value="{e(f.until)}"></label>'
            '<button type="submit" id="f-go">Show</button> <a href="/">clear</a></form>')


def _counts(counts: dict[str, dict[str, int]]) -> str:
    """The type x status table of counts, each number a link to that filter."""
    statuses = [s for s in reads.STATUSES if any(s in by for by in counts.values())]
    rows = []
    for type_ in sorted(counts, key=lambda t: MEMORY_TYPES.index(t) if t in MEMORY_TYPES else 99):
        by = counts[type_]
        cells = [f'<a href="{href("/", type=type_, status="all")}">{e(type_)}</a>']
        cells += [f'<a href="{href("/", type=type_, status=s)}">{by[s]}</a>' if by.get(s) else "" for s in statuses]
        rows.append(cells)
    return table(["type", *statuses], rows, cls="counts")


def memories_page(store, view: View, f: reads.Filters) -> str:
    """Memories: the counts by type and status, the filters and search, and one page of memories."""
    got = reads.listing(store, f)
    rows = []
    for r in got.rows:
        meta = r["metadata"] or {}
        sim = f'<span class="sim">{r["similarity"]:.2f} {e(r.get("match") or "")}</span>' if "similarity" in r else ""
        rows.append([_statement(r) + _marks(meta) + sim, e(meta.get("type")),
                     e(meta.get("status")), f"{_evidence(meta)}<br>{e(meta.get('confidence'))}",
                     e(meta.get("last_confirmed")), _anchors_cell(meta), _provenance(meta)])
    what = f"{got.total} memories" + (f" found for {f.q!r}" if got.searched else "")
    pages = -(-got.total // reads.PAGE_SIZE)
    nav = ""
    if pages > 1:
        params = {"q": f.q, "type": f.type, "status": f.status if f.status != "live" else "", "evidence": f.evidence,
                  "since": f.since, "until": f.until}
        nav = '<p class="pager">' + " ".join(
            f'<a href="{href("/", **params, page=p)}"{" class=active" if p == f.page else ""}>{p}</a>'
            for p in range(1, pages + 1)) + "</p>"
    note = f'<p class="note">{e(got.note)}</p>' if got.note else ""
    if got.held:  # as `consolidate recall` names them
        note += (f'<p class="note" id="held">held back: {", ".join(memory_link(m) for m in got.held)} '
                 f'{e(shown.held_back_line(len(got.held)))}</p>')
    if got.unlisted:
        note += (f'<p class="note" id="unlisted">{got.unlisted} forgotten or declined not listed: their text is'
                 " never shown (undo the run that forgot one on the Runs page to bring it back)</p>")
    return (_counts(got.counts) + _filters(f) + f'<p id="total">{e(what)}; page {f.page} of {max(pages, 1)}</p>'
            + note + table(["memory", "type", "status", "evidence", "last confirmed", "anchors", "provenance"], rows,
                           cls="memories", row_ids=[f"m-{r['id']}" for r in got.rows]) + nav)


def _event_line(ev: dict[str, Any], memory_id: str) -> list[str]:
    detail = {k: v for k, v in ev.items() if k not in ("ts", "event", "run_id", "session_id", "seq", "memory_id",
                                                       "statement", "fields", "note_ids", "reason")}
    if shown.credited_evidence(detail) != detail.get("evidence"):  # a judge's claim: as credited, the claim kept
        detail["claimed_evidence"], detail["evidence"] = detail["evidence"], shown.credited_evidence(detail)
    other = ev.get("memory_id") if ev.get("memory_id") not in (None, memory_id) else None
    return [e(ev.get("ts")), e(ev.get("event")) + (" of " + memory_link(other) if other else ""),
            run_link(ev.get("run_id")), e(ev.get("reason")),
            f'<code>{e(json.dumps(detail, ensure_ascii=False)[:300])}</code>' if detail else ""]


def _links(meta: dict[str, Any], hist: list[dict[str, Any]], memory_id: str) -> list[tuple[str, str]]:
    """What the memory superseded, what superseded it, and its re-confirmations."""
    prov = reads.loads(meta.get("provenance"))
    prov = prov if isinstance(prov, dict) else {}
    out = []
    older = {ev["memory_id"] for ev in hist if ev.get("event") == "memory.superseded" and ev.get("memory_id") != memory_id}
    older |= {prov["supersedes"]} if isinstance(prov.get("supersedes"), str) else set()
    if older:
        out.append(("supersedes", ", ".join(memory_link(m) for m in sorted(older))))
    if meta.get("superseded_by"):
        out.append(("superseded by", memory_link(str(meta["superseded_by"]))))
    confirmed = [ev for ev in hist if ev.get("event") == "memory.reconfirmed"]
    out.append(("re-confirmations", f"{len(confirmed)}" + (f", last {e(confirmed[-1].get('ts'))}" if confirmed else "")))
    return out


def memory_page(store, view: View, memory_id: str) -> str:
    """One memory: its fields, provenance, anchors, links and history, with forget (review actions
    when it waits for review). Raises BadInput for an unknown id."""
    r = reads.memory(store, memory_id)
    meta = r["metadata"] or {}
    hist = reads.history(store, memory_id)
    fields = reads.loads(meta.get("fields"))
    hidden = ' class="held"' if r.get("held_back") or r.get("forgotten") else ""
    pairs = [("id", e(r["id"])), ("statement", f'<span id="statement"{hidden}>{e(r["document"])}</span>' + _marks(meta)),
             ("type", e(meta.get("type"))), ("status", f'<span id="status">{e(meta.get("status"))}</span>'),
             ("evidence", f'<span id="evidence">{_evidence(meta)}</span>'), ("confidence", e(meta.get("confidence"))),
             ("last confirmed", e(meta.get("last_confirmed"))), ("valid from", e(meta.get("valid_from"))),
             ("tier", e(meta.get("tier"))), ("scope", e(meta.get("scope"))),
             ("fields", e(", ".join(f"{k}: {v}" for k, v in fields.items())) if isinstance(fields, dict) else e(fields)),
             ("provenance", _provenance(meta)),
             ("anchors", e(", ".join(f"{a['path']}" + (f":{a['symbol']}" if a.get("symbol") else "")
                                     for a in reads.anchors_of(store, memory_id))) or _anchors_cell(meta))]
    if r["archived"]:
        a = r["archived"]
        pairs.append(("archived", f"{e(a.get('archived_at'))} by {run_link(a.get('archived_by'))}: "
                                  f"{e(a.get('archived_reason'))} (undo that run on the Runs page to bring it back)"))
    pairs += _links(meta, hist, memory_id)
    acts = ""
    if not r["archived"]:
        version = reads.stored_version(store, memory_id) or ""
        base = "/memory/" + quote(memory_id, safe="")
        acts = ('<h2>Forget</h2><p>Archives it with a tombstone: a later session does not bring it back unless'
                ' the user states it or the note is flagged.</p>'
                + action_form(base + "/forget", "Forget", view.token, version, disabled=not view.writable,
                              cls="forget", confirm="Forget this memory?",
                              fields='<input name="reason" placeholder="why it is wrong (optional)" size="40">'))
        if meta.get("status") in LIVE_STATUSES and meta.get("status") != "active":
            acts += f'<p><a href="{href("/review")}#r-{e(memory_id)}">decide it on the Review page</a></p>'
    return (dl(pairs) + acts + "<h2>History</h2>"
            + table(["when", "event", "run", "reason", "detail"], [_event_line(ev, memory_id) for ev in hist],
                    cls="history"))


def review_page(store, view: View) -> str:
    """Review: the queue (disputed, quarantined, drifted, stale) with approve, decline and edit."""
    entries = review.queue(store, "ui-review")
    rows = []
    for entry in entries:
        mid = entry["id"]
        version = reads.stored_version(store, mid) or ""  # what the store holds (the entry is as shown)
        base = "/memory/" + quote(mid, safe="")
        off = not view.writable
        forms = (action_form(base + "/approve", "Approve", view.token, version, disabled=off, cls="approve")
                 + action_form(base + "/decline", "Decline", view.token, version, disabled=off, cls="decline",
                               fields='<input name="reason" placeholder="why (optional)" size="18">')
                 + action_form(base + "/edit", "Edit", view.token, version, disabled=off, cls="edit",
                               fields='<input name="text" value="{}" size="40" required>'.format(
                                   "" if entry.get("held_back") else e(entry["statement"]))))
        with_ = ("<br>disputes with " + ", ".join(memory_link(o) for o in entry["with"])) if entry["with"] else ""
        drift = ", ".join(entry["drifted"] + entry["stale"])
        held = f" <code>{e(mid)}</code>" if entry.get("held_back") else ""
        rows.append([memory_link(mid, entry["statement"]) + held + _marks(entry["metadata"]) + with_,
                     e(", ".join(entry["reasons"])), e(entry["type"]), e(drift), forms])
    return (f'<p id="total">{len(entries)} waiting for review. Approve: the memory holds (active, user-stated).'
            " Decline: it is wrong (archived with a tombstone). Edit: your wording replaces it.</p>"
            + table(["memory", "waits for", "type", "code", "decide"], rows, cls="review",
                    row_ids=[f"r-{x['id']}" for x in entries]))


def _summary_cell(s: dict[str, Any]) -> str:
    keys = (("notes", "notes"), ("notes_keep", "kept"), ("notes_drop", "dropped"), ("written_durable", "written"),
            ("written_quarantined", "quarantined"), ("rejected", "rejected"), ("reconfirmed", "re-confirmed"))
    return e(", ".join(f"{label} {s[k]}" for k, label in keys if s.get(k)))


def _wrote_item(ev: dict[str, Any]) -> str:
    """One thing a run wrote: a new memory (its text and status) or a change (its event and status)."""
    if ev.get("event") == "memory.written":  # its statement as reads.runs left it (None: not shown)
        what = f"{ev.get('status') or ''}{' transient' if ev.get('tier') == 'transient' else ''}"
        text = ev["statement"][:90] if ev.get("statement") else None
        marks = f' <span class="tag drift">{e(ev["marks"].strip())}</span>' if ev.get("marks") else ""
        return f"<li>{memory_link(ev['memory_id'], text)}{marks} <span class=muted>{e(what)}</span></li>"
    changes = ev.get("changes") if isinstance(ev.get("changes"), dict) else {}
    status = f" → {changes['status']}" if isinstance(changes, dict) and changes.get("status") else ""
    return f"<li>{memory_link(ev['memory_id'])} <span class=muted>{e(str(ev.get('event')) + status)}</span></li>"


def runs_page(store, view: View) -> str:
    """Runs: every run with its counts and what it wrote, with undo."""
    rows, ids = [], []
    for run in reads.runs(store):
        rid = run["run_id"]
        wrote = "".join(_wrote_item(w) for w in run["written"][:50])
        more = f"<li>… {len(run['written']) - 50} more</li>" if len(run["written"]) > 50 else ""
        transient = sum(1 for w in run["written"] if w.get("tier") == "transient")
        new = sum(1 for w in run["written"] if w.get("event") == "memory.written")
        label = ", ".join(([f"{new} written" + (f" ({transient} transient: not indexed)" if transient else "")]
                           if new else []) + ([f"{len(run['written']) - new} changed"] if len(run["written"]) > new
                                              else []))
        wrote = f"<details><summary>{e(label)}</summary><ul>{wrote}{more}</ul></details>" if run["written"] else ""
        state = "undone" if run["undone"] else ("partial" if run.get("partial") else "")
        act = "" if run["undone"] else action_form(
            "/runs/" + quote(rid, safe="") + "/undo", "Undo", view.token, reads.run_version(run),
            disabled=not view.writable, cls="undo", confirm=f"Undo run {rid}?")
        when = display(run["started_at"]) if isinstance(run.get("started_at"), (int, float)) else run.get("started_at")
        rows.append([e(rid), e(when), e(run["session_id"]), e(run.get("outcome")),
                     f"+{run['added']} added, {run['changed']} changed<br>{_summary_cell(run['summary'])}",
                     wrote, e(state), act])
        ids.append(rid)
    return (f'<p id="total">{len(rows)} runs, newest first. Undo reverts a run: what it added goes, what it'
            " changed comes back.</p>" + table(["run", "started", "session", "outcome", "counts", "wrote", "state",
                                                 ""], rows, cls="runs", row_ids=ids))


def overview_page(store, view: View) -> str:
    """Overview: memories by status after each run, and notes judged, kept and dropped per run, drawn
    by the page's script (/static/ui.js) from the data in the page; the same numbers as tables."""
    data = timeline(store)
    last = data["points"][-1]["counts"] if data["points"] else dict.fromkeys(data["series"], 0)
    points = [[e(p["at"]), run_link(p["run_id"]), e(p["event"]), *(str(p["counts"][s]) for s in data["series"])]
              for p in data["points"][-30:]]
    bars = [[e(b["at"]), run_link(b["run_id"]), str(b["notes"]), str(b["kept"]), str(b["dropped"])]
            for b in data["runs"][-30:]]
    return (dl([(s, f'<span id="now-{e(s)}">{last[s]}</span>') for s in data["series"]])
            + '<h2>Memories by status, after each run</h2><canvas id="chart-status" width="900" height="260"></canvas>'
            + '<h2>Notes per run: judged, kept, dropped</h2><canvas id="chart-runs" width="900" height="220"></canvas>'
            + data_script("overview-data", data)
            + "<details><summary>the numbers (last 30)</summary>"
            + table(["when", "run", "event", *data["series"]], points, cls="points")
            + table(["when", "run", "notes", "kept", "dropped"], bars, cls="bars") + "</details>")


def error_line(exc: BaseException) -> str:
    """The line a page shows for a request it refused or could not answer: the error's one line
    through the secret gate (consolidate.rules.redaction; a registered sink), the class name for an
    error consolidate did not raise on purpose."""
    return error_text(exc, typed=not isinstance(exc, ConsolidateError), limit=600)


def error_body() -> str:
    """The body of a page that could not be made: nothing changed, and the way back."""
    return '<p>Nothing was changed. <a href="/">Memories</a></p>'
