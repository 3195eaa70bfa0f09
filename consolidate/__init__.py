"""consolidate: decides what an AI agent's working notes graduate into long-term memory.

Python API (light to import: the standard library only until a run needs more)::

    from consolidate import Store, recall, run_queue
    store = Store(".memofs")
    store.sessions.add_note("s1", "Use pnpm, not npm: npm breaks the lockfile", flag=True, kind="decision")
    store.sessions.end("s1", "success")
    plans = run_queue(store, judges=["api:openai/gpt-4o-mini"])
    for hit in recall(store, "package manager").memories:
        print(hit["document"])
"""

__version__ = "0.1.0"


#: The public exceptions (the tree drawn in consolidate/core/errors.py), importable from here.
ERRORS = ("ConsolidateError", "BadInput", "EmptyNote", "InvalidImportLine", "SecretBlocked", "PathRefused",
          "ConfigError", "StaleForm", "UnknownSession", "StoreError", "StorePathError", "StoreCorrupt", "EmbeddingMismatch", "EmbeddingUnavailable",
          "StoreLocked", "StoreReadOnly", "TeamError", "TeamTimeout", "JudgeError", "JudgeUnavailable",
          "JudgeTimeout", "JudgeOutputInvalid", "CassetteMiss")


#: The classes of the public API and the module each is imported from on first use.
CLASSES = {"Store": "consolidate.store.store", "Plan": "consolidate.model.plan", "Note": "consolidate.model.plan",
           "Candidate": "consolidate.model.plan", "RunContext": "consolidate.pipeline.run"}


def __getattr__(name):
    """The classes (``Store``, ``Plan``, ``Note``, ``Candidate``, ``RunContext``) and the exceptions
    (``ConsolidateError`` and its subclasses) are imported on first use, so that ``consolidate hook``
    and the idle ``consolidate run`` (consolidate/agents/hooks/fast.py) import nothing they do not use."""
    if name in CLASSES or name in ERRORS:
        import importlib  # noqa: PLC0415 - the package's lazy attributes (PEP 562): importlib only on first use

        return getattr(importlib.import_module(CLASSES.get(name, "consolidate.core.errors")), name)
    raise AttributeError(f"module 'consolidate' has no attribute {name!r}")


def run_session(*args, **kwargs):
    """See :func:`consolidate.pipeline.run.run_session`."""
    from consolidate.pipeline.run import run_session as _run  # noqa: PLC0415 - every command and hook imports this package first: it loads the pipeline only when called

    return _run(*args, **kwargs)


def recall(store, query, **options):
    """See :func:`consolidate.pipeline.recall.recall`: the same search and options as the CLI and MCP."""
    from consolidate.pipeline.recall import recall as _recall  # noqa: PLC0415 - every command and hook imports this package first: it loads the pipeline only when called

    return _recall(store, query, **options)


def run_queue(*args, **kwargs):
    """See :func:`consolidate.pipeline.run.run_queue`."""
    from consolidate.pipeline.run import run_queue as _run  # noqa: PLC0415 - every command and hook imports this package first: it loads the pipeline only when called

    return _run(*args, **kwargs)


#: The public API, pinned by tests/unit/core/test_public_api.py; test doubles are in consolidate.testing.
__all__ = [*CLASSES, "recall", "run_session", "run_queue", "__version__", *ERRORS]
