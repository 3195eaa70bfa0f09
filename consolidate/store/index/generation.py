"""The index generation token of an embedded store: a random token in ``index.generation`` (store
root) that every write to the embedded index replaces, before and after the write. A process
compares it with the token it read when it opened its client; another token means another process
wrote, and its client is stale. Read by the long-term index and by the lexical index
(consolidate/store/index/longterm.py, lexical.py). Standard library only."""

from __future__ import annotations

import uuid

from consolidate.core.atomic import write_text_atomic
from consolidate.store.layout import INDEX_GENERATION

#: The file every write to the embedded index changes (store root): a random token, replaced
#: before and after each write. A process compares it with the token it read when it opened its
#: client; a different token means another process wrote, and its client is stale.
GENERATION_FILE = INDEX_GENERATION.name


def read_generation(store) -> str:
    """The store's index generation token ('' when no write has recorded one)."""
    try:
        return store.sub(INDEX_GENERATION).read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return ""
    except OSError:
        return ""


def bump_generation(store) -> str:
    """Replace the generation token (atomically) and return the new one."""
    token = uuid.uuid4().hex
    write_text_atomic(store.sub(INDEX_GENERATION), token + "\n")
    return token
