"""The API judge: any litellm model, with structured output through instructor (``Mode.TOOLS``).

Works with hosted providers and with local OpenAI-compatible servers (llama.cpp's server, ollama,
vLLM) through ``api_base``. Configuration (judge spec ``api:MODEL`` or environment):

- ``CONSOLIDATE_API_MODEL``: the litellm model string (e.g. ``openai/gpt-4o-mini``, or
  ``openai/local`` for an OpenAI-compatible server);
- ``CONSOLIDATE_API_BASE``: the server's base URL (e.g. ``http://127.0.0.1:8765/v1``);
- ``CONSOLIDATE_API_KEY``: the key for that server (provider keys such as ``OPENAI_API_KEY`` are read
  by litellm itself).

With no model configured it picks a cheap default when a provider key is set (``OPENAI_API_KEY`` ->
``gpt-4o-mini``, ``ANTHROPIC_API_KEY`` -> ``anthropic/claude-3-5-haiku-latest``), else it is
unavailable. ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before litellm is imported: otherwise
litellm fetches a price list from the network at import and can hang 5 to 10 s where the network
drops traffic. Retries (tenacity, exponential backoff with jitter) cover rate limits and 5xx only,
inside the time box.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
import typing
from types import SimpleNamespace
from typing import Any

from consolidate.core import settings
from consolidate.core.errors import JudgeOutputInvalid, JudgeTimeout, JudgeUnavailable

from .base import BaseJudge, JudgeContext, JudgeNote
from .prompting import CurateAnswer, render_curate_prompt, selected_curate_prompt_version
from .litellm_env import NOISY_LOGGERS, import_litellm as _import_litellm, missing_provider_keys, quiet_libraries  # noqa: F401
# The prompts and their answer schemas live in consolidate.judges.prompting (one place for every judge kind);
# the names stay importable from here.
from .prompting import (COMPARE_MODELS, COMPARE_PROMPT_VERSION, NOTES_CLOSE, NOTES_OPEN,  # noqa: F401
                        PROMPT_VERSION, PROMPT_VERSION_ENV, PROMPT_VERSIONS, CompareAnswer, Relations, Verdicts,
                        _LENIENT, compare_model, escape_note_text, load_prompt, render_compare_prompt, render_prompt,
                        judge_model, selected_prompt_version)

#: Output budget: about 150 tokens per verdict (a keep's statement, fields, reason and entities), capped.
TOKENS_PER_NOTE = 150
MAX_TOKENS_CAP = 4096
_DEFAULT_BY_KEY = (("OPENAI_API_KEY", "gpt-4o-mini"), ("ANTHROPIC_API_KEY", "anthropic/claude-3-5-haiku-latest"))


class APIJudge(BaseJudge):
    """The litellm + instructor judge. ``arg`` (from the spec ``api:MODEL``) is the model string.

    ``prompt_version``: the judge prompt (default :func:`selected_prompt_version`: ``$CONSOLIDATE_PROMPT_VERSION``
    or PROMPT_VERSION). Raises ConfigError at construction for an unknown prompt version, nothing
    else; ``judge()`` raises JudgeUnavailable (no model configured,
    connection refused, auth), JudgeTimeout (past the time box) or JudgeOutputInvalid (no valid
    structured answer). ``usage`` accumulates ``calls``, ``prompt_tokens``, ``completion_tokens``,
    ``cost`` (USD, when litellm knows the price)."""

    name = "api"
    prompt_version: str = PROMPT_VERSION  # set per judge in __init__

    def __init__(self, arg: str | None = None, *, model: str | None = None, api_base: str | None = None,
                 api_key: str | None = None, max_retries: int = 2, temperature: float = 0.0, seed: int = 42,
                 prompt_version: str | None = None, compare_prompt_version: str = COMPARE_PROMPT_VERSION):
        self.model = model or arg or settings.API_MODEL.get() or self._default_model()
        self.api_base = api_base or settings.API_BASE.get()
        self.api_key = api_key or settings.API_KEY.get()
        self.max_retries = max_retries
        self.temperature = temperature
        self.seed = seed
        self.prompt_version = selected_prompt_version(prompt_version)
        self.compare_prompt_version = compare_prompt_version
        self.usage: dict[str, Any] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        self.last_call: dict[str, Any] = {}

    @staticmethod
    def _default_model() -> str | None:
        for env, model in _DEFAULT_BY_KEY:
            if os.environ.get(env):
                return model
        return None

    def available(self) -> tuple[bool, str]:
        """(usable now, why), without a model call."""
        if not self.model:
            return False, "no model: set CONSOLIDATE_API_MODEL (and CONSOLIDATE_API_BASE for a local server) or a provider key"
        if self.api_base:
            return True, f"{self.model} at {self.api_base}"
        return True, f"{self.model}"

    def missing_keys(self) -> list[str]:
        """The provider key variables litellm needs for the model and cannot find, when neither a
        server (``api_base``) nor a key is configured (no network; imports litellm)."""
        if self.api_base or self.api_key or not self.model:
            return []
        return missing_provider_keys(self.model)

    def judge(self, batch: list[JudgeNote], context: JudgeContext, timeout: float | None) -> list[dict]:
        """One structured call for the batch; returns raw verdict dicts (validated by the chain).
        An answer cut at ``max_tokens`` gives the verdicts it completed (see :func:`salvage_objects`);
        the chain passes the rest of the batch on."""
        version = self.prompt_version or PROMPT_VERSION
        return self._structured(render_prompt(batch, context, version), judge_model(version),
                                min(MAX_TOKENS_CAP, TOKENS_PER_NOTE * len(batch) + 200), timeout)

    def compare(self, pairs: list, context: JudgeContext, timeout: float | None) -> list[dict]:
        """The contradiction check: ``pairs`` is ``[(pid, Pair)]``; returns ``[{"id", "relation",
        "reason"}]`` with relation ``duplicate``, ``updates``, ``contradicts`` or ``unrelated`` (prompt
        ``compare_prompt_version``, default ``contradiction-v2``; v1 offers no ``updates``)."""
        version = self.compare_prompt_version
        return self._structured(render_compare_prompt(pairs, context, version), compare_model(version),
                                min(MAX_TOKENS_CAP, 60 * len(pairs) + 100), timeout)

    @property
    def curate_prompt_version(self) -> str:
        """The curation prompt version of :meth:`curate` (as the CLI judge's)."""
        return selected_curate_prompt_version()

    def curate(self, members: list, context: JudgeContext, timeout: float | None) -> list[dict]:
        """The curation pass: ``members`` is a group of ``CurateMember``; returns raw ``{"id",
        "action", "into", "with", "reason"}`` dicts (prompt :attr:`curate_prompt_version`; checked by
        ``consolidate.judges.curating.validate_curation``)."""
        version = self.curate_prompt_version
        return [{("with" if k == "with_" else k): v for k, v in item.items()} for item in
                self._structured(render_curate_prompt(members, context, version), CurateAnswer,
                                 min(MAX_TOKENS_CAP, 60 * len(members) + 100), timeout)]

    def _structured(self, prompt: str, response_model, max_tokens: int, timeout: float | None) -> list[dict]:
        """One chat call with ``response_model`` (a model with one list field) as the forced tool
        (instructor ``Mode.TOOLS``); returns that list's items as dicts, or the items completed
        before an answer was cut at ``max_tokens`` (:meth:`_salvage`). It is
        retried by tenacity on rate limits and 5xx only, inside ``timeout`` seconds. Raises the judge
        error tree (see :func:`_classify`)."""
        ok, why = self.available()
        if not ok:
            raise JudgeUnavailable(f"api: {why}", judge=self.name)
        deadline = None if timeout is None else time.time() + timeout
        litellm = _import_litellm()
        import instructor  # noqa: PLC0415 - heavy (instructor): loaded only when used
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_before_delay, wait_random_exponential  # noqa: PLC0415 - third-party tenacity: only its callers load it

        client = instructor.from_litellm(litellm.completion, mode=instructor.Mode.TOOLS)
        kwargs: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                                  "response_model": response_model, "temperature": self.temperature,
                                  "max_retries": 0, "seed": self.seed, "max_tokens": max_tokens,
                                  # the OpenAI SDK's own retries off: tenacity retries, inside the time box
                                  "num_retries": 0}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        stop: Any = stop_after_attempt(self.max_retries + 1)
        if timeout is not None:  # (deadline is set)
            stop = stop | stop_before_delay(max(0.0, timeout))
        retrying = Retrying(stop=stop, wait=wait_random_exponential(multiplier=0.5, max=8),
                            retry=retry_if_exception(_retryable), reraise=True)
        started = time.time()
        self.last_call = {}
        try:
            for attempt in retrying:
                with attempt:
                    left = None if deadline is None else deadline - time.time()
                    if left is not None and left <= 0.05:
                        raise JudgeTimeout(f"api: no answer within {timeout:.1f} s", judge=self.name, seconds=timeout)
                    kwargs["timeout"] = left
                    _LENIENT.parsed = False
                    answer, completion = client.chat.completions.create_with_completion(**kwargs)
        except JudgeTimeout:
            raise
        except Exception as exc:
            # the model answered but instructor refused the answer (e.g. JSON cut at max_tokens):
            # the call still cost its tokens, so count them
            completion = exc.last_completion if isinstance(exc, provider_errors().answered) else None
            if getattr(completion, "usage", None) is None:
                raise _classify(exc, self.name, timeout) from None
            self._record_usage(completion, time.time() - started, litellm)
            if not self._was_cut(completion, max_tokens):
                raise _classify(exc, self.name, timeout) from None
            return self._salvage(completion, response_model, max_tokens)
        self._record_usage(completion, time.time() - started, litellm)
        if self._was_cut(completion, max_tokens):
            return self._salvage(completion, response_model, max_tokens)
        key = next(iter(response_model.model_fields))
        return [item.model_dump(exclude_none=True) for item in getattr(answer, key)]

    def _was_cut(self, completion, max_tokens: int) -> bool:
        """Whether the answer stopped at ``max_tokens``: finish_reason ``length``, or (llama.cpp
        reports ``tool_calls`` even then) exactly ``max_tokens`` completion tokens."""
        try:
            reason = completion.choices[0].finish_reason
        except (AttributeError, IndexError, TypeError):
            reason = None
        return reason == "length" or self.last_call.get("completion_tokens") == max_tokens

    def _salvage(self, completion, response_model, max_tokens: int) -> list[dict]:
        """The complete objects of a cut answer's list (``verdicts`` or ``relations``); raises
        JudgeOutputInvalid when there is none. Noted in ``last_call`` (the run's judge.call event)."""
        key = next(iter(response_model.model_fields))
        (item_model,) = typing.get_args(response_model.model_fields[key].annotation)  # list[Item] -> Item
        objects = []
        for obj in salvage_objects(_answer_text(completion), key):
            try:  # the same shape a whole answer gives; an invalid one goes on raw, for the chain to report
                objects.append(item_model.model_validate(obj).model_dump(exclude_none=True))
            except ValueError:
                objects.append(obj)
        self.last_call["cut_at_max_tokens"] = max_tokens
        self.last_call["salvaged"] = len(objects)
        if not objects:
            raise JudgeOutputInvalid(f"api: answer cut at max_tokens ({max_tokens}) before one complete {key[:-1]}",
                                     judge=self.name)
        return objects

    def _record_usage(self, completion, seconds: float, litellm) -> None:
        usage = getattr(completion, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            cost = float(litellm.completion_cost(completion_response=completion) or 0.0)
        except Exception:
            cost = 0.0
        self.usage["calls"] += 1
        self.usage["prompt_tokens"] += pt
        self.usage["completion_tokens"] += ct
        self.usage["cost"] += cost
        self.last_call = {"prompt_tokens": pt, "completion_tokens": ct, "cost": cost, "seconds": round(seconds, 3)}
        if getattr(_LENIENT, "parsed", False):
            self.last_call["parsed_leniently"] = "raw control characters inside JSON strings"
            _LENIENT.parsed = False


def _answer_text(completion) -> str:
    """The raw text of an answer: the forced tool call's arguments, else the message content."""
    try:
        message = completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return ""
    for call in getattr(message, "tool_calls", None) or []:
        args = getattr(getattr(call, "function", None), "arguments", None)
        if isinstance(args, str):
            return args
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def salvage_objects(text: str, key: str) -> list[dict]:
    """The complete JSON objects at the start of the list under ``key`` in ``text``, a JSON answer
    that may be cut anywhere (a model stopped at max_tokens): ``'{"verdicts": [{...}, {..., "x'``
    gives the first object. Each object returned was closed by the model itself, so it is as whole
    as in a finished answer; reading stops at the first thing that is not a complete object. Raw
    control characters inside strings are read (``strict=False``, as the lenient parse)."""
    match = re.search(r'"' + re.escape(key) + r'"\s*:\s*\[', text)
    if not match:
        return []
    decoder = json.JSONDecoder(strict=False)
    pos, out = match.end(), []  # type: int, list[dict]
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] != "{":
            return out
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return out
        if isinstance(obj, dict):
            out.append(obj)


