"""``python -m consolidate`` commands in new processes that start with the heavy third-party packages
already imported (issue 30): a fork server.

A command process of the suite spends most of its time importing chromadb (about 1.8 s of CPU, 870
modules) and numpy/onnxruntime/tokenizers before it does anything; the team tests start a few hundred.
:func:`run` sends the command to a server process (one per test process, started on first use) that
imported those packages once; the server forks, and the child becomes the command's process: its own
pid, the given argv, environment, working directory and standard streams, ``sys.path`` as a new
interpreter builds it for ``python -m`` (the working directory, then ``PYTHONPATH``), ``random``
seeded again, then ``consolidate/__main__.py`` run as ``python -m consolidate`` runs it, non-daemon
threads joined and atexit handlers run at its end, and its exit status (a negative code for a
signal: a crash point's SIGKILL) returned as subprocess's. Nothing of consolidate is imported
before the fork: each command imports it fresh, reads its own environment and its store from disk.

:func:`run_code` runs ``python -c CODE ARGS`` so (a check script that imports chromadb), and
:func:`popen` starts a command as ``subprocess.Popen`` does (several at once, or a long-lived one
over pipes: the MCP server over stdio) through a small starter process that hands its standard streams
to the preloaded command.

Not for a test of what a process imports, of the interpreter's start-up or of environment read by
those packages at import time (HOME for a model cache): run ``python -m consolidate`` itself there.
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

#: The packages imported once by the server (what a command would import anyway; no consolidate module).
PRELOAD = ("chromadb", "chromadb.config", "chromadb.api.rust", "chromadb.api.fastapi", "numpy", "onnxruntime",
           "tokenizers", "httpx", "yaml", "pydantic", "networkx", "tenacity", "anyio", "mcp.server.mcpserver",
           "detect_secrets.core.scan", "detect_secrets.settings", "ahocorasick", "re2", "filelock", "difflib")

SERVER = r"""
import importlib, json, os, random, signal, socket, sys, traceback
sock_path, preload = sys.argv[1], sys.argv[2].split(",")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
for name in preload:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
own = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) | {sys.path[0]}
BASE = [p for p in sys.path[1:] if p not in own]
parent = os.getppid()
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sock_path)
listener.listen(64)
listener.settimeout(0.2)
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
print("ready", flush=True)


