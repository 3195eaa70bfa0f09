"""The HTML every page of ``consolidate ui`` is made of: the layout (navigation, the store line, a
read-only banner, a message line), tables, filters and the forms that post a decision.

Every text from the store is escaped here (:func:`e`); nothing else builds markup from store text.
The page loads ``/static/ui.css`` and ``/static/ui.js`` from the package (no CDN, works offline).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from consolidate.store.views import shown

#: The navigation bar: (path, label).
NAV = (("/", "Memories"), ("/review", "Review"), ("/runs", "Runs"), ("/overview", "Overview"))


def e(value: Any) -> str:
    """``value`` as text safe inside an element or a quoted attribute (None is ''), its control and
    bidi characters written visibly as every surface writes them (consolidate.store.views.shown.escaped)."""
    return "" if value is None else html.escape(shown.escaped(str(value)), quote=True)


def href(path: str, **params: Any) -> str:
    """A link to ``path`` with the non-empty ``params`` as its query string (escaped for an attribute)."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return e(path + ("?" + query if query else ""))


def memory_link(memory_id: str, text: str | None = None) -> str:
    """A link to one memory's page."""
    return f'<a href="{e("/memory/" + quote(memory_id, safe=""))}">{e(text or memory_id)}</a>'


def run_link(run_id: str | None) -> str:
    """A link to a run's row on the runs page ('' for no run)."""
    if not run_id:
        return ""
    return f'<a href="{e("/runs#" + run_id)}">{e(run_id)}</a>'


def page(title: str, body: str, *, active: str, store_line: str, read_only: bool, message: str = "",
         error: str = "", review_count: int | None = None) -> str:
    """A whole page: ``body`` (markup) under the navigation. ``message`` (text) is shown as a done
    line, ``error`` (text) as an error line; ``read_only`` adds a banner saying writes are refused."""
    nav = []
    for path, label in NAV:
        extra = f" ({review_count})" if path == "/review" and review_count else ""
        cls = ' class="active"' if path == active else ""
        nav.append(f'<a href="{e(path)}"{cls}>{e(label)}{e(extra)}</a>')
    banner = ('<p class="banner" role="status">This store is read-only: pages work, approve, decline, edit,'
              " forget and undo are refused.</p>") if read_only else ""
    msg = f'<p class="done" role="status" id="message">{e(message)}</p>' if message else ""
    err = f'<p class="error" role="alert" id="error">{e(error)}</p>' if error else ""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)} - consolidate</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="stylesheet" href="/static/ui.css"></head><body>'
            f'<header><strong>consolidate</strong><nav>{"".join(nav)}</nav>'
            f'<span class="store">{e(store_line)}</span></header>'
            f"<main><h1>{e(title)}</h1>{banner}{err}{msg}{body}</main>"
            '<script src="/static/ui.js"></script></body></html>')


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "", row_ids: Sequence[str] = ()) -> str:
    """A table: ``headers`` are text, each row's cells are markup (escape with :func:`e`)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        rid = f' id="{e(row_ids[i])}"' if i < len(row_ids) else ""
        body.append(f"<tr{rid}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="empty">nothing</td></tr>')
    return f'<table class="{e(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def select(name: str, options: Sequence[str], chosen: str | None, blank: str = "any") -> str:
    """A ``<select>`` of ``options`` with ``chosen`` selected and a first, empty option ``blank``."""
    opts = [f'<option value="">{e(blank)}</option>']
    opts += [f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o)}</option>' for o in options]
    return f'<select name="{e(name)}" id="f-{e(name)}">{"".join(opts)}</select>'


def action_form(action: str, label: str, token: str, version: str, *, disabled: bool, fields: str = "",
                cls: str = "", confirm: str = "") -> str:
    """A POST form to ``action`` carrying the page token and the ``version`` of what the page showed
    (a stale form is refused: consolidate.ui.actions). ``fields``: extra inputs (markup)."""
    dis = " disabled" if disabled else ""
    conf = f' data-confirm="{e(confirm)}"' if confirm else ""
    return (f'<form method="post" action="{e(action)}" class="act {e(cls)}"{conf}>'
            f'<input type="hidden" name="token" value="{e(token)}">'
            f'<input type="hidden" name="version" value="{e(version)}">{fields}'
            f'<button type="submit"{dis}>{e(label)}</button></form>')


def data_script(element_id: str, data: Any) -> str:
    """``data`` as JSON in a ``<script type="application/json">`` the page's script reads (``<`` is
    escaped so no text can close the element)."""
    text = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{e(element_id)}">{text}</script>'


def dl(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list: each pair is (label text, value markup)."""
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"
