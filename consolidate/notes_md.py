"""``memory/notes.md`` in the store: what graduated, for people to read. The one owner of that file.

Each run that writes appends one block: a heading with the local date and time, the session and
the run id (as an HTML comment, the replay key), then one line per memory written, ``- **type**:
statement [confidence, evidence] (source)``. Forgetting or editing a memory strikes its lines
through with the reason; undoing a run marks its block undone. The file is never read back by the
pipeline.
"""

from __future__ import annotations

from pathlib import Path


def path_of(store) -> Path:
    """The path of ``memory/notes.md`` in ``store``."""
    return store.notes_md_path


def append_run(store, plan, writes) -> None:
    """Append the block of a run's ``writes`` (idempotent: a replayed run whose block is there
    appends nothing). Raises OSError when the file cannot be written."""
    path = path_of(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    marker = f"<!-- {plan.run_id} -->"
    new = not path.exists()
    if not new and marker in path.read_text(encoding="utf-8"):
        return  # replay: this run's block is already there
    from .dates import display

    stamp = display(plan.started_at)  # local time with its offset (consolidate/dates.py)
    block = [f"## {stamp} · session {plan.session_id} {marker}", ""]
    for c in writes:
        tag = c.type if c.tier == "durable" else f"{c.type}, transient"
        if c.status != "active":
            tag += f", {c.status}"
        block.append(f"- **{tag}**: {c.statement} [{c.confidence}, {c.evidence}] ({c.source})")
    from .private import private_file

    with private_file(path, "a") as f:
        if new:
            f.write("# What graduated\n\n")
        f.write("\n".join(block) + "\n\n")


def mark_statement(store, statement: str, label: str) -> int:
    """Strike through the entry lines that hold ``statement`` and say why (``label``); returns how
    many lines were marked."""
    from .atomic import write_text_atomic

    path = path_of(store)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0
    marked = 0
    needle = f": {statement} ["
    for i, line in enumerate(lines):
        if line.startswith("- **") and needle in line and not line.startswith("- ~~"):
            lines[i] = f"- ~~{line[2:]}~~ ({label})"
            marked += 1
    if marked:
        write_text_atomic(path, "\n".join(lines) + "\n")
    return marked


def mark_run_undone(store, run_id: str, label: str) -> int:
    """Mark the block of ``run_id`` undone: its heading says so (``label``) and each entry line is
    struck through; returns how many entry lines were marked."""
    from .atomic import write_text_atomic

    path = path_of(store)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0
    marker = f"<!-- {run_id} -->"
    marked, inside = 0, False
    for i, line in enumerate(lines):
        if line.startswith("## "):
            inside = marker in line
            if inside and f"({label})" not in line:
                lines[i] = f"{line} ({label})"
            continue
        if inside and line.startswith("- **"):
            lines[i] = f"- ~~{line[2:]}~~ ({label})"
            marked += 1
    write_text_atomic(path, "\n".join(lines) + "\n")
    return marked
