"""``memory/notes.md`` in the store: what graduated, for people to read. The one owner of that file.

Each run that writes appends one block: a heading with the local date and time, the session and
the run id (as an HTML comment, the replay key), then one line per memory written, ``- **type**:
statement [confidence, evidence] (source)`` (the evidence as credited: consolidate.model.credit). Forgetting or editing a memory strikes its lines
through with the reason; undoing a run marks its block undone. The file is never read back by the
pipeline.
"""

from __future__ import annotations

from pathlib import Path
from consolidate.core.dates import display
from consolidate.model import credit
from consolidate.core.private import private_file
from consolidate.core.atomic import write_text_atomic
from consolidate.rules.persisted import gate
import re
from collections import Counter


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

    stamp = display(plan.started_at)  # local time with its offset (consolidate/core/dates.py)
    block = [f"## {stamp} · session {plan.session_id} {marker}", ""]
    for c in writes:
        tag = c.type if c.tier == "durable" else f"{c.type}, transient"
        if c.status != "active":
            tag += f", {c.status}"
        block.append(f"- **{tag}**: {c.statement} [{c.confidence}, {credit.credited(c.evidence, c.source, c.provenance.get('origin'))}] ({c.source})")

    with private_file(path, "a") as f:
        if new:
            f.write("# What graduated\n\n")
        # the statements through the gate (consolidate/rules/persisted.py); the heading's session id is
        # an identifier (a random-looking one read as key material left the heading redacted)
        f.write(block[0] + "\n" + gate("\n".join(block[1:])) + "\n\n")


def mark_statement(store, statement: str, label: str) -> int:
    """Strike through the entry lines that hold ``statement`` and say why (``label``); returns how
    many lines were marked."""

    path = path_of(store)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0
    marked = 0
    needle = f": {statement} ["
    for i, line in enumerate(lines):
        if line.startswith("- **") and needle in line and not line.startswith("- ~~"):
            lines[i] = f"- ~~{line[2:]}~~ ({gate(label)})"
            marked += 1
    if marked:
        write_text_atomic(path, "\n".join(lines) + "\n")
    return marked


def mark_run_undone(store, run_id: str, label: str) -> int:
    """Mark the block of ``run_id`` undone: its heading says so (``label``) and each entry line is
    struck through; returns how many entry lines were marked."""

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


def entry_line(e: dict) -> str:
    """The entry of one ``memory.written`` event (consolidate/store/events.py), without its ``- ``:
    ``**type**: statement [confidence, evidence] (source)``, as :func:`append_run` writes it."""
    tag = e.get("type") or "fact"
    if e.get("tier") != "durable":
        tag = f"{tag}, transient"
    if e.get("status") not in (None, "active"):
        tag += f", {e.get('status')}"
    return f"**{tag}**: {e.get('statement')} [{e.get('confidence')}, {e.get('evidence')}] ({e.get('source')})"


def _core(line: str) -> str | None:
    """The entry of an entry line (struck through or not), or None for another line."""
    if line.startswith("- ~~**"):
        end = line.rfind("~~ (")
        return line[4:end] if end > 4 else None
    if line.startswith("- **"):
        return line[2:]
    return None


def _blocks(text: str) -> tuple[list[str], list[tuple[str | None, list[str]]]]:
    """``(lines before the first block, [(run id or None, the block's lines, heading first)])``."""
    marker = re.compile(r"<!-- (\S+) -->")
    head: list[str] = []
    blocks: list[tuple[str | None, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            m = marker.search(line)
            blocks.append((m.group(1) if m else None, [line]))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            head.append(line)
    return head, blocks


def _expected(hist) -> dict[str, list[str]]:
    """``{run id: [entries]}`` the event log says ``notes.md`` holds (runs every event of which has
    its statement: older events did not log it)."""
    out = {}
    for rid, block in hist.blocks.items():
        if rid not in hist.partial and all(isinstance(e.get("statement"), str) for e in block["writes"]):
            out[rid] = [entry_line(e) for e in block["writes"]]
    return out


def differences(store, hist, whole: bool = True) -> tuple[int, int] | None:
    """``(missing, extra)`` entry lines of ``memory/notes.md`` against the event log's writes
    (``hist``: consolidate.pipeline.crosscheck.History), None when they agree. ``whole``: the log describes
    every run (not a team store), so an entry of a run it does not name is extra."""
    try:
        text = path_of(store).read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError):
        text = "\0"
    _, blocks = _blocks(text)
    present: dict[str | None, Counter] = {}
    for rid, lines in blocks:
        present.setdefault(rid, Counter()).update(c for c in map(_core, lines[1:]) if c is not None)
    expected = _expected(hist)
    missing = extra = 0
    for rid, entries in expected.items():
        want, have = Counter(entries), present.get(rid, Counter())
        missing += sum((want - have).values())
        extra += sum((have - want).values())
    for rid, have in present.items():
        if rid not in expected and (rid not in hist.blocks and rid not in hist.runs) and whole:
            extra += sum(have.values())
    if text == "\0":
        missing = max(missing, 1)
    return (missing, extra) if missing or extra else None


def rebuild(store, hist, whole: bool = True) -> str:
    """Write ``memory/notes.md`` again from the event log (``hist``): each run's block, in log order,
    keeps the lines it holds that the log describes (their marks included) and gets back the lines
    it lacks (struck through when the memory was forgotten or its run undone); blocks the log does
    not describe are kept unless ``whole`` and no event names their run. The old file is kept as
    ``notes.md.corrupt``; returns that name."""

    path = path_of(store)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError):
        text = path.read_bytes().decode("utf-8", "replace")
    aside = path.with_name(path.name + ".corrupt")

    with private_file(aside, "w") as f:
        f.write(text)
    _, blocks = _blocks(text)
    old = {rid: lines for rid, lines in blocks if rid is not None}
    expected = _expected(hist)
    out = ["# What graduated", ""]
    for rid, block in hist.blocks.items():
        entries = expected.get(rid)
        lines = old.pop(rid, None)
        if entries is None:  # the log cannot say what the block held: kept as it is
            if lines:
                out += [lines[0], "", *[x for x in lines[1:] if x.strip()], ""]
            continue
        heading = lines[0] if lines else f"## {display(block['ts'])} · session {block['session_id']} <!-- {rid} -->"
        if block["undone"] and "(undone " not in heading:
            heading += f" (undone {str(block['undone'])[:10]} by consolidate undo)"
        want = Counter(entries)
        kept = []
        for line in (lines or [])[1:]:
            core = _core(line)
            if core is not None and want[core] > 0:
                want[core] -= 1
                kept.append(line)
        for entry in entries:
            if want[entry] <= 0:
                continue
            want[entry] -= 1
            statement = entry[entry.index(": ") + 2:entry.rindex(" [")]
            if block["undone"]:
                kept.append(f"- ~~{entry}~~ (undone {str(block['undone'])[:10]} by consolidate undo)")
            elif statement in hist.struck:
                kept.append(f"- ~~{entry}~~ ({hist.struck[statement]})")
            else:
                kept.append(f"- {entry}")
        # the entry lines through the persisted gate as one text (a secret across lines is found too);
        # the heading, whose session id is an identifier, is not
        out += [heading, "", *([gate("\n".join(kept))] if kept else []), ""]
    for rid, lines in blocks:
        if rid in old and not (whole and rid not in hist.runs):
            body = [x for x in lines[1:] if x.strip()]
            out += [lines[0], "", *([gate("\n".join(body))] if body else []), ""]
    write_text_atomic(path, "\n".join(out) + "\n")
    return aside.name

