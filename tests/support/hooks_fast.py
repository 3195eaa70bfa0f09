"""``consolidate`` commands of the hook, CLI and MCP-server surfaces in processes forked from one that
imported the third-party packages those commands import (issue 30): tests/support/preloaded.py's fork
server (its ``SERVER``, the same child: own pid, argv, environment, working folder, standard streams,
exit status; nothing of consolidate imported before the fork), started with the packages of these
surfaces instead of chromadb's: detect_secrets and its plugins, re2 and ahocorasick (the secret rules of
every hook), pydantic, filelock, requests, numpy, the MCP SDK with anyio and starlette. A hook command
spends about 0.2 s of CPU starting; forked from here about 0.03 s.

:func:`run` is ``subprocess.run([consolidate, *args], capture_output=True, text=True, ...)``;
:func:`command` is an argv that behaves as the ``consolidate`` command for a caller that starts the
process itself (an MCP client over stdio): a small ``python -S`` launcher that hands its own standard
streams and environment to a forked child and exits with its status.

Not for a test of the installed command itself, of what a process imports, or of interpreter start-up:
run the command there (the tests keep one such process per test function).
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import preloaded

#: What the hook, note, worker and mcp commands import from outside consolidate and the standard library.
PRELOAD = ("yaml", "httpx", "numpy", "filelock", "requests", "re2", "ahocorasick", "pydantic", "anyio",
           "detect_secrets", "detect_secrets.core.scan",
           *(f"detect_secrets.plugins.{p}" for p in (
               "aws", "azure_storage_key", "discord", "github_token", "gitlab_token", "jwt", "mailchimp", "npm",
               "private_key", "pypi_token", "sendgrid", "slack", "square_oauth", "stripe", "telegram_token")),
           "mcp", "mcp.server.stdio", "mcp.server.mcpserver", "mcp.shared.message", "starlette.applications",
           "starlette.routing", "uvicorn")

#: The launcher :func:`command` runs: its stdin/stdout/stderr, environment and working folder go to the
#: forked child; it exits as the child did (a signal's death as the shell reports it, 128 + n).
LAUNCHER = r"""
import json, os, signal, socket, sys
path, argv = sys.argv[1], sys.argv[2:]
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(path)
socket.send_fds(conn, [json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()], [0, 1, 2])
for fd in (0, 1, 2):
    os.close(fd)
reader = conn.makefile("rb")
pid = json.loads(reader.readline())["pid"]
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
status = json.loads(reader.readline())["status"]
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""

_lock = threading.Lock()
_server: dict = {}


def _start() -> Path:
    """The server's socket path, starting it on first use (one per test process)."""
    with _lock:
        if _server.get("proc") is not None and _server["proc"].poll() is None:
            return _server["path"]
        folder = Path(tempfile.mkdtemp(prefix="consolidate-hooks-fast-"))
        path = folder / "s"
        (folder / "launch.py").write_text(LAUNCHER)
        proc = subprocess.Popen([sys.executable, "-c", preloaded.SERVER, str(path), ",".join(PRELOAD)],
                                env=preloaded._BASE_ENV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                                cwd=folder)
        line = proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the hooks' command server did not start (exit {proc.poll()})")
        _server.update(proc=proc, path=path, folder=folder)
        atexit.register(preloaded._stop, proc, folder)
        return path


def command(args: list[str]) -> list[str]:
    """An argv that runs ``consolidate *args`` forked from the server, with the caller's streams,
    environment and working folder (for a client that starts the process, as an MCP client does)."""
    path = _start()
    return [sys.executable, "-S", "-E", str(path.parent / "launch.py"), str(path), *args]


def run(args: list[str], *, env: dict[str, str], cwd: Path | str | None = None, input: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run([consolidate, *args], env=env, cwd=cwd, input=input, capture_output=True,
    text=True, timeout=timeout)`` in a forked process (module docstring)."""
    path = _start()
    in_r, in_w = os.pipe() if input is not None else (os.dup(0), None)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    req = {"argv": list(args), "env": dict(env), "cwd": str(cwd or os.getcwd())}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        socket.send_fds(conn, [json.dumps(req).encode()], [in_r, out_w, err_w])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    outs: list = []
    errs: list = []
    threads = [threading.Thread(target=preloaded._drain, args=(out_r, outs), daemon=True),
               threading.Thread(target=preloaded._drain, args=(err_r, errs), daemon=True)]
    if in_w is not None:
        threads.append(threading.Thread(target=preloaded._feed, args=(in_w, input.encode()), daemon=True))
    for t in threads:
        t.start()
    reader = conn.makefile("rb")
    conn.settimeout(timeout)
    try:
        pid = json.loads(reader.readline())["pid"]
        try:
            line = reader.readline()
        except TimeoutError:
            os.kill(pid, 9)
            raise subprocess.TimeoutExpired(["consolidate", *args], timeout) from None
        status = json.loads(line)["status"]
    finally:
        reader.close()
        conn.close()
    for t in threads:
        t.join(timeout)
    out, err = (preloaded._text(b"".join(chunks)) for chunks in (outs, errs))
    return subprocess.CompletedProcess(["consolidate", *args], os.waitstatus_to_exitcode(status), out, err)
