"""What ``consolidate doctor`` reports: a :class:`Finding` per problem, and the helpers its checks
share (consolidate/pipeline/doctor.py for the files, consolidate/pipeline/crosscheck.py for the
indexes against the event log)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finding:
    """One problem: where, what, and whether it was repaired."""

    where: str
    problem: str
    repaired: bool = False
    repairable: bool = True

    def line(self) -> str:
        state = "repaired" if self.repaired else ("repairable with --repair" if self.repairable else "needs a person")
        return f"{self.where}: {self.problem} [{state}]"


def move_aside(path: Path, companions: tuple[str, ...] = ()) -> Path:
    """Rename ``path`` (and ``path + suffix`` for each companion that exists) to the first free
    ``<name>.corrupt``, ``<name>.corrupt-2``, ...; returns the new path of ``path``."""
    n = 1
    while True:
        aside = path.with_name(path.name + (".corrupt" if n == 1 else f".corrupt-{n}"))
        if not aside.exists():
            break
        n += 1
    path.rename(aside)
    for suffix in companions:
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            extra.rename(aside.with_name(aside.name + suffix))
    return aside


def memories(n: int) -> str:
    """``1 memory`` / ``N memories``."""
    return f"{n} memory" if n == 1 else f"{n} memories"
