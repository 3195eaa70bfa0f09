"""``consolidate ui``: a local web page to browse, search and review the store.

Five pages, rendered on the server (consolidate.ui.pages) from what the CLI's owners read
(consolidate.ui.reads): **Memories** (by type and status, with evidence, confidence, last
confirmation, drift marks, anchors and provenance; search through recall; filters), **one memory**
(its fields, links and history, with forget), **Review** (the review queue with approve, decline and
edit), **Runs** (every run with its counts and what it wrote, with undo) and **Overview** (counts
over time, drawn by the page's own script). The decisions run as the CLI runs them
(consolidate.ui.actions). The server (consolidate.ui.server) listens on 127.0.0.1 and refuses every
request without its token. Starlette and Uvicorn come with the MCP SDK; this package is imported
only by ``consolidate ui``.
"""
