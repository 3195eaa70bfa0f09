"""The check of a Chroma server URL, the one option check the foundations can make alone.

:func:`check_chroma_url` is the same check wherever a URL is given: the long-term tier when it
connects (consolidate.store.index.longterm) and the check of all of a consolidating process's
options (consolidate.pipeline.run_options.check_options, which ``install-hook`` makes before it
writes a hook command). The checks that need the store or the judges' registry live there, in the
pipeline. Only the standard library is imported here. Raises ConfigError (exit 2, one line).
"""

from __future__ import annotations

from urllib.parse import urlparse

from consolidate.core.errors import ConfigError


def check_chroma_url(url: str) -> tuple[str, int, bool]:
    """``(host, port, tls)`` of a Chroma server URL ``http(s)://HOST[:PORT]`` (port 8000, or 443 for
    https, when not given). Raises ConfigError (one line) for anything else."""
    u = urlparse(url or "")
    try:
        port = u.port
    except ValueError:
        raise ConfigError(f"bad Chroma URL {url!r}: the port is not a number from 0 to 65535") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ConfigError(f"bad Chroma URL {url!r}: use http://HOST:PORT")
    return u.hostname, port or (443 if u.scheme == "https" else 8000), u.scheme == "https"
