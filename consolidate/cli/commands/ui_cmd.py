"""``consolidate ui``: the local web page over the store (consolidate/ui/; imports Starlette and
Uvicorn only when run)."""

from __future__ import annotations

import sys

from consolidate.cli.commands import open_store
from consolidate.core.errors import BadInput, ConfigError
from consolidate.ui.server import LOOPBACK, serve


def cmd_ui(args) -> int:
    """Serve the pages until Ctrl-C; prints the URL with its token. Returns 0."""
    try:
        pass
    except ImportError as exc:  # starlette or uvicorn missing (they come with the mcp package)
        raise ConfigError(f"consolidate ui needs starlette and uvicorn (pip install 'mcp>=2,<3'): {exc}") from None

    # opened once here, so a bad --store or embedding is a one-line error before the server starts; the
    # server opens its own Store on the same folder, on its store thread
    store = open_store(args, create=False)
    store.close()
    path, chroma_url, embedding, project = store.path, store.chroma_url, store.embedding_name, store.project
    if args.host not in LOOPBACK:
        sys.stderr.write(f"consolidate ui: warning: listening on {args.host}, beyond this machine: anyone who can"
                         " reach it and has the token can read the store and change it\n")
    if not store.exists:
        sys.stderr.write(f"consolidate ui: no store at {path} yet: the pages are empty until a run writes one\n")

    kind = type(store)  # consolidate.store.store.Store, without importing it again here

    def opener():
        return kind(path, chroma_url=chroma_url, embedding=embedding, project=project, create=False)

    try:
        serve(opener, host=args.host, port=args.port, open_browser=not args.no_browser,
              announce=lambda line: print(line, flush=True))
    except OSError as exc:
        raise BadInput(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0
