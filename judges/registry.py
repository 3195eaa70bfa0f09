"""Judge registry: judges are found through the ``consolidate.judges`` entry-point group.

A judge spec is ``NAME`` or ``NAME:ARG`` (for example ``rules``, ``noop``, ``scripted:verdicts.json``,
``api:openai/gpt-4o-mini``). The built-in judges are registered in this package's pyproject.toml;
third parties register theirs the same way::

    [project.entry-points."consolidate.judges"]
    myjudge = "mypkg.judge:MyJudge"     # MyJudge(arg: str | None) -> a Judge

The chain comes from configuration; the first of these that names judges wins:

1. explicit specs (``--judge``, repeatable, each may be comma-separated);
2. ``$CONSOLIDATE_JUDGES`` (comma-separated);
3. ``consolidate.toml`` in the store folder: ``judges = ["cli:claude", "api", "noop"]``;
4. ``[tool.consolidate] judges = [...]`` in ``pyproject.toml`` of the project folder (the current
   working directory unless given);
5. the default chain: the local CLI judge (the first preset whose executable is on PATH and that can
   run: claude, llm, ollama, codex; none when no CLI is there), then ``api``, then ``noop``.

A TOML file that cannot be read, or whose ``judges`` is not a list of strings (or one comma-separated
string), raises ConfigError naming the file. The items of a list are not split on commas (a
``cli:template:`` command may hold one); a single string is. An empty list counts as not set.
"""

from __future__ import annotations

import json
import os
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from consolidate.core.errors import ConfigError
from consolidate.core.settings import CURATE_PROMPT_VERSION, JUDGES
from consolidate.rules.redaction import error_text

from .base import BaseJudge, as_judge
from consolidate.judges.prompting import PROMPT_VERSION_ENV, selected_curate_prompt_version, selected_prompt_version
from consolidate.judges.cli import PRESET_ORDER, CLIJudge
from consolidate.judges.chain import JudgeChain
import importlib

GROUP = "consolidate.judges"
#: The default chain after the local CLI judge (which is there only when a CLI is on PATH).
DEFAULT_CHAIN = ("api", "noop")

# Fallback for running from a source tree that is not pip-installed (entry points unavailable).
_BUILTIN = {
    "noop": "consolidate.judges.noop:NoopJudge",
    "rules": "consolidate.judges.rules:RulesJudge",
    "scripted": "consolidate.judges.scripted:ScriptedJudge",
    "api": "consolidate.judges.api:APIJudge",
    "cli": "consolidate.judges.cli:CLIJudge",
}


def installed() -> dict[str, str]:
    """``{name: "module:Class"}`` of every registered judge."""
    found = dict(_BUILTIN)
    for ep in entry_points(group=GROUP):
        found[ep.name] = ep.value
    return found


def load(spec: str) -> BaseJudge:
    """Instantiate the judge named by ``spec`` (``NAME`` or ``NAME:ARG``), seen through the contract
    (``consolidate.judges.base.as_judge``: a plug-in class need not subclass BaseJudge).

    Raises ConfigError for an unknown name or a judge that cannot be built."""
    name, _, arg = spec.strip().partition(":")
    target = installed().get(name)
    if target is None:
        raise ConfigError(f"unknown judge {name!r}; installed: {', '.join(sorted(installed()))}", judge=name)
    module_name, _, attr = target.partition(":")

    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"judge {name!r} cannot be loaded ({exc})", judge=name) from None
    return as_judge(cls(arg or None), name=name)


def check_specs(specs: list[str]) -> list[str]:
    """Check a judge chain without calling a model: every spec names a registered judge and the
    judge can be built (an unknown ``cli:`` preset, an empty template or a prompt version with no
    template is refused there). Returns ``specs``; raises ConfigError (one line) for the first
    that fails. ``run`` and ``install-hook`` check the chain with it (consolidate.pipeline.run_options)."""
    for spec in specs:
        load(spec)
    return specs


def select_prompt_version(version: str) -> str:
    """Make ``version`` the judge prompt of the judges built from now on in this process (it sets
    ``$CONSOLIDATE_PROMPT_VERSION``, which the API and CLI judges read when they are built:
    ``consolidate.judges.prompting.selected_prompt_version``). Returns the version; raises ConfigError for a
    version with no template."""

    os.environ[PROMPT_VERSION_ENV] = chosen = selected_prompt_version(version)
    return chosen


def curate_prompt_version() -> str:
    """The curation prompt version the judges use now (``$CONSOLIDATE_CURATE_PROMPT_VERSION``, else
    the default); raises ConfigError for a bad variable (the core reads it here, not in prompting)."""
    return selected_curate_prompt_version()


def select_curate_prompt_version(version: str | None) -> str:
    """Make ``version`` (None: the one ``$CONSOLIDATE_CURATE_PROMPT_VERSION`` or the default names)
    the curation prompt of this process (it sets ``$CONSOLIDATE_CURATE_PROMPT_VERSION``, which the
    judges read at each curation call). Returns the version; raises ConfigError for a version with no
    template."""

    os.environ[CURATE_PROMPT_VERSION.name] = chosen = selected_curate_prompt_version(version)
    return chosen


