"""``consolidate demo``."""

from __future__ import annotations




def cmd_demo(args) -> int:
    from consolidate.evals.demo import run_demo

    return run_demo(keep=args.keep)


def register(sub, common) -> None:
    s = sub.add_parser("demo", help="run the whole pipeline on sample sessions in a throwaway store")
    s.add_argument("--keep", action="store_true", help="keep the throwaway store and print its path (the .memofs folder itself)")
    s.set_defaults(func=cmd_demo)
