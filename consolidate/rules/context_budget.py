"""The one size budget of the context the SessionStart hook prints (issue 29, item 6: a 13.9 KB
``memory/core.md`` filled the whole bound and none of the memories was shown).

``memory/core.md`` (the project rules people keep) and the memories (``memory/context.md``, after the
drift check and the context guard) share :data:`CONTEXT_MAX_CHARS`. When both fit, both are printed
whole. When they do not, the memories keep at least :data:`MEMORY_SHARE` of the budget (less when
they need less; ``core.md`` gets what they leave), ``core.md`` is cut at a line end, the memories
are cut at a memory line (the top ones kept, in their order), and the first line of the context
says what was cut: ``consolidate: context cut to fit 8,000 characters: memory/core.md cut (3,790 of
13,900 characters shown; the rest is in memory/core.md); 14 memories not shown (`consolidate
recall` finds them).``

Every printer of that context goes through :func:`fit` (called by the agent view,
consolidate.store.views.shown.fit_context): ``consolidate.store.views.recalled.recalled_context``,
which the full SessionStart hook prints (also the re-injection after a compaction: SessionStart with
source ``compact``) and the start file of the light path holds (written from it). Only the standard
library (the hook path).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The bound of the recalled context (core.md, the memories and the cut line), in characters.
CONTEXT_MAX_CHARS = 8_000
#: The longest line a memory is shown on (characters, its suffix and marks included), on every
#: surface but export and the Python API (which give the whole text): a longer memory's text is cut
#: with an ellipsis by the agent view (consolidate/store/views/shown.py), its marks kept.
LINE_MAX_CHARS = 1_000
#: The file recall's lines (PreToolUse / BeforeTool: a few short lines before one tool call).
FILE_LINE_MAX_CHARS = 240
#: The share of the budget kept for the memories when core.md and the memories do not both fit.
MEMORY_SHARE = 0.5
#: Characters kept aside for the cut line at the top (it is shorter than this).
CUT_LINE_RESERVE = 320
_SEP = "\n\n"
_CORE_MARK = "[… memory/core.md continues: the rest is in the file]"


@dataclass(frozen=True)
class Fitted:
    """What :func:`fit` keeps: the texts to print and what was cut.

    ``core``/``memories``: the parts as printed ('' when empty); ``core_shown``/``core_total``:
    characters of core.md printed and in the file; ``memories_dropped``: memory lines (``- ...``)
    not printed; ``max_chars``: the budget."""

    core: str
    memories: str
    core_shown: int
    core_total: int
    memories_dropped: int
    max_chars: int

    @property
    def cut(self) -> bool:
        return self.core_shown < self.core_total or self.memories_dropped > 0

    def cut_line(self) -> str:
        """The line saying what was cut ('' when nothing was)."""
        if not self.cut:
            return ""
        what = []
        if self.core_shown < self.core_total:
            what.append(f"memory/core.md cut ({self.core_shown:,} of {self.core_total:,} characters shown;"
                        " the rest is in memory/core.md)")
        if self.memories_dropped:
            n = self.memories_dropped
            what.append(f"{n} {'memory' if n == 1 else 'memories'} not shown (`consolidate recall` finds them)")
        return f"consolidate: context cut to fit {self.max_chars:,} characters: " + "; ".join(what) + "."

    def text(self, memories: str | None = None) -> str:
        """The context as printed: the cut line, core.md, the memories (``memories`` in place of
        ``self.memories``, e.g. with its header recounted), blank-line separated, empty parts left out."""
        parts = [self.cut_line(), self.core, self.memories if memories is None else memories]
        return _SEP.join(p for p in parts if p)


def fit(core: str, memories: str, max_chars: int = CONTEXT_MAX_CHARS, memory_share: float = MEMORY_SHARE,
        reserve: int = 0) -> Fitted:
    """Fit ``core`` (core.md's text) and ``memories`` (the memories' context: header lines, then one
    ``- `` line a memory, then closing lines such as the guard's held-back line) into ``max_chars``
    characters (see the module docstring); ``Fitted.text()`` is at most ``max_chars - reserve``
    long (``reserve``: characters the caller adds afterwards, such as the memories' header saying
    how many were left out).

    Raises ValueError for a ``max_chars - reserve`` too small to hold the cut line and anything
    else (under 2 * CUT_LINE_RESERVE) or a ``memory_share`` outside [0, 1]."""
    if max_chars - reserve < 2 * CUT_LINE_RESERVE or reserve < 0 or not 0 <= memory_share <= 1:
        raise ValueError(f"context budget: max_chars {max_chars}, reserve {reserve} or memory_share"
                         f" {memory_share} out of range")
    core, memories = core.strip(), memories.strip()
    whole = len(core) + len(memories) + (len(_SEP) if core and memories else 0)
    if whole <= max_chars - reserve:
        return Fitted(core, memories, len(core), len(core), 0, max_chars)
    room = max_chars - reserve - CUT_LINE_RESERVE - 2 * len(_SEP)
    kept_for_memories = min(len(memories), int(room * memory_share))
    core_cut = _cut_core(core, room - kept_for_memories)
    memories_cut, dropped = _cut_memories(memories, room - len(core_cut))
    return Fitted(core_cut, memories_cut, _core_chars(core_cut, core), len(core), dropped, max_chars)


def _core_chars(shown: str, core: str) -> int:
    return len(core) if shown == core else len(shown) - len(_CORE_MARK) - 1 if shown else 0


def _cut_core(core: str, limit: int) -> str:
    """``core`` whole when it fits in ``limit``, else its start up to a line end (a hard cut when the
    first line is longer) followed by the mark saying it continues; '' when not even that fits."""
    if len(core) <= limit:
        return core
    room = limit - len(_CORE_MARK) - 1
    if room <= 0:
        return ""
    head = core[:room]
    if "\n" in head:
        head = head.rsplit("\n", 1)[0]
    head = head.rstrip()
    return head + "\n" + _CORE_MARK if head else ""


def _cut_memories(text: str, limit: int) -> tuple[str, int]:
    """``text`` within ``limit`` characters: its lines before the first memory line, then memory
    lines in order while they fit, then its lines after the last memory line (the held-back line),
    room for those kept first; returns it and how many memory lines were left out. Lines that do
    not fit even so are left out from the end."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("- ")), len(lines))
    last = max((i for i, line in enumerate(lines) if line.startswith("- ")), default=first - 1)
    head, body, tail = lines[:first], lines[first:last + 1], lines[last + 1:]
    total = sum(1 for line in body if line.startswith("- "))

    def size(parts: list[str]) -> int:
        return len("\n".join(parts))

    while head and size(head) > limit:
        head.pop()
    while tail and size(head + tail) + 1 > limit:
        tail.pop(0)
    kept: list[str] = []
    for line in body:
        if size(head + kept + [line] + tail) > limit:
            break
        kept.append(line)
    else:
        return "\n".join(head + kept + tail).strip(), 0
    while kept and not kept[-1].startswith("- "):  # no dangling blank or continuation line
        kept.pop()
    shown = sum(1 for line in kept if line.startswith("- "))
    return "\n".join(head + kept + tail).strip(), total - shown
