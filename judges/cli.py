"""The local CLI judge: a subprocess the user already runs (``claude -p``, ``llm``, ``ollama``,
``codex exec``, or any command), the prompt on stdin, structured output asked for and validated.

Judge specs (``consolidate.judges.registry``)::

    cli                       the first preset whose executable is on PATH (claude, llm, ollama, codex)
    cli:PRESET[:MODEL]        cli:claude, cli:claude:sonnet, cli:llm:gpt-4o-mini, cli:ollama:llama3.2:1b
    cli:template:COMMAND...   any command, shell-split; ``{model}``, ``{schema}`` (the JSON schema as
                              one argument) and ``{schema_file}`` (a temporary file holding it) are
                              replaced in each argument

The judge answers every prompt: ``judge()`` the judge prompt (schema ``Verdicts``), ``compare()``
the contradiction check's compare prompt (schema of ``consolidate.judges.api.compare_model``) and
``curate()`` the curation prompt of ``consolidate curate`` (schema ``CurateAnswer``), with the same
presets, time boxes, errors and fail-soft rules.

Presets (the prompt always goes on stdin; ``{schema}`` is the answer's JSON schema with its
``$defs`` inlined):

- ``claude``: ``claude -p --output-format json --json-schema {schema} --settings {"disableAllHooks": true}``
  (``--model MODEL`` when given). Claude Code's print mode wraps the answer in an envelope
  (``{"type": "result", "result": "...", "structured_output": {...}, "total_cost_usd": ...}``);
  ``structured_output`` is read first, then ``result``. Hooks are disabled for that call so that our
  own session hook cannot fire inside the judge;
- ``llm``: ``llm [-m MODEL] --schema {schema} --no-log``;
- ``ollama``: ``ollama run MODEL --format json`` (a model is required);
- ``codex``: ``codex exec --skip-git-repo-check --sandbox read-only --output-schema {schema_file} -``
  (``-m MODEL`` when given). Untested against a real codex: OpenAI's strict structured output may
  refuse this schema (optional fields, a free-form ``fields`` object).

The model comes from the spec, else ``$CONSOLIDATE_CLI_MODEL``. Every child gets
``CONSOLIDATE_JUDGE_CHILD=1`` in its environment (our session hook does nothing when it sees it),
and a process that itself has ``CONSOLIDATE_JUDGE_CHILD=1`` refuses to start a CLI judge: the judge
never recurses into our hook, whatever the CLI does with its hooks.

Record and replay (``consolidate.judges.cli_cassette``): with ``CONSOLIDATE_RECORD=1`` every exchange is written
to a cassette in ``cassettes/`` (prompt digest, command, answer, model id, seconds); with
``CONSOLIDATE_CASSETTE=NAME`` and no recording, the recorded answers are replayed without starting the
CLI, and a prompt the cassette does not hold raises CassetteMiss, naming the prompt version.

Errors raised by ``judge()``: JudgeUnavailable (executable not on PATH, cannot be started, non-zero
exit: the message carries the last stderr line, at most 300 characters), JudgeTimeout (past the time
box: the child was started in a new session and its whole process group gets SIGTERM, then SIGKILL
after ``kill_grace`` seconds; the group is gone when ``judge()`` returns), JudgeOutputInvalid (exit 0
but no JSON answer of the expected shape). Output is parsed leniently: a JSON object, JSON inside a
```json markdown fence, the first ``{...}`` block in prose, raw control characters inside strings
(``json.loads(strict=False)``); ``last_call["parsed_from"]`` says which one it took.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any

from consolidate.core.errors import ConfigError, JudgeOutputInvalid, JudgeTimeout, JudgeUnavailable
from consolidate.core.settings import CLI_MODEL, JUDGE_CHILD

from .prompting import (COMPARE_PROMPT_VERSION, PROMPT_VERSION, Verdicts, compare_model, judge_model,
                        render_compare_prompt,
                        render_prompt, selected_prompt_version)
from . import cli_cassette
from .prompting import CurateAnswer, render_curate_prompt, selected_curate_prompt_version
from .base import BaseJudge, JudgeContext, JudgeNote

#: Preset name -> argv template. ``{model}`` arguments are dropped with their flag when no model is set.
PRESETS: dict[str, list[str]] = {
    "claude": ["claude", "-p", "--output-format", "json", "--json-schema", "{schema}",
               "--settings", '{"disableAllHooks": true}', "--model", "{model}"],
    "llm": ["llm", "-m", "{model}", "--schema", "{schema}", "--no-log"],
    "ollama": ["ollama", "run", "{model}", "--format", "json"],
    "codex": ["codex", "exec", "--skip-git-repo-check", "--sandbox", "read-only",
              "--output-schema", "{schema_file}", "-m", "{model}", "-"],
}
#: Presets tried, in this order, by the bare ``cli`` spec and by the default chain.
PRESET_ORDER = ("claude", "llm", "ollama", "codex")
#: Presets that cannot run without a model.
NEEDS_MODEL = ("ollama",)
#: Environment variable set in every judge child; our session hook does nothing when it is set.
CHILD_ENV = JUDGE_CHILD.name
#: Seconds between SIGTERM and SIGKILL of the child's process group on timeout.
KILL_GRACE = 1.0
#: Longest stderr excerpt carried by an error message, in characters.
STDERR_CAP = 300

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.S)


def schema(model=Verdicts) -> dict:
    """``model.model_json_schema()`` (default: the judge prompt's ``Verdicts``; the compare prompt's
    model for :meth:`CLIJudge.compare`) with every ``$ref`` replaced by its definition (some CLIs do
    not resolve ``$defs``)."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def inline(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.split("/")[-1]])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(raw)


