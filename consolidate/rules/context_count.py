"""The SessionStart context's header counts what it prints (new-user finding of issue 15: the header
said "the top 10 active memories" when the context guard held one back, the drift check left a stale
one out, or the size bound cut the last ones).

``memory/context.md`` is written by each run with a header ``# Project memory (SCOPE): the top N
active memories``; what the hook prints is that file after the drift check (a memory whose anchored
file is gone is left out), the context guard (a memory worded as an order or running remote code is
held back) and the size bound (the tail is cut). :func:`recount` rewrites the header from the lines
that are printed and says how many were left out and why (the guard's held-back count stays on its
own line, written by consolidate.rules.guard.held_back_line)."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^# Project memory \((?P<scope>.*)\): the top \d+ active memor(?:y|ies)$")
_IDS = re.compile(r"\bmem-[0-9a-z]+\b")
_HELD = re.compile(r"^\((?P<n>\d+) remembered entr(?:y|ies) left out: worded as instructions")


def memory_lines(text: str) -> int:
    """How many memory lines (``- ...``) ``text`` holds."""
    return sum(1 for line in text.splitlines() if line.startswith("- "))


def recount(text: str, *, stale: int = 0, before_cut: int | None = None) -> str:
    """``text`` (the printed context) with its ``# Project memory`` header counting the memories it
    prints (``the top N active memories``), and saying in it how many were left out that no other
    line mentions: ``stale`` (their code is gone) and those the size bound cut (``before_cut``: the
    memory lines there were before it). The context guard's own line says how many it held back
    (several such lines, from the run that wrote the file and from the print, become one). ``text``
    without such a header is returned as it is."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if at is None:
        return text
    held = [(i, int(m.group("n"))) for i, m in ((i, _HELD.match(line)) for i, line in enumerate(lines)) if m]
    if len(held) > 1:  # held back when the run wrote the file and again now: one line, one count
        from consolidate.rules.guard import held_back_line  # noqa: PLC0415 - off the SessionStart hook path (rules.guard)

        ids = [i for at, _ in held for i in _IDS.findall(lines[at])]  # the ids the lines named, kept named
        lines[held[0][0]] = held_back_line(sum(n for _, n in held), ids if all(_IDS.search(lines[at]) for at, _ in held) else ())
        drop = {i for i, _ in held[1:]}
        lines = [line for i, line in enumerate(lines) if i not in drop]
    shown = sum(1 for line in lines[at + 1:] if line.startswith("- "))
    header = _HEADER.match(lines[at])
    scope = header.group("scope") if header else ""
    cut = max(0, before_cut - shown) if before_cut is not None else 0
    why = [f"{stale} left out: the code they name is gone" if stale else "",
           f"{cut} more cut to fit" if cut else ""]
    why = [w for w in why if w]
    lines[at] = (f"# Project memory ({scope}): the top {shown} active {'memory' if shown == 1 else 'memories'}"
                 + (f" ({'; '.join(why)}; see `consolidate recall`)" if why else ""))
    return "\n".join(lines)
