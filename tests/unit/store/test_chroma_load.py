"""chromadb is imported through consolidate/store/index/chroma_load.py, which skips ``@override``'s
bytecode and signature checks at class definition (about 40 % of ``import chromadb``): chromadb's
classes still carry the mark its ``EnforceOverrides`` metaclass checks, and it works as before; httpx's
command-line client and the OpenTelemetry gRPC span exporter are not imported, and the exporter is the
real one when chromadb's telemetry constructs it."""

import pytest
import ast
import subprocess
import sys

from paths import REPO


@pytest.mark.spawns
def test_chromadb_imported_through_chroma_load_works_and_skips_the_signature_checks():
    code = ("import sys\n"
            "from consolidate.store.index.chroma_load import chromadb\n"
            "c = chromadb()\n"
            "client = c.EphemeralClient()\n"
            "col = client.create_collection('tst', embedding_function=None)\n"
            "col.add(ids=['a'], embeddings=[[0.1, 0.2]], documents=['x'])\n"
            "print(col.count(), sys.modules['overrides.overrides']._overrides.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "consolidate.store.index.chroma_load"]


def test_every_import_of_chromadb_goes_through_chroma_load():
    """A module that imports chromadb itself would pay the checks (and set telemetry its own way)."""
    offenders = []
    for path in (REPO / "consolidate").rglob("*.py"):
        if path.name == "chroma_load.py" or path.parts[-2:] == ("team", "authz.py"):
            continue  # authz runs inside the Chroma server (chroma run loads it), not in our processes
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name == "chromadb" for a in node.names):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


@pytest.mark.spawns
def test_the_unused_imports_are_deferred_and_the_exporter_is_real_when_constructed():
    code = ("import sys\n"
            "from consolidate.store.index.chroma_load import chromadb\n"
            "c = chromadb()\n"
            "client = c.EphemeralClient()\n"
            "client.create_collection('tst', embedding_function=None).add(ids=['a'], embeddings=[[0.1]])\n"
            "print(sorted(m for m in ('grpc', 'httpx._main', 'rich', 'click') if sys.modules.get(m)))\n"
            "import httpx\n"
            "print(callable(httpx.main))\n"
            "from chromadb.telemetry import opentelemetry as otel\n"
            "exporter = otel.OTLPSpanExporter(endpoint='http://127.0.0.1:9', insecure=True)\n"
            "print(type(exporter).__module__, 'grpc' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "True",
                                       "opentelemetry.exporter.otlp.proto.grpc.trace_exporter True"]
