"""Provider errors are mapped to the judge error tree by class (judges/api.py: provider_errors,
_classify, _retryable), with the real litellm, openai, httpx and instructor exception objects built
offline: no server, no key. Issue 20, item 7."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

httpx = pytest.importorskip("httpx")
litellm = pytest.importorskip("litellm")
openai = pytest.importorskip("openai")
from instructor.core import IncompleteOutputException, InstructorRetryException  # noqa: E402
from instructor.v2.core.errors import FailedAttempt  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402

from consolidate.core.errors import JudgeOutputInvalid, JudgeTimeout, JudgeUnavailable  # noqa: E402
from consolidate.judges.api import _classify, _retryable  # noqa: E402

lx = litellm.exceptions
REQ = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
M = {"model": "openai/local", "llm_provider": "openai"}


def resp(code: int) -> httpx.Response:
    return httpx.Response(code, request=REQ)


def wrapped(exc: BaseException) -> InstructorRetryException:
    """As instructor raises a provider error: its retry wrapper, the provider error as the cause."""
    try:
        try:
            raise exc
        except BaseException as inner:
            raise InstructorRetryException(str(inner), n_attempts=1, total_usage=0) from inner
    except InstructorRetryException as outer:
        return outer


def refused() -> BaseException:
    """What litellm raises for a refused connection (measured against a closed port): an
    InternalServerError caused by openai's APIConnectionError, caused by httpx's ConnectError."""
    try:
        try:
            try:
                raise httpx.ConnectError("[Errno 111] Connection refused", request=REQ)
            except httpx.ConnectError as e:
                raise openai.APIConnectionError(request=REQ) from e
        except openai.APIConnectionError as e:
            raise lx.InternalServerError("OpenAIException - Connection error.", **M) from e
    except lx.InternalServerError as e:
        return e


def invalid_answer() -> ValidationError:
    class Verdicts(BaseModel):
        verdicts: list[dict]

    try:
        Verdicts.model_validate({"nope": 1})
    except ValidationError as exc:
        return exc
    raise AssertionError("validated")


# (provider error, product error, retried?)
CASES = [
    ("authentication", lambda: lx.AuthenticationError("bad key", **M, response=resp(401)), JudgeUnavailable, False),
    ("permission", lambda: lx.PermissionDeniedError("no", **M, response=resp(403)), JudgeUnavailable, False),
    ("not found", lambda: lx.NotFoundError("no such model", **M, response=resp(404)), JudgeUnavailable, False),
    ("bad request", lambda: lx.BadRequestError("bad", **M, response=resp(400)), JudgeUnavailable, False),
    ("context window", lambda: lx.ContextWindowExceededError("too long", **M, response=resp(400)), JudgeUnavailable,
     False),
    ("unprocessable", lambda: lx.UnprocessableEntityError("bad", **M, response=resp(422)), JudgeUnavailable, False),
    ("rate limit", lambda: lx.RateLimitError("slow down", **M, response=resp(429)), JudgeUnavailable, True),
    ("internal", lambda: lx.InternalServerError("boom", **M, response=resp(500)), JudgeUnavailable, True),
    ("bad gateway", lambda: lx.BadGatewayError("502", **M, response=resp(502)), JudgeUnavailable, True),
    ("unavailable", lambda: lx.ServiceUnavailableError("503", **M, response=resp(503)), JudgeUnavailable, True),
    ("api error 500", lambda: lx.APIError(500, "server", **M, request=REQ), JudgeUnavailable, True),
    ("api error 403", lambda: lx.APIError(403, "forbidden", **M, request=REQ), JudgeUnavailable, False),
    ("connection", lambda: lx.APIConnectionError("cannot connect", **M, request=REQ), JudgeUnavailable, False),
    ("refused", refused, JudgeUnavailable, False),
    ("timeout", lambda: lx.Timeout("Request timed out", **M), JudgeTimeout, False),
    ("openai timeout", lambda: openai.APITimeoutError(request=REQ), JudgeTimeout, False),
    ("httpx read timeout", lambda: httpx.ReadTimeout("read", request=REQ), JudgeTimeout, False),
    ("builtin timeout", lambda: TimeoutError("socket"), JudgeTimeout, False),
    ("builtin refused", lambda: ConnectionRefusedError(111, "refused"), JudgeUnavailable, False),
    ("invalid answer", invalid_answer, JudgeOutputInvalid, False),
]


@pytest.mark.parametrize("label,make,product,retried", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("through_instructor", [False, True], ids=["bare", "instructor"])
def test_each_provider_error_class_maps_to_its_judge_error(label, make, product, retried, through_instructor):
    exc = make()
    if through_instructor:
        exc = wrapped(exc)
    mapped = _classify(exc, "api", 5.0)
    assert type(mapped) is product, (label, mapped)
    assert mapped.judge == "api" and str(mapped).startswith("api: ")
    assert _retryable(exc) is retried, label


def test_a_failed_attempt_inside_instructor_is_what_is_mapped():
    exc = InstructorRetryException("validation failed", n_attempts=1, total_usage=0,
                                   failed_attempts=[FailedAttempt(1, invalid_answer(), None)])
    mapped = _classify(exc, "api", None)
    assert isinstance(mapped, JudgeOutputInvalid) and "ValidationError" in str(mapped)
    assert not _retryable(exc)


def test_an_answer_cut_at_max_tokens_is_invalid_output():
    exc = IncompleteOutputException(last_completion=None)
    assert isinstance(_classify(exc, "api", None), JudgeOutputInvalid)


def test_the_class_decides_not_the_words_in_the_message():
    # by name matching, "timed out" in a message made a timeout and "Connection error" stopped
    # retries; by class, an authentication error stays one and a 500 is retried
    auth = lx.AuthenticationError("upstream timed out while checking the key", **M, response=resp(401))
    assert isinstance(_classify(auth, "api", 1.0), JudgeUnavailable)
    worded = lx.InternalServerError("Connection error. (as the upstream said)", **M, response=resp(500))
    assert _retryable(worded)
    # and a class named like a provider error but from elsewhere is not one
    RateLimitError = type("RateLimitError", (Exception,), {})
    assert isinstance(_classify(RateLimitError("429 Too Many Requests"), "api", None), JudgeOutputInvalid)
    assert not _retryable(RateLimitError("429"))


@pytest.mark.spawns
def test_importing_the_api_judge_imports_no_provider_library():
    code = ("import sys, consolidate.judges.api, consolidate.judges.chain, consolidate.judges.registry, consolidate.judges.prompting\n"
            "bad = [m for m in ('litellm', 'instructor', 'openai', 'httpx') if m in sys.modules]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _drawn_tree() -> dict[str, str | None]:
    """``{class: parent}`` as drawn in consolidate/core/errors.py's docstring (parent by indentation)."""
    import re

    import consolidate.core.errors as errors

    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in errors.__doc__.splitlines():
        m = re.match(r"^(\s*(?:[│ ]   )*)(?:[├└]── )?([A-Z][A-Za-z]+)(?:\s|$)", line)
        if not m or not (line.lstrip().startswith(("├", "└", "│")) or m.group(2) == "ConsolidateError"):
            continue
        depth = 0 if m.group(2) == "ConsolidateError" else len(m.group(1)) // 4 + 1
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[m.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, m.group(2)))
    return parents


def test_the_error_tree_drawn_in_errors_py_is_the_class_tree():
    import consolidate
    import consolidate.core.errors as errors

    drawn = _drawn_tree()
    assert drawn["ConsolidateError"] is None and len(drawn) > 10
    for name, parent in drawn.items():
        cls = getattr(errors, name)
        if parent is not None:
            assert cls.__bases__ == (getattr(errors, parent),), f"{name} is drawn under {parent}"
    real = {n for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, errors.ConsolidateError)}
    assert real == set(drawn), "every exception class is drawn, and only those"
    # every drawn class is public: in errors.__all__, exported by the package, and the same class
    assert set(errors.__all__) == set(drawn) == set(consolidate.ERRORS)
    for name in drawn:
        assert getattr(consolidate, name) is getattr(errors, name) and name in consolidate.__all__
    from consolidate import ConfigError, JudgeTimeout, TeamError  # the form users write

    assert issubclass(ConfigError, errors.BadInput) and issubclass(JudgeTimeout, errors.JudgeError)
    from consolidate.team.sync import TeamError as old_home

    assert old_home is TeamError