@functools.cache
def provider_errors() -> SimpleNamespace:
    """The exception classes the API judge maps, imported on first use (the session-end path
    imports no litellm, instructor, openai or httpx at module level). Attributes, each a tuple of
    classes:

    - ``wrapper``: instructor's ``InstructorRetryException`` (wraps whatever failed the call: the
      provider error as its ``__cause__``, an answer that did not validate in ``failed_attempts``);
    - ``answered``: instructor's errors that carry the model's answer (``last_completion``): the
      wrapper and ``IncompleteOutputException`` (an answer cut at ``max_tokens``);
    - ``provider``: errors of the provider stack (``openai.OpenAIError``, which every litellm
      exception of a call subclasses, and ``httpx.HTTPError``): the first of these down the cause
      chain is the error that is mapped;
    - ``timeout``: ``litellm.Timeout``, ``openai.APITimeoutError``, ``httpx.TimeoutException``,
      ``TimeoutError`` -> JudgeTimeout;
    - ``connection``: ``openai.APIConnectionError`` (litellm's subclasses it), ``httpx.TransportError``,
      ``ConnectionError`` -> JudgeUnavailable, never retried (litellm reports a refused connection
      as an ``InternalServerError`` caused by ``openai.APIConnectionError``);
    - ``status``: errors that carry an HTTP ``status_code`` (``openai.APIStatusError``,
      ``litellm.APIError``) and the rest of the API errors (``openai.APIError``,
      ``httpx.HTTPStatusError``) -> JudgeUnavailable;
    - ``retryable``: ``litellm.RateLimitError``, ``InternalServerError``, ``ServiceUnavailableError``,
      ``BadGatewayError`` and openai's ``RateLimitError``, ``InternalServerError``: retried (as is any
      status error with status 429 or 5xx).

    Anything else (pydantic's ValidationError inside instructor's wrapper, instructor's own errors,
    a JSON error) is an answer that is not valid verdicts: JudgeOutputInvalid."""
    litellm = _import_litellm()
    import httpx  # noqa: PLC0415 - heavy (httpx): loaded only when used
    import openai  # noqa: PLC0415 - heavy (anyio, openai, pydantic): loaded only when used
    from instructor.core import IncompleteOutputException, InstructorRetryException  # noqa: PLC0415 - heavy (instructor, pydantic, tenacity): loaded only when used

    lx = litellm.exceptions
    return SimpleNamespace(
        wrapper=(InstructorRetryException,),
        answered=(InstructorRetryException, IncompleteOutputException),
        provider=(openai.OpenAIError, httpx.HTTPError),
        timeout=(lx.Timeout, openai.APITimeoutError, httpx.TimeoutException, TimeoutError),
        connection=(openai.APIConnectionError, httpx.TransportError, ConnectionError),
        status_code=(openai.APIStatusError, lx.APIError),
        status=(openai.APIError, lx.APIError, httpx.HTTPStatusError),
        retryable=(lx.RateLimitError, lx.InternalServerError, lx.ServiceUnavailableError, lx.BadGatewayError,
                   openai.RateLimitError, openai.InternalServerError),
    )


