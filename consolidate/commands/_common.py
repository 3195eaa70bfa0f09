"""What every command shares: opening the store from the common options."""

from __future__ import annotations


def open_store(args):
    """The Store named by ``--store``/``--chroma-url``/``--embedding``/``--project`` (or their
    environment variables)."""
    from ..store import Store

    return Store(args.store, chroma_url=args.chroma_url, embedding=args.embedding, project=args.project)
