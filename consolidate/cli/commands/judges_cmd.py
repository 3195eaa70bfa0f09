"""``consolidate judges``: the installed judges and, for the configured chain, whether each can be
used right now (CLI on PATH, API model and key set, a local server answering ``GET /models`` within
1 s). Makes no model call and does not open the store (only its path is used, to find
``consolidate.toml``).

Exit codes: 0, or 2 when a spec of the chain names no installed judge or cannot be built (the run
would stop on the same ConfigError)."""

from __future__ import annotations

import json

from consolidate.store.layout import STORE_CONFIG
from consolidate.rules.redaction import error_text
from consolidate.judges import registry
from consolidate.core.errors import ConfigError
from consolidate.store.store import resolve_store_path


def cmd_judges(args) -> int:
    store_path = resolve_store_path(args.store)
    specs, source = registry.chain_config(args.judge, store_config=STORE_CONFIG.of(store_path))
    chain = []
    broken = False
    for spec in specs:
        entry = {"spec": spec, "name": spec.partition(":")[0], "available": False}
        try:
            judge = registry.load(spec)
        except ConfigError as exc:
            broken = True
            entry["why"] = f"error: {error_text(exc)}"
            chain.append(entry)
            continue
        ok, why = registry.availability(judge, probe=not args.no_probe, probe_timeout=1.0)
        entry.update(name=judge.name, model=judge.model,
                     available=bool(ok), why=why)
        chain.append(entry)
    installed = registry.installed()
    if args.json:
        print(json.dumps({"installed": installed, "chain_source": source, "chain": chain}, ensure_ascii=False))
        return 2 if broken else 0
    print("installed judges:")
    width = max(len(n) for n in installed)
    for name, target in sorted(installed.items()):
        print(f"  {name:<{width}}  {target}")
    print(f"chain (from {source}):")
    for i, entry in enumerate(chain, 1):
        mark = "ok " if entry["available"] else "no "
        print(f"  {i}. {mark} {entry['spec']}: {entry['why']}")
    if chain and not any(e["available"] and e["name"] != "noop" for e in chain):
        print("  (no judge can answer now: every maybe will be unjudged; flagged notes still promote)")
    return 2 if broken else 0