def _lenient(text: str) -> bool:
    """Whether ``text`` needed ``strict=False`` (raw control characters inside strings)."""
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def _decode(text: str) -> Any:
    return json.loads(text, strict=False)


def parse_output(text: str) -> tuple[Any, str]:
    """The JSON value in a CLI's stdout and where it was found: ``"json"`` (the whole output),
    ``"fence"`` (a markdown code fence), ``"prose"`` (the first ``{...}`` block that decodes), with
    ``"+control-chars"`` appended when raw control characters inside strings had to be read leniently.

    Raises JudgeOutputInvalid when there is none."""
    text = text.strip()
    if not text:
        raise JudgeOutputInvalid("empty output")
    try:
        return _decode(text), "json" + ("+control-chars" if _lenient(text) else "")
    except ValueError:
        pass
    for m in _FENCE.finditer(text):
        block = m.group(1).strip()
        try:
            return _decode(block), "fence" + ("+control-chars" if _lenient(block) else "")
        except ValueError:
            continue
    decoder = json.JSONDecoder(strict=False)
    for m in re.finditer(r"[{\[]", text):
        try:
            value, end = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
            return value, "prose" + ("+control-chars" if _lenient(text[m.start():end]) else "")
    preview = " ".join(text.split())[:80]
    raise JudgeOutputInvalid(f"no JSON in the output ({preview!r})")


def extract_verdicts(value: Any, depth: int = 0) -> tuple[list, dict[str, Any]]:
    """Raw verdict dicts from a parsed answer, and what the envelope said (cost, tokens).

    Accepts ``{"verdicts": [...]}``, a bare list of verdicts, a single verdict object, and Claude
    Code's print-mode envelope (``structured_output`` first, else ``result`` parsed again).
    Raises JudgeOutputInvalid for any other shape, JudgeUnavailable for an envelope reporting an error."""
    return extract_items(value, "verdicts", "verdict", depth)


def extract_relations(value: Any) -> tuple[list, dict[str, Any]]:
    """Raw relation dicts (``{"id", "relation", "reason"}``) from a parsed answer to the compare
    prompt: ``{"relations": [...]}``, a bare list, a single relation object, or Claude Code's
    envelope, like :func:`extract_verdicts`."""
    return extract_items(value, "relations", "relation")


def extract_actions(value: Any) -> tuple[list, dict[str, Any]]:
    """Raw action dicts (``{"id", "action", "into", "with", "reason"}``) from a parsed answer to the
    curation prompt: ``{"actions": [...]}``, a bare list, a single action object, or Claude Code's
    envelope, like :func:`extract_verdicts`."""
    return extract_items(value, "actions", "action")


