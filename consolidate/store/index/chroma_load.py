"""How chromadb is imported: :func:`chromadb` is the one import of it (the local index, the embedding
functions, the team client), so every process pays its import cost once and the same way.

chromadb decorates its classes with ``overrides``' ``@override``, which at class-definition time reads
the calling frame's bytecode to find the base classes and compares each method's signature with the
one it overrides: a development-time check that took about 40 % of ``import chromadb`` (0.2-0.5 s of
every CLI command, hook worker and MCP server start that opens the index; measured with
``python -X importtime`` and cProfile, overrides 7.7). :func:`chromadb` imports ``overrides`` first
and makes ``@override`` only mark the method (``__override__ = True``, which chromadb's
``EnforceOverrides`` classes check), skipping the bytecode and signature checks; chromadb's behaviour is
unchanged. When chromadb was imported already (by the embedding function of a caller, a test), it is
returned as it is.

Two more imports of chromadb's that no use of it here reaches are deferred (about 0.15 s of each
import, 230 of its 900 modules; ``python -X importtime``): httpx's command-line client
(``httpx._main``, which pulls rich, click and pygments; httpx's ``__init__`` falls back to a stub
``main`` when it cannot be imported) and the OpenTelemetry gRPC span exporter (grpc and protobuf),
which chromadb imports at the top of ``chromadb.telemetry.opentelemetry`` and constructs only when an
OpenTelemetry endpoint is configured: a stand-in module whose ``OTLPSpanExporter`` imports the real
exporter when it is first called. Neither is done when the module was imported already. Standard
library only at import."""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any


def _marked(method=None, **_options):
    """``overrides.override`` that only marks: ``@override`` and ``@override(check_signature=...)``."""
    if method is None:
        return _marked
    method.__override__ = True
    return method


_OTLP = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"


def _real_otlp_exporter(*args, **kwargs):
    """The real ``OTLPSpanExporter(*args, **kwargs)``: the stand-in module is replaced by the real one."""
    import importlib  # noqa: PLC0415 - only when an OpenTelemetry endpoint is configured

    if getattr(sys.modules.get(_OTLP), "__consolidate_stand_in__", False):
        del sys.modules[_OTLP]
    return importlib.import_module(_OTLP).OTLPSpanExporter(*args, **kwargs)


def _defer_unused_imports() -> None:
    """httpx's CLI made unimportable and the gRPC span exporter replaced by a stand-in (module docstring)."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: "cannot be imported"
    if _OTLP not in sys.modules:
        stand_in = ModuleType(_OTLP, "Stand-in of the OpenTelemetry gRPC span exporter (consolidate.store.index.chroma_load).")
        stand_in.__consolidate_stand_in__ = True  # type: ignore[attr-defined]
        stand_in.OTLPSpanExporter = _real_otlp_exporter  # type: ignore[attr-defined]
        sys.modules[_OTLP] = stand_in


def chromadb() -> ModuleType:
    """The ``chromadb`` module, imported with ``@override``'s checks skipped (module docstring) and
    Chroma's telemetry off (``ANONYMIZED_TELEMETRY=False`` unless set). Raises ImportError when
    chromadb is not installed."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    if "chromadb" not in sys.modules:
        try:
            import overrides  # noqa: F401, PLC0415 - only with chromadb

            checks: Any = sys.modules["overrides.overrides"]  # the module (the package's attribute is its function)
            if callable(getattr(checks, "_overrides", None)):
                checks._overrides = lambda method, check_signature, check_at_runtime: _marked(method)
        except (ImportError, KeyError):  # another overrides: its own checks run, nothing else changes
            pass
        _defer_unused_imports()
    import chromadb as module  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

    return module
