"""Judge registry: judges are found through the ``consolidate.judges`` entry-point group.

A judge spec is ``NAME`` or ``NAME:ARG`` (for example ``rules``, ``noop``, ``scripted:verdicts.json``,
``api:openai/gpt-4o-mini``). The built-in judges are registered in this package's pyproject.toml;
third parties register theirs the same way::

    [project.entry-points."consolidate.judges"]
    myjudge = "mypkg.judge:MyJudge"     # MyJudge(arg: str | None) -> a Judge

The chain comes from configuration, in this order: explicit specs (``--judge``), then
``$CONSOLIDATE_JUDGES`` (comma-separated), then the default chain ``api,noop``.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from consolidate.errors import ConfigError

GROUP = "consolidate.judges"
DEFAULT_CHAIN = ("api", "noop")

# Fallback for running from a source tree that is not pip-installed (entry points unavailable).
_BUILTIN = {
    "noop": "judges.noop:NoopJudge",
    "rules": "judges.rules:RulesJudge",
    "scripted": "judges.scripted:ScriptedJudge",
    "api": "judges.api:APIJudge",
}


def installed() -> dict[str, str]:
    """``{name: "module:Class"}`` of every registered judge."""
    found = dict(_BUILTIN)
    for ep in entry_points(group=GROUP):
        found[ep.name] = ep.value
    return found


def load(spec: str):
    """Instantiate the judge named by ``spec`` (``NAME`` or ``NAME:ARG``).

    Raises ConfigError for an unknown name or a judge that cannot be built."""
    name, _, arg = spec.strip().partition(":")
    target = installed().get(name)
    if target is None:
        raise ConfigError(f"unknown judge {name!r}; installed: {', '.join(sorted(installed()))}", judge=name)
    module_name, _, attr = target.partition(":")
    import importlib

    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"judge {name!r} cannot be loaded ({exc})", judge=name) from None
    return cls(arg or None)


def chain_specs(explicit: list[str] | None = None) -> list[str]:
    """The configured chain as a list of specs (see the module docstring for precedence)."""
    if explicit:
        specs: list[str] = []
        for s in explicit:
            specs.extend(p for p in s.split(",") if p.strip())
        return specs
    env = os.environ.get("CONSOLIDATE_JUDGES")
    if env and env.strip():
        return [p.strip() for p in env.split(",") if p.strip()]
    return list(DEFAULT_CHAIN)


def build_chain(explicit: list[str] | None = None):
    """A JudgeChain of the configured judges."""
    from .chain import JudgeChain

    return JudgeChain([load(s) for s in chain_specs(explicit)])
