"""Record and replay a CLI judge's exchanges (a cassette), as vcrpy does for HTTP.

A user with ``claude -p``, ``llm`` or ``codex`` records a prompt regression once and replays it in CI,
offline, without the CLI:

- ``CONSOLIDATE_RECORD=1``: every exchange of a CLI judge (judge prompt or compare prompt) that exits
  0 is written to the cassette: the prompt's SHA-256 digest and length (never its text: the prompt
  holds the notes being judged), the prompt version, the command (the JSON schema argument written
  ``{schema}``, its digest kept), the CLI's answer (stdout, as it was), the model id when the CLI
  reports it (Claude Code's envelope: ``modelUsage`` / ``model``; else ``$CONSOLIDATE_CASSETTE_MODEL``,
  else the model asked for), and the seconds the call took. With ``$CONSOLIDATE_CASSETTE_SCRUB``
  (files or folders of text the project must not copy, e.g. ../shared/data/realnotes) every run of
  40+ characters of the answer that also occurs there keeps only its punctuation (:func:`mask_echoes`):
  a model's statements often echo the notes. An exchange whose digest is already in
  the cassette is replaced; the others are kept (delete the file to record from scratch).
- ``CONSOLIDATE_CASSETTE`` set and ``CONSOLIDATE_RECORD`` not ``1``: replay. The CLI is not started (it
  need not be installed); a prompt whose digest is in the cassette gets the recorded answer, parsed
  exactly as a live answer is; any other prompt raises :class:`consolidate.core.errors.CassetteMiss`
  naming the prompt version and the versions the cassette holds. The judge chain lets that error
  through (it is no judge failure to fail soft over): a changed prompt fails loudly.

The cassette is ``$CONSOLIDATE_CASSETTE``: a path (it holds ``/`` or ends in ``.yaml``), or a name
resolved to ``<$CONSOLIDATE_CASSETTE_DIR or ./cassettes>/<name>.yaml``. Recording with no name writes
``cassettes/cli-<preset>[-<model>].yaml``. The file is YAML (PyYAML, read with ``safe_load``)::

    format: consolidate-cli-cassette/1
    model: <what answered, when the recorder names it>
    how: <how the answers were made, when the recorder says>
    interactions:
    - kind: judge | compare
      prompt_version: judge-v1
      prompt_sha256: sha256:<hex>
      prompt_chars: 7775
      command: [claude, -p, --output-format, json, --json-schema, '{schema}', ...]
      schema_sha256: sha256:<hex>
      answer: '<the CLI stdout>'
      model: <model id reported by the CLI, or null>
      seconds: 12.3
      recorded: 2026-11-30T11:30:00+00:00

Writes take a file lock (filelock) and replace the file atomically, so several processes recording
into one cassette lose no exchange.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from consolidate.core import settings
from consolidate.core.atomic import write_text_atomic
from consolidate.core.errors import CassetteMiss, ConfigError

FORMAT = "consolidate-cli-cassette/1"
# the variables (declared in consolidate/core/settings.py)
ENV_RECORD = settings.RECORD.name
ENV_CASSETTE = settings.CASSETTE.name
ENV_DIR = settings.CASSETTE_DIR.name
ENV_MODEL = settings.CASSETTE_MODEL.name
ENV_HOW = settings.CASSETTE_HOW.name
ENV_SCRUB = settings.CASSETTE_SCRUB.name
#: Shortest run of answer text masked by :func:`mask_echoes` when it also occurs in the scrub corpus.
ECHO_WIDTH = 40
_LOCK = threading.Lock()


def prompt_digest(prompt: str | bytes) -> str:
    """``sha256:<hex>`` of the prompt's UTF-8 bytes."""
    data = prompt.encode("utf-8") if isinstance(prompt, str) else prompt
    return "sha256:" + hashlib.sha256(data).hexdigest()


def recording() -> bool:
    """Whether ``CONSOLIDATE_RECORD=1`` (``expected`` and anything else mean replay)."""
    return settings.RECORD.get()


def resolve(name: str) -> Path:
    """The cassette file for ``name`` (see the module docstring)."""
    if "/" in name or name.endswith((".yaml", ".yml")):
        return Path(name)
    return Path(settings.CASSETTE_DIR.get() or "cassettes") / f"{name}.yaml"


def default_name(preset: str, model: str | None) -> str:
    """``cli-<preset>[-<model>]`` with anything but letters, digits, ``.`` and ``-`` made ``-``."""
    raw = f"cli-{preset}" + (f"-{model}" if model else "")
    return re.sub(r"[^A-Za-z0-9.-]+", "-", raw).strip("-")


