"""Session ids are identifiers wherever the store writes them: the graph's session nodes and edges and
the headings of memory/notes.md keep them as given, and ``doctor`` finds the store healthy (a fresh
review: MCP ids ``mcp-<UTC time>-<pid>`` and resumed ids ``<uuid>+r1`` read as key material to the
secret gate, which redacted them in those two files and left an edge to no node)."""

import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidate import Store
from consolidate.cli.main import main
from consolidate.pipeline.run import run_queue

mcp_ids = st.builds(lambda d, h, m, s, pid: f"mcp-2026{d:04d}T{h:02d}{m:02d}{s:02d}Z-{pid}",
                    st.integers(101, 1231), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
                    st.integers(2, 4_000_000))
resumed_ids = st.builds(lambda u, n: f"{u}+r{n}", st.uuids(version=4).map(str), st.integers(1, 9))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=st.one_of(mcp_ids, resumed_ids, st.just(str(uuid.uuid4()) + "+r1")))
def test_a_session_id_is_kept_as_given_and_the_store_is_healthy(tmp_path_factory, capsys, session):
    path = tmp_path_factory.mktemp("ids") / ".memofs"
    store = Store(path, embedding="hash")
    store.sessions.add_note(session, "The staging database listens on port 5433", flag=True, kind="fact")
    store.sessions.end(session, "success")
    run_queue(store, judges=["noop"])
    store.close()
    nodes = [json.loads(x) for x in (path / "graph" / "nodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert f"session:{session}" in {n["id"] for n in nodes}
    assert f"· session {session} " in (path / "memory" / "notes.md").read_text(encoding="utf-8")
    capsys.readouterr()
    code = main(["doctor", "--store", str(path), "--embedding", "hash"])
    out = capsys.readouterr().out
    assert code == 0 and "healthy" in out, out


