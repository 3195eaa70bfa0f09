"""What the commands do, one module per group (their parsers: consolidate.cli.parsers, which names the
function each command runs; a command's module is imported when it runs). Each module imports what it
needs at module level. What every command shares: :func:`open_store`."""

from __future__ import annotations

from consolidate.cli.parsers import COMMANDS, MODULES  # noqa: F401 - the command table, also named here
from consolidate.core.private import prepare_store_dir
from consolidate.store.layout import GITIGNORE
from consolidate.store.store import Store


def open_store(args, create: bool = True, writes: bool | None = None):
    """The Store named by ``--store``/``--chroma-url``/``--embedding``/``--project`` (or their
    environment variables). ``create=False`` for commands that only read or plan: they never create
    a store. ``writes`` (default: ``create``) refuses a read-only store at once with StoreReadOnly
    (one line), before anything is written."""

    store = Store(args.store, chroma_url=args.chroma_url, embedding=args.embedding, project=args.project,
                  create=create)
    if store.exists:
        store.check_embedding_name()  # a mismatch is refused before a judge or a model is set up
    if create if writes is None else writes:
        store.require_writable()
        if not create and store.exists:  # a writer that did not create it: private all the same

            prepare_store_dir(store.path, GITIGNORE.name)
    return store
