"""``python -m consolidate`` in a preloaded process (tests/support/preloaded.py) started in a given way (issue 30):
under a umask, or inside a private mount namespace (a read-only bind mount of a store).

A forked child inherits its umask and its mount namespace from the fork server, and the server from
what started it: one server per way of starting (a key), started that way (``os.umask`` before it
imports anything; or ``unshare --mount sh -c 'mount ... && exec python -c SERVER'``, which execs the
server in the namespace), so each command's process has the umask or the mounts a test asks for, as
``subprocess.run(..., preexec_fn=lambda: os.umask(umask))`` or the same ``unshare`` prefix gives a new
interpreter. Otherwise the same as :func:`preloaded.run`: the same server program and client, pointed
at that key's server.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable
from unittest import mock

import preloaded

_lock = threading.Lock()
_servers: dict[object, tuple[subprocess.Popen, Path, Path]] = {}


def _start(key, prefix: list[str], preexec_fn: Callable[[], object] | None) -> Path:
    """The socket path of the server for ``key``, started on first use (one per test process and key)."""
    with _lock:
        got = _servers.get(key)
        if got is not None and got[0].poll() is None:
            return got[1]
        folder = Path(tempfile.mkdtemp(prefix="consolidate-preload-"))
        path = folder / "s"
        proc = subprocess.Popen([*prefix, sys.executable, "-c", preloaded.SERVER, str(path),
                                 ",".join(preloaded.PRELOAD)], env=preloaded._BASE_ENV, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, text=True, cwd=folder, preexec_fn=preexec_fn)
        line = proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the preloaded command server {key!r} did not start (exit {proc.poll()})")
        _servers[key] = (proc, path, folder)
        atexit.register(stop, key)
        return path


def stop(key) -> None:
    """Stop ``key``'s server (if it runs)."""
    with _lock:
        got = _servers.pop(key, None)
    if got is not None:
        preloaded._stop(got[0], got[2])


_client = threading.Lock()


def _run(path: Path, args: list[str], **kw) -> subprocess.CompletedProcess:
    """preloaded.run with its server's socket path replaced by ``path``; fails if the client no longer
    asks ``_start`` for it (the command would run under the shared server, not this one)."""
    asked = []

    def start() -> Path:
        asked.append(path)
        return path
    with _client, mock.patch.object(preloaded, "_start", start):
        out = preloaded.run(args, **kw)
    if not asked:
        raise RuntimeError("preloaded.run no longer takes its server from preloaded._start: update tests/support/t30_store.py")
    return out


def run_with_umask(args: list[str], *, umask: int, env: dict[str, str], cwd: Path | str | None = None,
                   input: str | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """:func:`preloaded.run` in a process whose umask is ``umask``."""
    path = _start(("umask", umask), [], lambda: os.umask(umask))
    return _run(path, args, env=env, cwd=cwd, input=input, timeout=timeout)


def read_only_runner(folder: Path) -> Callable[..., subprocess.CompletedProcess]:
    """A function ``run(args, *, env, timeout)``: :func:`preloaded.run` in a process of a private mount
    namespace where ``folder`` is bind-mounted read-only on itself (root with mount rights); stop it with
    ``stop(("ro", str(folder)))``."""
    key = ("ro", str(folder))
    prefix = ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && shift && exec "$@"', str(folder), "_"]

    def run(args: list[str], *, env: dict[str, str], timeout: float | None = None) -> subprocess.CompletedProcess:
        return _run(_start(key, prefix, None), args, env=env, timeout=timeout)
    return run


def server_umask(umask: int) -> int:
    """The umask of the process the commands of :func:`run_with_umask` are forked from (``/proc``), started if need be."""
    _start(("umask", umask), [], lambda: os.umask(umask))
    pid = _servers[("umask", umask)][0].pid
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return int(next(line for line in f if line.startswith("Umask:")).split()[1], 8)