def reap():  # the waiters that ended: their CPU time (and their commands') counts as this process's children's
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def child(req, fds):
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *extra, *BASE]
    random.seed()
    if os.environ.get("COVERAGE_PROCESS_START"):  # measured as coverage.py's .pth hook measures a new interpreter
        import coverage
        coverage.process_startup()
    code = 0
    try:
        if req.get("code") is None:
            sys.argv = ["-m", *req["argv"]]
            import runpy
            runpy.run_module("consolidate", run_name="__main__", alter_sys=True)
        else:  # as ``python -c CODE ARGS`` runs it: sys.path[0] '', argv[0] '-c', a fresh __main__
            sys.path[0] = ""
            sys.argv = ["-c", *req["argv"]]
            import builtins, types
            main = types.ModuleType("__main__")
            main.__builtins__ = builtins
            sys.modules["__main__"] = main
            exec(compile(req["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        import threading
        threading._shutdown()
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
    os._exit(code & 0xFF)


def waiter(conn):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    req = json.loads(msg)
    pid = os.fork()
    if pid == 0:
        conn.close()
        child(req, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    if req.get("starter"):  # popen(): the starter process ended (killed) before the command did: kill it
        import select
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            try:
                gone = bool(select.select([conn], [], [], 0.1)[0]) and not conn.recv(1, socket.MSG_PEEK)
            except OSError:  # ECONNRESET: gone too
                gone = True
            if gone:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
    else:
        _, status = os.waitpid(pid, 0)
    conn.sendall(json.dumps({"status": status}).encode() + b"\n")
    conn.close()
    os._exit(0)


while not stopping:
    reap()
    try:
        conn, _ = listener.accept()
    except (socket.timeout, InterruptedError):
        if os.getppid() != parent:
            break
        continue
    conn.settimeout(None)
    if os.fork() == 0:
        listener.close()
        try:
            waiter(conn)
        finally:
            os._exit(1)
    conn.close()
while True:  # the waiters left: wait for them
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
"""

_lock = threading.Lock()
_server: dict = {}
#: The environment the server starts with (and imports the packages under): this process's when the
#: module was first imported (collection), not a test's monkeypatched one; CONSOLIDATE_* left out,
#: nor COVERAGE_PROCESS_START: the server measures nothing; each command starts coverage.py itself
#: (its own data file; a fork would share the server's).
_BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLIDATE_") and k != "COVERAGE_PROCESS_START"}


def _start() -> Path:
    """The server's socket path, starting the server on first use (one per test process)."""
    with _lock:
        if _server.get("proc") is not None and _server["proc"].poll() is None:
            return _server["path"]
        folder = Path(tempfile.mkdtemp(prefix="consolidate-preload-"))
        path = folder / "s"
        proc = subprocess.Popen([sys.executable, "-c", SERVER, str(path), ",".join(PRELOAD)], env=_BASE_ENV,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, cwd=folder)
        line = proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the preloaded command server did not start (exit {proc.poll()})")
        _server.update(proc=proc, path=path, folder=folder)
        atexit.register(_stop, proc, folder)
        return path


def _stop(proc, folder: Path) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()


def _drain(fd: int, out: list) -> None:
    with open(fd, "rb") as f:
        out.append(f.read())


def _feed(fd: int, data: bytes) -> None:
    with open(fd, "wb") as f:
        try:
            f.write(data)
        except BrokenPipeError:
            pass


def _text(data: bytes) -> str:
    """Bytes as ``text=True`` gives them: the locale's encoding, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run(args: list[str], *, env: dict[str, str], cwd: Path | str | None = None, input: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, "-m", "consolidate", *args], env=env, cwd=cwd, input=input,
    capture_output=True, text=True, timeout=timeout)``, in a preloaded process (module docstring).
    Raises subprocess.TimeoutExpired after killing the process (SIGKILL), as subprocess.run does."""
    return _run(None, args, env=env, cwd=cwd, input=input, timeout=timeout)


def run_code(code: str, args: list[str] = (), *, env: dict[str, str], cwd: Path | str | None = None,
             input: str | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, "-c", code, *args], ...)`` as :func:`run` (``sys.argv`` is
    ``["-c", *args]``, ``sys.path[0]`` is ``""``, ``code`` runs as a new ``__main__``)."""
    return _run(code, list(args), env=env, cwd=cwd, input=input, timeout=timeout)


def _argv(code: str | None, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "consolidate", *args] if code is None else [sys.executable, "-c", code, *args]


def _run(code: str | None, args: list[str], *, env: dict[str, str], cwd: Path | str | None, input: str | None,
         timeout: float | None) -> subprocess.CompletedProcess:
    path = _start()
    in_r, in_w = os.pipe() if input is not None else (os.dup(0), None)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    req = {"argv": list(args), "code": code, "env": dict(env), "cwd": str(cwd or os.getcwd())}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        socket.send_fds(conn, [json.dumps(req).encode()], [in_r, out_w, err_w])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    outs: list = []
    errs: list = []
    threads = [threading.Thread(target=_drain, args=(out_r, outs), daemon=True),
               threading.Thread(target=_drain, args=(err_r, errs), daemon=True)]
    if in_w is not None:
        threads.append(threading.Thread(target=_feed, args=(in_w, input.encode()), daemon=True))
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
            raise subprocess.TimeoutExpired(_argv(code, args)[1:], timeout) from None
        status = json.loads(line)["status"]
    finally:
        reader.close()
        conn.close()
    for t in threads:
        t.join(timeout)
    code_ = os.waitstatus_to_exitcode(status)
    out, err = (_text(b"".join(chunks)) for chunks in (outs, errs))
    return subprocess.CompletedProcess(_argv(code, args), code_, out, err)


#: popen()'s starter: a small interpreter (no third-party import) that hands its own standard streams,
#: environment and working directory to the server, passes TERM, INT and HUP on to the command, and
#: exits as the command exited (killed by a signal: by the same signal).
STARTER = r"""
import json, os, signal, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
req = json.loads(sys.argv[2])
req.update(env=dict(os.environ), starter=True)
socket.send_fds(conn, [json.dumps(req).encode()], [0, 1, 2])
reader = conn.makefile("rb")
pid = json.loads(reader.readline())["pid"]
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda n, _f: os.kill(pid, n))
code = os.waitstatus_to_exitcode(json.loads(reader.readline())["status"])
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code & 0xFF)
"""


def popen(args: list[str], *, env: dict[str, str], cwd: Path | str | None = None, code: str | None = None,
          **kwargs) -> subprocess.Popen:
    """``subprocess.Popen([sys.executable, "-m", "consolidate", *args], env=env, cwd=cwd, **kwargs)``
    (``code``: ``[sys.executable, "-c", code, *args]``) for a long-lived or concurrent command: the
    Popen is of a small starter process (:data:`STARTER`) whose standard streams (``stdin=PIPE`` ...),
    environment and working directory the preloaded command gets; its exit code is the command's
    (a signal's: negative). TERM, INT and HUP sent to it reach the command; killing the starter
    (SIGKILL) kills the command. ``pid`` is the starter's."""
    return subprocess.Popen(starter_argv(args, code=code, cwd=cwd), env=env, cwd=cwd, **kwargs)


def starter_argv(args: list[str], *, code: str | None = None, cwd: Path | str | None = None) -> list[str]:
    """The command line of :func:`popen`'s starter, for a caller that starts the process itself (an
    MCP client's stdio transport); start it with the command's environment, in ``cwd``."""
    req = {"argv": list(args), "code": code, "cwd": str(cwd or os.getcwd())}
    return [sys.executable, "-S", "-c", STARTER, str(_start()), json.dumps(req)]
