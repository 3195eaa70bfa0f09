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




#: Session ids holding a secret (a fresh review, issue 28 concern 3: ``hook.log`` redacted such an id,
#: while ``logs/worker.log``, ``queue.jsonl`` and ``sessions.sqlite3`` kept it in clear).
SECRET_IDS = ["ghp_Kk1Ll2Mm3Nn4Oo5Pp6Qq7Rr8Ss9Tt0Uu1Vv2Ww3", "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6", "AKIAQ3EGRTZ7XKMP4WJG",
              "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "sess-AKIAQ3EGRTZ7XKMP4WJG",
              # after a prefix (a second review): key material the gate names by no provider
              "sess-AKIAZ7QX3MPL4RTV2WQH", "ci-ghp_Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2Gg1Ff0DdSsAaQq"]


def test_a_session_id_holding_a_secret_is_kept_under_one_pseudonym_everywhere(tmp_path, capsys):
    from consolidate.agents.hooks.full import run_hook
    from consolidate.core.normal import canonical

    for n, secret in enumerate(SECRET_IDS):
        project = tmp_path / f"p{n}"
        project.mkdir()
        path = project / ".memofs"
        assert main(["note", "--store", str(path), "--session", secret, "--flag", "--kind", "fact",
                     "The staging database listens on port 5433"]) == 0
        written = capsys.readouterr().out
        # the hook's SessionEnd meets the notes under the same name: the worker's run writes the memory
        run_hook(path, payload={"hook_event_name": "SessionEnd", "session_id": secret, "cwd": str(project),
                                "reason": "exit"}, spawn=False)
        assert main(["run", "--store", str(path), "--judge", "noop"]) == 0
        assert main(["recall", "--store", str(path), "port 5433"]) == 0
        out = capsys.readouterr().out
        assert "redacted-" in written and "5433" in out, (written, out)
        clear = canonical(secret)[-12:]
        for f in path.rglob("*"):
            if f.is_file():
                data = f.read_bytes().decode("utf-8", "replace")
                assert clear not in data and clear not in canonical(data), (secret, f)


def test_ordinary_session_ids_are_kept_as_given():
    from consolidate.agents.hooks.payload import session_id_of
    from consolidate.store.sessions.tier import check_session_id

    for sid in [str(uuid.uuid4()), "s1", "demo-session-1", "mcp-20261203T101010Z-4242", f"{uuid.uuid4()}+r2",
                "f0e1d2c3b4a59687", "работа-над-парсером", "修复登录"]:
        assert check_session_id(sid) == sid and session_id_of({"session_id": sid}) == sid
