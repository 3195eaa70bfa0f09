"""The one check of the options a consolidating process is given: the store options and the judge
chain (issue 29, item 9: ``install-hook --judge bogus`` was written into the settings with exit 0,
and every worker the hook started then died with ``unknown judge``, seen only in ``logs/worker.log``).

:func:`check_options` checks what ``run`` checks before it opens the store (and what the worker
would find only once it is running), without building a model or calling one:

- the judge chain (``--judge``, else ``$CONSOLIDATE_JUDGES``, else the store's ``consolidate.toml``,
  else ``pyproject.toml``; consolidate.judges.registry.check_specs): every name registered, every judge built
  (an unknown ``cli:`` preset, an empty template, a prompt version with no template are refused);
- the embedding function's name (:func:`check_embedding`, consolidate.store.index.embeddings:
  ``minilm``, ``hash``, ``chroma:NAME`` with NAME in Chroma's registry), and for an existing store,
  that it is the store's own;
- the Chroma URL (consolidate.core.option_check.check_chroma_url, the same check the long-term tier
  makes when it connects);
- the store path (not a file).

``install-hook`` calls it on the options of the hook command it is about to write, parsed by the
real ``consolidate hook`` parser (consolidate.agents.install). It lives in the pipeline, the layer of
the process whose options it checks: it needs the store and the judges' registry, which the
foundations (consolidate.core) may not import. Raises ConfigError / StorePathError /
EmbeddingMismatch (exit 2 or 4, one line).
"""

from __future__ import annotations

import os

from consolidate.core.errors import ConfigError
from consolidate.core.option_check import check_chroma_url
from consolidate.store.index.embeddings import ChromaNamed, embedding_id, get_embedding_function
from consolidate.store.store import Store
from consolidate.judges.registry import chain_specs, check_specs


def check_embedding(name: str) -> str:
    """The manifest id of the embedding function called ``name`` (consolidate.store.index.embeddings.embedding_id),
    nothing built; a ``chroma:NAME`` is looked up in Chroma's registry. Raises ConfigError for a
    name no function has."""
    found = embedding_id(name)
    if found is None:
        get_embedding_function(name)  # raises the ConfigError listing the known names
        raise ConfigError(f"unknown embedding function {name!r}")  # pragma: no cover - it raised
    if found.startswith("chroma:"):
        ChromaNamed(found.split(":", 1)[1])  # ConfigError for a name not in Chroma's registry
    return found


def check_options(*, store: str | os.PathLike | None = None, chroma_url: str | None = None,
                  embedding: str | None = None, judges: list[str] | None = None,
                  project_dir: str | os.PathLike | None = None) -> list[str]:
    """Check the options a consolidating process will run with (see the module docstring); returns
    the judge chain's specs. ``store`` None: the judge chain is looked up without a store's
    ``consolidate.toml``. ``project_dir``: where ``pyproject.toml`` is looked for (default: cwd).

    Raises ConfigError, StorePathError or EmbeddingMismatch (one line each)."""
    if chroma_url:
        check_chroma_url(chroma_url)
    if embedding:
        check_embedding(embedding)
    config = None
    if store is not None:
        opened = Store(store, chroma_url=chroma_url, embedding=embedding, create=False)  # StorePathError: a file
        if opened.exists:
            opened.check_embedding_name()
        config = opened.judges_config
    return check_specs(chain_specs(judges, config, project_dir))