def extract_items(value: Any, key: str, field: str, depth: int = 0) -> tuple[list, dict[str, Any]]:
    """The list under ``key`` (``verdicts`` or ``relations``) of a parsed answer, whose items carry
    ``id`` and ``field``; see :func:`extract_verdicts` for the shapes taken."""
    meta: dict[str, Any] = {}
    if isinstance(value, dict) and value.get("type") == "result" and ("result" in value or "structured_output" in value):
        if value.get("total_cost_usd") is not None:
            meta["cost"] = value["total_cost_usd"]
        usage = value.get("usage")
        if isinstance(usage, dict) and usage:
            meta["prompt_tokens"] = int(usage.get("input_tokens") or 0)
            meta["completion_tokens"] = int(usage.get("output_tokens") or 0)
        if value.get("is_error"):
            why = value.get("result") or value.get("subtype") or "error"
            raise JudgeUnavailable(f"the CLI reported an error: {' '.join(str(why).split())[:STDERR_CAP]}")
        inner = value.get("structured_output")
        if inner is None and isinstance(value.get("result"), str) and depth < 2:
            inner, where = parse_output(value["result"])
            meta["parsed_from"] = f"envelope-result-{where}"
        else:
            meta["parsed_from"] = "envelope-structured_output"
        raw, inner_meta = extract_items(inner, key, field, depth + 1)
        return raw, {**inner_meta, **meta}
    if isinstance(value, dict) and isinstance(value.get(key), list):
        return value[key], meta
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return value, meta
    if isinstance(value, dict) and "id" in value and field in value:
        return [value], meta
    shape = type(value).__name__ if not isinstance(value, dict) else "object with keys " + ", ".join(list(value)[:5])
    raise JudgeOutputInvalid(f"answer is not a list of {key} ({shape})")