def _chain_of(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions under it (``__cause__``, else ``__context__``), each once."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not e for e in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _cause(exc: BaseException) -> BaseException:
    """The error to map: under instructor's wrapper, the last failed attempt's exception when it
    recorded one; then the first provider error (:func:`provider_errors`) down the cause chain, else
    the exception itself."""
    errors = provider_errors()
    if isinstance(exc, errors.wrapper) and exc.failed_attempts and exc.failed_attempts[-1].exception is not None:
        exc = exc.failed_attempts[-1].exception
    return next((e for e in _chain_of(exc) if isinstance(e, errors.provider)), exc)


def _is_timeout(root: BaseException) -> bool:
    return any(isinstance(e, provider_errors().timeout) for e in _chain_of(root))


def _is_connection(root: BaseException) -> bool:
    """A connection that failed (refused, reset, DNS), a timeout among them, anywhere under ``root``."""
    return any(isinstance(e, provider_errors().connection) for e in _chain_of(root))


def _retryable(exc: BaseException) -> bool:
    """Rate limits and 5xx only (see :func:`provider_errors`); a failed connection, a timeout among
    them, is not retried."""
    root = _cause(exc)
    errors = provider_errors()
    if _is_connection(root):
        return False
    if isinstance(root, errors.retryable):
        return True
    code = root.status_code if isinstance(root, errors.status_code) else None
    return isinstance(code, int) and (code == 429 or 500 <= code < 600)


def _classify(exc: Exception, name: str, timeout: float | None):
    """Map a litellm / openai / httpx / instructor / pydantic error to the judge error tree by its
    class (:func:`provider_errors`): a timeout -> JudgeTimeout; a failed connection or an API error
    (authentication, permission, not found, bad request, rate limit, 5xx) -> JudgeUnavailable;
    anything else -> JudgeOutputInvalid. The message names the provider error's class and text (at
    most 300 characters, one line)."""
    root = _cause(exc)
    cls = type(root).__name__
    text = " ".join(str(root).split())[:300]
    if _is_timeout(root):
        return JudgeTimeout(f"{name}: timed out ({text})", judge=name, seconds=timeout)
    if _is_connection(root) or isinstance(root, provider_errors().status):
        return JudgeUnavailable(f"{name}: {cls}: {text}", judge=name)
    return JudgeOutputInvalid(f"{name}: {cls}: {text}", judge=name)