def _split(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _toml_judges(path: Path, table: tuple[str, ...]) -> list[str] | None:
    """``judges`` under ``table`` in the TOML file ``path``; None when the file or key is absent."""
    if not path.is_file():
        return None
    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", path=str(path)) from None
    for key in table:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, dict) or "judges" not in data:
        return None
    value = data["judges"]
    where = ".".join((*table, "judges")) if table else "judges"
    if isinstance(value, str):
        return _split(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ConfigError(f"{path}: {where} must be a list of judge specs, e.g. [\"cli:claude\", \"api\", \"noop\"]",
                      path=str(path))


def default_chain() -> list[str]:
    """The default chain: ``cli:PRESET`` for the first CLI preset that can run here (executable on
    PATH, model set when the preset needs one), then ``api``, then ``noop``. Runs no model."""

    specs: list[str] = []
    for preset in PRESET_ORDER:
        ok, _ = CLIJudge(preset=preset).available()
        if ok:
            specs.append(f"cli:{preset}")
            break
    return specs + list(DEFAULT_CHAIN)


def chain_config(explicit: list[str] | None = None, store_config: str | os.PathLike | None = None,
                 project_dir: str | os.PathLike | None = None) -> tuple[list[str], str]:
    """The configured chain and where it came from (``"--judge"``, ``"CONSOLIDATE_JUDGES"``, a
    file's path, or ``"default"``). See the module docstring for the order. ``store_config``: the
    store's own configuration file (``consolidate.toml`` in the store folder; the store names it:
    consolidate.store.layout.STORE_CONFIG), None for no store. Raises ConfigError for a malformed
    configuration file."""
    if explicit:
        specs: list[str] = []
        for s in explicit:
            specs.extend(_split(s))
        if not specs:  # --judge '' or ',': said, but naming nothing (was the default chain, silently)
            raise ConfigError(f"--judge {explicit[0]!r} names no judge; give one or more of: "
                              + ", ".join(sorted(installed())))
        return specs, "--judge"
    env = JUDGES.get()
    if env:
        return env, JUDGES.name
    if store_config is not None:
        path = Path(store_config)
        found = _toml_judges(path, ())
        if found:
            return found, str(path)
    path = Path(project_dir if project_dir is not None else os.getcwd()) / "pyproject.toml"
    found = _toml_judges(path, ("tool", "consolidate"))
    if found:
        return found, f"{path} [tool.consolidate]"
    return default_chain(), "default"


def chain_specs(explicit: list[str] | None = None, store_config: str | os.PathLike | None = None,
                project_dir: str | os.PathLike | None = None) -> list[str]:
    """The configured chain as a list of specs (see the module docstring for precedence)."""
    return chain_config(explicit, store_config, project_dir)[0]


def build_chain(explicit: list | None = None, store_config: str | os.PathLike | None = None,
                project_dir: str | os.PathLike | None = None):
    """A JudgeChain of the configured judges. ``explicit`` may mix specs and judge objects (anything
    with a ``judge`` method, e.g. ``ScriptedJudge(...)``); with an object in it, it is the chain, in
    that order. Raises ConfigError for an unknown judge, an item that is neither, or a malformed
    configuration file."""

    if explicit and any(not isinstance(j, str) for j in explicit):
        judges = []
        for j in explicit:
            if isinstance(j, str):
                judges += [load(s) for s in _split(j)]
            else:
                judges.append(as_judge(j))  # ConfigError for an object with no judge method
        return JudgeChain(judges)
    return JudgeChain([load(s) for s in chain_specs(explicit, store_config, project_dir)])


def probe_api_base(api_base: str, api_key: str | None = None, timeout: float = 1.0) -> tuple[bool, str]:
    """Whether an OpenAI-compatible server answers ``GET {api_base}/models`` with a 2xx within
    ``timeout`` seconds. No model call. Returns (answers, why)."""
    import urllib.error  # noqa: PLC0415 - with urllib.request below: only the probe needs them
    import urllib.request  # noqa: PLC0415 - loads http.client, email and ssl: only the probe needs it

    url = api_base.rstrip("/") + "/models"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (a configured local URL)
            body = resp.read(65536)
    except urllib.error.HTTPError as exc:
        return False, f"{url} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"{url} did not answer within {timeout:g} s ({reason})"
    try:
        n = len(json.loads(body).get("data") or [])
        return True, f"{url} answers ({n} model{'s' if n != 1 else ''})"
    except (ValueError, AttributeError):
        return True, f"{url} answers"


def availability(judge, probe: bool = True, probe_timeout: float = 1.0) -> tuple[bool, str]:
    """``judge.available()`` and, for a judge with an ``api_base`` (the API judge on a local
    server), whether that server answers ``GET /models`` within ``probe_timeout`` seconds; for a
    judge with no server, the provider keys it misses (``judge.missing_keys()``). ``judge`` is a
    BaseJudge or any judge object (:func:`consolidate.judges.base.as_judge`). Never calls a model; never raises
    for a judge's own error."""
    judge = as_judge(judge)
    try:
        ok, why = judge.available()
    except Exception as exc:  # a plug-in's bug: report it, do not crash the listing
        return False, f"available() raised {error_text(exc, typed=True)}"
    base = judge.api_base
    if ok and probe and base:
        answers, how = probe_api_base(base, judge.api_key, probe_timeout)
        return answers, f"{why}; {how}"
    if ok and not base:
        missing = judge.missing_keys()
        if missing:
            return False, f"{why}: {' or '.join(missing)} not set"
    return ok, why