def _last_line(data: bytes) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:STDERR_CAP] if lines else ""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _leader_exited(proc: subprocess.Popen) -> bool:
    """Whether the child has exited, without reaping it (its pid, hence the group id, stays reserved
    while it is a zombie, so a later ``killpg`` cannot hit a reused id)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # no waitid: fall back to polling (reaps)
        return proc.poll() is not None


class CLIJudge(BaseJudge):
    """A judge that runs a local CLI. ``arg`` is the part of the spec after ``cli:`` (see the module
    docstring); ``preset``/``model``/``command`` may be given as keywords instead.

    ``calls`` counts started subprocesses; ``last_call`` (read by the chain into the judge.call
    event) holds ``seconds`` (wall time of the call), ``exit_code``, ``parsed_from`` and, for
    Claude Code, ``cost`` (USD) and tokens; ``last_pgid`` is the process group of the last child.

    Raises ConfigError at construction for an unknown preset or an empty template."""

    prompt_version = PROMPT_VERSION

    def __init__(self, arg: str | None = None, *, preset: str | None = None, model: str | None = None,
                 command: str | None = None, kill_grace: float = KILL_GRACE, env: dict[str, str] | None = None,
                 prompt_version: str | None = None, compare_prompt_version: str = COMPARE_PROMPT_VERSION,
                 cassette: "cli_cassette.CLICassette | None" = None):
        if arg:
            head, _, rest = arg.partition(":")
            preset = preset or head.strip()
            if preset == "template":
                command = command or rest
            else:
                model = model or rest.strip() or None
        if command and not preset:
            preset = "template"
        if not preset:
            preset = next((p for p in PRESET_ORDER if shutil.which(PRESETS[p][0])), "claude")
        if preset == "template":
            if not command or not command.strip():
                raise ConfigError("cli judge: cli:template needs a command, e.g. cli:template:mycli --json", judge="cli")
            try:
                self.argv_template = shlex.split(command)
            except ValueError as exc:
                raise ConfigError(f"cli judge: cannot split the template command ({exc})", judge="cli") from None
        elif preset in PRESETS:
            self.argv_template = list(PRESETS[preset])
        else:
            raise ConfigError(f"cli judge: unknown preset {preset!r}; presets: {', '.join(PRESETS)}, template",
                              judge="cli")
        self.preset = preset
        self.model = model or CLI_MODEL.get()
        self.name = f"cli:{preset}"
        self.kill_grace = kill_grace
        self.env = dict(env or {})
        self.prompt_version = selected_prompt_version(prompt_version)
        self.compare_prompt_version = compare_prompt_version
        self.calls = 0
        self.last_call: dict[str, Any] = {}
        self.last_pgid: int | None = None
        self._running: subprocess.Popen | None = None  # the call's process while it runs (cancel)
        #: record/replay (``consolidate.judges.cli_cassette``): from CONSOLIDATE_RECORD / CONSOLIDATE_CASSETTE unless given
        self.cassette = cassette if cassette is not None else cli_cassette.from_env(preset, self.model)

    # -- command line -------------------------------------------------------------------------

    def argv(self, schema_file: str | None = None, response_model=Verdicts) -> list[str]:
        """The command for one call: placeholders replaced (``{schema}`` by ``response_model``'s
        schema); for a preset, a ``{model}`` argument and the flag before it are dropped when no
        model is set."""
        schema_text = json.dumps(schema(response_model), separators=(",", ":"))
        out: list[str] = []
        for arg in self.argv_template:
            if arg == "{model}" and not self.model and self.preset != "template":
                if out and out[-1].startswith("-"):
                    out.pop()
                continue
            arg = arg.replace("{model}", self.model or "").replace("{schema}", schema_text)
            if "{schema_file}" in arg:
                arg = arg.replace("{schema_file}", schema_file or "")
            out.append(arg)
        return out

    def _needs_schema_file(self) -> bool:
        return any("{schema_file}" in a for a in self.argv_template)

    def executable(self) -> str:
        return self.argv_template[0]

    def available(self) -> tuple[bool, str]:
        """(usable now, why) without running a model: is the executable on PATH, is a needed model set."""
        if self.cassette is not None and not self.cassette.record:
            return True, f"replaying cassette {self.cassette.path}"
        if JUDGE_CHILD.raw() == "1":
            return False, f"inside a judge call ({CHILD_ENV}=1): a CLI judge is not started from there"
        exe = self.executable()
        path = shutil.which(exe)
        if not path:
            return False, f"{exe} not on PATH"
        needs_model = self.preset in NEEDS_MODEL or (self.preset == "template"
                                                     and any("{model}" in a for a in self.argv_template))
        if needs_model and not self.model:
            return False, f"{self.name} needs a model: {self.name}:MODEL or CONSOLIDATE_CLI_MODEL"
        return True, f"{path}" + (f" (model {self.model})" if self.model else "")

    # -- the call -----------------------------------------------------------------------------

    def judge(self, batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[dict]:
        """Run the CLI once for the batch; returns raw verdict dicts (validated by the chain).

        ``timeout`` in seconds (None: no limit). See the module docstring for the errors raised."""
        return self._call(render_prompt(batch, context, self.prompt_version), judge_model(self.prompt_version),
                          extract_verdicts, timeout,
                          "judge", self.prompt_version)

    def compare(self, pairs: list, context: JudgeContext, timeout: float | None) -> list[dict]:
        """The contradiction check, like the API judge's: ``pairs`` is ``[(pid, Pair)]``; one CLI
        call with the compare prompt (``compare_prompt_version``) and its schema; returns raw
        ``{"id", "relation", "reason"}`` dicts (checked by ``consolidate.judges.chain.compare_pairs``). Same
        time box, errors and output parsing as :meth:`judge`."""
        version = self.compare_prompt_version
        return self._call(render_compare_prompt(pairs, context, version), compare_model(version),
                          extract_relations, timeout, "compare", version)

    @property
    def curate_prompt_version(self) -> str:
        """The curation prompt version (prompts/<version>.md) of :meth:`curate`: the one selected
        (``curate --prompt-version``, ``$CONSOLIDATE_CURATE_PROMPT_VERSION``), else CURATE_PROMPT_VERSION."""
        return selected_curate_prompt_version()

    def curate(self, members: list, context: JudgeContext, timeout: float | None) -> list[dict]:
        """The curation pass: ``members`` is a group of ``CurateMember``; one CLI call with the
        curation prompt and :class:`~consolidate.judges.prompting.CurateAnswer`'s schema; returns raw
        ``{"id", "action", "into", "with", "reason"}`` dicts (checked by
        ``consolidate.judges.curating.validate_curation``). Same time box, errors, parsing and
        cassettes (kind ``curate``) as :meth:`judge`."""
        version = self.curate_prompt_version
        return self._call(render_curate_prompt(members, context, version), CurateAnswer, extract_actions, timeout,
                          "curate", version)

    def _call(self, prompt_text: str, response_model, extract, timeout: float | None, kind: str = "judge",
              version: str | None = None) -> list[dict]:
        """One CLI call: the prompt on stdin, ``response_model``'s schema in the command line (or a
        temporary file), the answer's items read by ``extract``. Replaying a cassette, the recorded
        answer stands in for the call (CassetteMiss for a prompt it does not hold); recording, the
        exchange is written to it."""
        self.last_call = {}
        version = version or self.prompt_version
        if self.cassette is not None and not self.cassette.record:
            hit = self.cassette.replay(kind, prompt_text, version)
            self.last_call = {"seconds": hit.get("seconds"), "replayed": True, "model": hit.get("model")}
            return self._parse(str(hit.get("answer") or ""), extract)
        ok, why = self.available()
        if not ok:
            raise JudgeUnavailable(f"{self.name}: {why}", judge=self.name)
        if timeout is not None and timeout <= 0:
            raise JudgeTimeout(f"{self.name}: no time left", judge=self.name, seconds=timeout)
        prompt = prompt_text.encode("utf-8")
        schema_path = None
        if self._needs_schema_file():
            fd, schema_path = tempfile.mkstemp(prefix="consolidate-schema-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(schema(response_model), f)
        try:
            argv = self.argv(schema_path, response_model)
            if self.cassette is None:
                return self._run(argv, prompt, timeout, extract)
            out = self._exec(argv, prompt, timeout)
            schema_text = json.dumps(schema(response_model), separators=(",", ":"))
            self.cassette.add(cli_cassette.exchange(kind, version, prompt_text, argv, schema_text, out,
                                                    self.last_call["seconds"], self.model))
            return self._parse(out, extract)
        finally:
            if schema_path:
                try:
                    os.unlink(schema_path)
                except OSError:
                    pass

    def _run(self, argv: list[str], prompt: bytes, timeout: float | None, extract=extract_verdicts) -> list[dict]:
        return self._parse(self._exec(argv, prompt, timeout), extract)

    def _exec(self, argv: list[str], prompt: bytes, timeout: float | None) -> str:
        """Run the command with ``prompt`` on stdin within ``timeout``; its stdout (exit 0 only)."""
        env = {**os.environ, **self.env, CHILD_ENV: "1"}
        started = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, start_new_session=True)
        except OSError as exc:
            raise JudgeUnavailable(f"{self.name}: cannot start {argv[0]}: {exc.strerror or exc}", judge=self.name) from None
        self.calls += 1
        self.last_pgid = proc.pid  # start_new_session: the child leads its own group
        self._running = proc
        try:
            out, err = proc.communicate(prompt, timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            self.last_call = {"seconds": round(time.monotonic() - started, 3), "killed": True}
            raise JudgeTimeout(f"{self.name}: no answer within {timeout:.1f} s (process group killed)",
                               judge=self.name, seconds=timeout) from None
        except BaseException:
            self._kill_group(proc)
            raise
        finally:
            self._running = None
        seconds = round(time.monotonic() - started, 3)
        self.last_call = {"seconds": seconds, "exit_code": proc.returncode}
        if proc.returncode != 0:
            if proc.returncode < 0:
                what = f"killed by signal {-proc.returncode}"
            else:
                what = f"exit {proc.returncode}"
            line = _last_line(err) or "(nothing on stderr)"
            raise JudgeUnavailable(f"{self.name}: {what}: {line}", judge=self.name)
        return out.decode("utf-8", "replace")

    def _parse(self, out: str, extract) -> list[dict]:
        """The answer's items from the CLI's stdout (JudgeOutputInvalid / JudgeUnavailable)."""
        try:
            value, where = parse_output(out)
            raw, meta = extract(value)
        except (JudgeOutputInvalid, JudgeUnavailable) as exc:
            raise type(exc)(f"{self.name}: {exc}", judge=self.name) from None
        self.last_call.update({"parsed_from": where, **meta})
        return raw

    def cancel(self) -> None:
        """End the call in progress, if any, with its process group (SIGTERM, then SIGKILL after
        ``kill_grace`` s): the chain calls it on Ctrl-C while it waits for this judge, so no model
        CLI goes on running (and costing) after the run stopped."""
        proc = self._running
        if proc is not None and proc.returncode is None:
            self._end_group(proc)  # the call's own thread then sees its end and reaps the process

    def _kill_group(self, proc: subprocess.Popen) -> None:
        """SIGTERM the child's process group, SIGKILL it after ``kill_grace`` seconds (at once if the
        leader has exited), reap the child, and wait briefly until the group is empty."""
        pgid = proc.pid
        self._end_group(proc)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        # Grandchildren were killed too; they are zombies until init reaps them. Give it a moment.
        end = time.monotonic() + 0.5
        while _group_alive(pgid) and time.monotonic() < end:
            time.sleep(0.02)

    def _end_group(self, proc: subprocess.Popen) -> None:
        """SIGTERM the child's process group, SIGKILL it after ``kill_grace`` seconds (at once if the
        leader has exited); does not reap."""
        pgid = proc.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        end = time.monotonic() + self.kill_grace
        while time.monotonic() < end and not _leader_exited(proc):
            time.sleep(0.02)
        try:
            os.killpg(pgid, signal.SIGKILL)  # the leader is at most a zombie here: the group id is still ours
        except ProcessLookupError:
            pass
