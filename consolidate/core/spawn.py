"""The one starter of the detached worker (issue 27): its command line and its start, for the fast
hook (consolidate/agents/hooks/fast.py), the full hook (full.py) and the MCP server
(consolidate/mcp/server.py).

The worker is ``python -m consolidate worker --store PATH`` with the store options and judges the
starter was given, started **detached**: a new process session (the agent killing the hook's process
group does not kill it), stdin from ``/dev/null``, stdout and stderr appended to the store's
``logs/worker.log`` (0600), the umask narrowed to 0077 (consolidate.core.private), no other file descriptor inherited, the caller's environment plus
``extra_env``. With ``after`` (a pid: the hook's own) the worker first waits until that process has
exited (``CONSOLIDATE_WORKER_AFTER``, consolidate/pipeline/worker.py), so it does not compete with
the hook for the CPU.

It is started with ``posix_spawn`` (no ``subprocess`` import on the hook's path, and safe in the
MCP server's threads, where ``fork`` is not), and with fork and exec where ``posix_spawn`` cannot
start a new session. The worker is a child of the starter: a long-lived starter (the MCP server)
reaps the workers it started that have exited at its next start (:func:`reap`). Standard library
only.
"""

from __future__ import annotations

import os
import sys

from consolidate.core.private import private_umask
from consolidate.core.settings import WORKER_AFTER

#: The store options a starter carries to the worker (``--chroma-url`` ...), in ``consolidate
#: worker``'s option names; ``judges`` is a list (``--judge`` repeated).
STORE_OPTIONS = ("chroma_url", "project", "embedding")

#: Pids of the workers this process started and has not reaped yet.
_STARTED: set[int] = set()


def worker_argv(store: str | os.PathLike, options: dict | None = None) -> list[str]:
    """``[python, -m, consolidate, worker, --store, PATH]`` plus every store option and judge in
    ``options`` (``{"chroma_url", "project", "embedding": str | None, "judges": list[str]}``; None
    or empty values are left out)."""
    argv = [sys.executable, "-m", "consolidate", "worker", "--store", str(store)]
    options = options or {}
    for key in STORE_OPTIONS:
        if options.get(key):
            argv += ["--" + key.replace("_", "-"), str(options[key])]
    for judge in options.get("judges") or ():
        argv += ["--judge", str(judge)]
    return argv


def spawn_worker(store: str | os.PathLike, options: dict | None = None, *, log: str | os.PathLike,
                 after: int | None = None, extra_env: dict[str, str] | None = None) -> int:
    """Start the worker of ``store`` detached (see the module docstring) with ``options``
    (:func:`worker_argv`), its output appended to ``log`` (the store's ``logs/worker.log``:
    consolidate.store.layout.WORKER_LOG names it); returns its pid. Creates the log's folder (0700)
    when missing. Raises OSError
    when the log cannot be opened or the process cannot be started."""
    reap()
    env = dict(os.environ)
    env.update(extra_env or {})
    if after is not None:
        env[WORKER_AFTER.name] = str(after)
    private_umask()  # the worker inherits it: nothing it writes is readable by others
    os.makedirs(os.path.dirname(os.fspath(log)), mode=0o700, exist_ok=True)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        pid = _launch(worker_argv(store, options), env, out)
    finally:
        os.close(out)
    _STARTED.add(pid)
    return pid


def _launch(argv: list[str], env: dict[str, str], out: int) -> int:
    """Start ``argv`` in a new session, stdin /dev/null, stdout and stderr on the descriptor ``out``;
    its pid. No other descriptor reaches it: Python opens its own close-on-exec (PEP 446), and the
    inheritable ones this process was given (an agent CLI's pipes) are closed in the child."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable()]
    try:
        return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
    except NotImplementedError:  # no POSIX_SPAWN_SETSID here
        return _fork_exec(argv, env, out)


def _inheritable() -> list[int]:
    """The open descriptors above 2 that a started process would inherit."""
    folder = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        fds = [int(name) for name in os.listdir(folder)]
    except (OSError, ValueError):
        fds = list(range(3, 256))
    found = []
    for fd in fds:
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:  # closed meanwhile, or listdir's own descriptor
            continue
    return found


def _fork_exec(argv: list[str], env: dict[str, str], out: int) -> int:
    # the inheritable descriptors, whatever their number (a long-lived process can hold more than
    # 1,024): closed in the child, as posix_spawn's file actions close them
    inherited = _inheritable()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: a new session, then the worker
            try:
                os.setsid()
                os.dup2(null, 0)
                os.dup2(out, 1)
                os.dup2(out, 2)
                for fd in inherited:
                    if fd > 2:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
    finally:
        os.close(null)
    return pid


def reap() -> list[int]:
    """Reap the workers this process started that have exited (no zombie left in a long-lived
    starter); returns their pids. Never blocks, never raises."""
    done = []
    for pid in list(_STARTED):
        try:
            finished, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (a test waiting for it)
            finished = pid
        except OSError:
            continue
        if finished:
            _STARTED.discard(pid)
            done.append(pid)
    return done


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this machine (a process of another user counts; None, 0 and
    a pid out of range do not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    return True


def exec_hook(args: list[str], before: list[str] | None = None) -> None:
    """Replace this process by the full hook, ``<this python> -m consolidate BEFORE hook ARGS`` (the
    file recall's light entry, consolidate/agents/hooks/file_hook.py, for a call it cannot answer; its
    stdin already handed on; ``before``: the command line's own options, such as
    ``--env-file-if-exists PATH``). Returns only when the exec fails (OSError)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "consolidate", *(before or []), "hook", *args])
