"""litellm's environment, for the judges that call a model through it: importing it quietly and
offline, and the provider keys a model needs. Only the standard library at import: litellm is
imported on first use (judges/api.py, judges/base.py and judges/registry.py use this module)."""

from __future__ import annotations

import logging
import os

from consolidate.core import settings


def import_litellm():
    """litellm, imported with its network price list off, telemetry off and its loggers quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: PLC0415 - heavy (anyio, dotenv, httpx, litellm, openai, pydantic, yaml): loaded only when used

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    quiet_libraries()
    return litellm


#: Loggers of the libraries under the API judge that print their own retry and error lines on
#: stderr (instructor: "API call failed on attempt 1: ..."; LiteLLM; the OpenAI SDK; httpx). The
#: judge reports every failure itself (a judge event and one line), so they are silenced unless
#: CONSOLIDATE_DEBUG is set.
NOISY_LOGGERS = ("instructor", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "openai", "httpx", "httpcore")


def quiet_libraries() -> None:
    """Silence :data:`NOISY_LOGGERS` (unless ``$CONSOLIDATE_DEBUG``), keeping the one-line error format."""
    if settings.DEBUG.get():
        return
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def missing_provider_keys(model: str) -> list[str]:
    """The provider key variables litellm needs for ``model`` and cannot find (no network; imports
    litellm). Base-URL variables are not counted: providers such as ollama have a local default."""
    try:
        report = import_litellm().validate_environment(model=model)
    except Exception:
        return []
    return [k for k in report.get("missing_keys") or [] if k.endswith(("_KEY", "_TOKEN"))]