def from_env(preset: str, model: str | None) -> "CLICassette | None":
    """The cassette the environment asks for, or None (a live judge, nothing recorded)."""
    name = settings.CASSETTE.get() or ""
    if recording():
        return CLICassette(resolve(name or default_name(preset, model)), record=True)
    if name:
        return CLICassette(resolve(name), record=False)
    return None


def reported_model(answer: str) -> str | None:
    """The model id a CLI's answer names: Claude Code's print-mode envelope carries ``modelUsage``
    (keyed by model id) or ``model``; None when the answer names none or is no JSON object."""
    try:
        value = json.loads(answer, strict=False)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    usage = value.get("modelUsage")
    if isinstance(usage, dict) and usage:
        return ",".join(str(k) for k in usage)
    model = value.get("model")
    return model if isinstance(model, str) and model else None


#: Replay cassettes parsed in this process, by resolved path: ``(mtime_ns, size, data)``. A run builds
#: one judge chain per session, and parsing a 2 MB cassette took 2.3 s (pure-Python PyYAML): 48 of the
#: 85 s of a 20-session ``eval --end-to-end`` replay went to parsing the same file again.
_REPLAY_CACHE: dict[str, tuple[int, int, dict[str, Any]]] = {}


def _safe_load(text: str) -> Any:
    """``yaml.safe_load`` with libyaml's parser when PyYAML has it (same result, about 10x faster)."""
    import yaml  # noqa: PLC0415 - third-party yaml: only its callers load it

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader


class CLICassette:
    """One cassette file. ``record``: write exchanges; else replay them. Raises ConfigError when a
    replay cassette does not exist or cannot be read. A replay cassette is parsed once per process
    while the file is unchanged (same modification time and size)."""

    def __init__(self, path: Path, record: bool):
        self.path = Path(path)
        self.record = record
        self._data: dict[str, Any] | None = None
        self._index: dict[tuple[str, str], dict[str, Any]] | None = None
        if not record:
            self._data = self._read_replay()

    def _read_replay(self) -> dict[str, Any]:
        try:
            st = self.path.stat()
            key = str(self.path.resolve())
        except OSError:
            return self._read(must_exist=True)
        cached = _REPLAY_CACHE.get(key)
        if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
            return cached[2]
        data = self._read(must_exist=True)
        _REPLAY_CACHE[key] = (st.st_mtime_ns, st.st_size, data)
        return data

    def _read(self, must_exist: bool) -> dict[str, Any]:
        import yaml  # noqa: PLC0415 - third-party yaml: only its callers load it

        if not self.path.is_file():
            if must_exist:
                raise ConfigError(f"cassette {self.path} does not exist (record it with {ENV_RECORD}=1)",
                                  judge="cli")
            return {"format": FORMAT, "interactions": []}
        try:
            data = _safe_load(self.path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cassette {self.path} cannot be read: {' '.join(str(exc).split())[:200]}",
                              judge="cli") from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions", []), list):
            raise ConfigError(f"cassette {self.path} is not a CLI judge cassette", judge="cli")
        data.setdefault("interactions", [])
        return data

    @property
    def interactions(self) -> list[dict[str, Any]]:
        data = self._data if self._data is not None else self._read(must_exist=False)
        return data["interactions"]

    def find(self, kind: str, prompt: str) -> dict[str, Any] | None:
        """The recorded exchange for this prompt (by kind and digest; the first one recorded), or None."""
        return self._lookup().get((kind, prompt_digest(prompt)))

    def _lookup(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The exchanges by (kind, digest), the first recorded of each; kept for a replay cassette,
        made again from the file as it is now when recording."""
        if self._index is not None:
            return self._index
        index: dict[tuple[str, str], dict[str, Any]] = {}
        for i in self.interactions:
            if isinstance(i, dict):
                index.setdefault((str(i.get("kind")), str(i.get("prompt_sha256"))), i)
        if self._data is not None:
            self._index = index
        return index

    def replay(self, kind: str, prompt: str, version: str) -> dict[str, Any]:
        """The recorded exchange, or CassetteMiss naming ``version`` and what the cassette holds."""
        hit = self.find(kind, prompt)
        if hit is not None:
            return hit
        held = sorted({str(i.get("prompt_version")) for i in self.interactions if i.get("kind") == kind})
        same = [i for i in self.interactions if i.get("kind") == kind and i.get("prompt_version") == version]
        why = ("the prompt changed since it was recorded (its text, the notes, or the batch)" if same
               else f"the cassette holds no {version} exchange")
        raise CassetteMiss(
            f"cassette {self.path}: no recorded answer for this {kind} prompt, prompt version {version}"
            f" ({prompt_digest(prompt)[:19]}); {why}; recorded versions: {', '.join(held) or 'none'};"
            f" re-record with {ENV_RECORD}=1", judge="cli", prompt_version=version, cassette=str(self.path))

    def add(self, exchange: dict[str, Any]) -> None:
        """Write one exchange (replacing one with the same kind and digest), under a file lock."""
        import filelock  # noqa: PLC0415 - third-party filelock: only its callers load it
        import yaml  # noqa: PLC0415 - third-party yaml: only its callers load it

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _LOCK, filelock.FileLock(str(self.path) + ".lock"):
            data = self._read(must_exist=False)
            data["format"] = FORMAT
            for key, setting in (("model", settings.CASSETTE_MODEL), ("how", settings.CASSETTE_HOW)):
                if setting.get():
                    data[key] = setting.get()
            rows = [i for i in data["interactions"]
                    if not (i.get("prompt_sha256") == exchange["prompt_sha256"] and i.get("kind") == exchange["kind"])]
            rows.append(exchange)
            data = {**{k: v for k, v in data.items() if k != "interactions"}, "interactions": rows}
            write_text_atomic(self.path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120))
        try:
            os.unlink(str(self.path) + ".lock")
        except OSError:
            pass


def _scrubbed(answer: str) -> str:
    scrub = scrub_corpus()
    return answer if scrub is None else mask_echoes(answer, scrub[0], windows=scrub[1])


def _model_fields(answer: str, requested: str | None) -> dict[str, Any]:
    """``model`` and where it came from: ``cli`` (the answer names it), ``recorder``
    (``$CONSOLIDATE_CASSETTE_MODEL``), ``spec`` (the model asked for), else null and ``unknown``."""
    for model, source in ((reported_model(answer), "cli"), (settings.CASSETTE_MODEL.get(), "recorder"),
                          (requested, "spec")):
        if model:
            return {"model": model, "model_from": source}
    return {"model": None, "model_from": "unknown"}


def mask_echoes(text: str, corpus: str, width: int = ECHO_WIDTH, windows: set[str] | None = None) -> str:
    """``text`` with the letters and digits of every run of ``width`` or more characters that also
    occurs in ``corpus`` replaced by ``x`` (punctuation, quotes, backslashes and spacing kept, so a
    JSON answer still parses as it did). ``windows``: the set of ``corpus``'s ``width``-character
    substrings, when the caller has it (a large corpus is searched through it)."""
    out, i = [], 0
    while i < len(text):
        chunk = text[i:i + width]
        if len(chunk) == width and (chunk in windows if windows is not None else chunk in corpus):
            k = i + width
            while k < len(text) and text[i:k + 1] in corpus:
                k += 1
            out.append("".join("x" if c.isalnum() else c for c in text[i:k]))
            i = k
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_SCRUB_CACHE: dict[str, tuple[str, set[str]]] = {}


def scrub_corpus() -> tuple[str, set[str]] | None:
    """The text the recorder must not copy (``$CONSOLIDATE_CASSETTE_SCRUB``: files or folders,
    separated by ``os.pathsep``; a JSONL line contributes its ``content``, any other line itself) and
    its ``ECHO_WIDTH``-character windows; None when the variable is unset."""
    spec = settings.CASSETTE_SCRUB.get() or ""
    if not spec:
        return None
    if spec not in _SCRUB_CACHE:
        parts: list[str] = []
        for root in spec.split(os.pathsep):
            path = Path(root)
            files = sorted(path.rglob("*.jsonl")) + sorted(path.rglob("*.txt")) if path.is_dir() else [path]
            for f in files:
                for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                    try:
                        obj = json.loads(line)
                        line = obj.get("content", line) if isinstance(obj, dict) else line
                    except ValueError:
                        pass
                    parts.append(str(line))
        corpus = "\n".join(parts)
        windows = {corpus[i:i + ECHO_WIDTH] for i in range(max(0, len(corpus) - ECHO_WIDTH + 1))}
        _SCRUB_CACHE[spec] = (corpus, windows)
    return _SCRUB_CACHE[spec]


def exchange(kind: str, version: str, prompt: str, argv: list[str], schema_text: str, answer: str,
             seconds: float, requested_model: str | None) -> dict[str, Any]:
    """The record of one call (see the module docstring); the schema argument is written ``{schema}``."""
    return {
        "kind": kind,
        "prompt_version": version,
        "prompt_sha256": prompt_digest(prompt),
        "prompt_chars": len(prompt),
        "command": [a.replace(schema_text, "{schema}") if schema_text else a for a in argv],
        "schema_sha256": prompt_digest(schema_text),
        "answer": _scrubbed(answer),
        **_model_fields(answer, requested_model),
        "seconds": round(seconds, 3),
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
