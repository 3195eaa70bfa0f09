"""A session as a user runs it through the CLI, for the tests of what the SessionStart hook prints: flagged
notes (``consolidate note --flag``), ``end``, ``run --judge noop``, then the SessionStart hook."""

from consolidate.cli.main import main
from consolidate.agents.hooks.full import run_hook


def session_start_after_flagged_notes(tmp_path, monkeypatch, texts, kind: str = "constraint") -> tuple[int, str]:
    """Write each of ``texts`` as a flagged note of one session in a store under ``tmp_path`` (hash
    embedding), end and run it, and return the SessionStart hook's ``(exit code, output)``."""
    monkeypatch.setenv("CONSOLIDATE_STORE", str(tmp_path / ".memofs"))
    monkeypatch.setenv("CONSOLIDATE_EMBEDDING", "hash")
    for text in texts:
        assert main(["note", "--session", "S", text, "--flag", "--kind", kind]) == 0
    assert main(["end", "--session", "S", "--outcome", "success"]) == 0
    assert main(["run", "--judge", "noop"]) == 0
    return run_hook(tmp_path / ".memofs", payload={"hook_event_name": "SessionStart", "session_id": "n"}, spawn=False)
