"""The parsers of the read-side commands: ``recall``, ``graph`` and ``status``.

Declarations only: ``recall`` and ``graph`` run functions of consolidate.cli.commands.read, ``status``
consolidate.cli.commands.status_cmd.cmd_status, each imported when it runs
(consolidate.cli.parsers.command)."""

from __future__ import annotations

from consolidate.cli.options import add_json, count_1_to, similarity
from consolidate.cli.parsers import command


def register(sub, common) -> None:
    s = sub.add_parser("recall", parents=[common], help="hybrid search (meaning and exact identifiers) over active memories")
    s.add_argument("query", help="what to look for, in words or an exact identifier (at most 4,000 characters;"
                                 " one beginning with - after --: recall -- --no-verify)")
    s.add_argument("-k", type=count_1_to(1000), default=5, help="how many memories (1 to 1000, default 5)")
    s.add_argument("--min-similarity", type=similarity, default=0.2,
                   help="leave out memories less similar than this (cosine, -1 to 1, default 0.2), except those"
                        " holding an identifier of the query or all its words")
    s.add_argument("--all", "--include-quarantined", dest="all", action="store_true",
                   help="include quarantined and disputed entries")
    s.add_argument("--as-of", metavar="DATE",
                   help="the memories valid on DATE (2026-07-14, 2026-07, yesterday, '3 days ago'),"
                        " those superseded since included and marked [superseded DATE]")
    add_json(s, "print the memories as one JSON list, an object per memory")
    s.set_defaults(func=command("read", "cmd_recall"))
    s = sub.add_parser("graph", parents=[common],
                       help="an entity's relations (depends_on, uses, ...) and the memories behind them")
    s.add_argument("entity", help="the entity's name (case and Unicode form do not matter)")
    s.add_argument("--depth", type=count_1_to(5), default=1, help="follow relations this many hops (1 to 5, default 1)")
    add_json(s, "print {entity, found, relations: [{source, relation, target, depth, memory_ids}], memories}")
    s.set_defaults(func=command("read", "cmd_graph"))
    s = sub.add_parser("status", parents=[common], help="counts by status and tier, review queue, session queue, last runs")
    add_json(s)
    s.set_defaults(func=command("status_cmd", "cmd_status"))
