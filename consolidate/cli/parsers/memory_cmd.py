"""The parsers of the commands on the long-term store itself: ``disputes``, ``resolve``, ``forget``,
``backfill``, ``doctor``, ``runs``, ``undo``.

Declarations only: each command runs a function of consolidate.cli.commands.memory_cmd, imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_dry_run, add_json, add_limit
from consolidate.cli.parsers import command
import argparse


def register(sub, common) -> None:
    s = sub.add_parser("disputes", parents=[common], help="list disputed memories")
    add_json(s)
    s.set_defaults(func=command("memory_cmd", "cmd_disputes"))

    s = sub.add_parser("resolve", parents=[common], help="settle a dispute: keep one entry, archive the other")
    s.add_argument("memory_id", help="the disputed memory's id (`consolidate disputes` lists them)")
    s.add_argument("--keep", required=True, help="id of the entry to keep")
    s.set_defaults(func=command("memory_cmd", "cmd_resolve"))

    s = sub.add_parser("forget", parents=[common],
                       help="archive a wrong memory with a tombstone: later sessions do not bring it back")
    s.add_argument("memory_id", help="the memory's id (consolidate recall --json shows it)")
    s.add_argument("--reason", help="why it is wrong (kept in the event log)")
    s.set_defaults(func=command("memory_cmd", "cmd_forget"))
    s = sub.add_parser("backfill", parents=[common], help="give entries that lack metadata best-effort values")
    add_dry_run(s)
    s.set_defaults(func=command("memory_cmd", "cmd_backfill"))
    register_runs(sub, common)

#: ``consolidate doctor --help``'s epilog (the README says the same).
DOCTOR_EXIT_CODES = ("exit codes: 0 healthy, or every finding repaired; 1 findings left (each line names the file,"
                     " the problem and what to do: `repairable with --repair` or `needs a person`); 4 --repair"
                     " on a read-only store or one locked by another process")

def register_runs(sub, common) -> None:
    s = sub.add_parser("doctor", parents=[common], help="check the store; --repair fixes what is safe to fix",
                       epilog=DOCTOR_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--repair", action="store_true", help="repair what can be repaired safely (nothing is deleted"
                   " without a copy): move corrupt lines and files aside, replay an interrupted run, rebuild the"
                   " recall index from the graph and the event log, re-queue stale claims")
    s.set_defaults(func=command("memory_cmd", "cmd_doctor"))
    s = sub.add_parser("runs", parents=[common], help="list consolidation runs with their counts (newest first)")
    add_json(s)
    add_limit(s, 10**6, 50, "at most N runs, newest first")
    s.set_defaults(func=command("memory_cmd", "cmd_runs"))
    s = sub.add_parser("undo", parents=[common], help="revert one run (see `consolidate runs`)")
    s.add_argument("run_id", help="the run's id (`consolidate runs` lists them)")
    s.set_defaults(func=command("memory_cmd", "cmd_undo"))
