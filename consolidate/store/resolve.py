"""Which store a call means (issue 28, concern 2): the one place that turns the options, the
environment and a hook payload's ``cwd`` into a store folder.

The store of a call, first match wins (:func:`resolve`):

1. ``--store PATH`` (an option of any command, before or after it): as given; a relative path is
   taken from the process's working folder (the shell the user typed it in).
2. ``$CONSOLIDATE_STORE`` (also set from the Claude Code plugin's ``store`` option and the Gemini CLI
   extension's setting, consolidate/agents/plugin_env.py): a relative path is taken from the
   project folder (:func:`project_root`), as the plugin's and the extension's settings say.
3. The project folder the agent CLI names (``CLAUDE_PROJECT_DIR``, ``GEMINI_PROJECT_DIR``: an
   absolute path naming an existing folder; a value naming none, as written or in its other Unicode
   spelling (NFC/NFD), is ignored, so no folder is ever created from it): the nearest enclosing store
   at or above it (rule 4's walk, from the project folder) if there is one, else
   ``<project>/.memofs``, whatever folder of the project the call comes from, so that every event of
   one session (SessionStart at the root, a SessionEnd sent from ``src/deep``) goes to one store, and
   a project folder naming a subfolder of a project with a store does not make a second one.
4. The nearest enclosing store: the first folder holding a ``.memofs`` folder, from the start
   folder (the payload's ``cwd``, else the process's working folder) up to the outermost git root
   (a folder holding ``.git``, a folder or a submodule's file, with no ``.git`` above it: a nested
   repository such as ``vendor/lib`` takes the enclosing project's store), or up to the file-system
   root outside a git work tree.
5. The main worktree's store, when the start folder (for rule 3, the project folder) is in a linked
   git worktree (``git worktree add``: its root's ``.git`` is a file ``gitdir: <repo>/.git/worktrees/N``
   whose folder holds ``commondir``, the repository's ``.git``) and the main worktree (the folder
   holding that ``.git``) has a store (rule 4's walk from there): all worktrees of one repository
   share one store, as Claude Code's auto memory does. Read with the standard library (no git
   subprocess); a bare repository's worktrees have no main worktree and go on to rule 6. Rule 3
   takes this store too before making ``<project>/.memofs``.
6. ``<git root>/.memofs`` (the nearest git root).
7. ``<start folder>/.memofs``.

The start folder is the payload's ``cwd`` when it is an absolute path (the ``hook`` command refuses
one that is not, or that is not an existing folder, before anything is written, unless an option or
the setting names the store: :func:`named`), else the process's working folder. A payload ``cwd``
that names no folder as written but does in its other Unicode spelling (NFC/NFD: an agent on macOS
sends one, the folder on disk has the other) is taken in the spelling on disk
(:func:`payload_folder`), by every event and entry alike (the fast, the full and the file-recall
hook, whose existence checks ask this module). Symlinks, the same
for every surface: rules 4 to 6 walk the physical path first (``os.path.realpath``) and then the
logical one (the payload's ``cwd`` as written; for a command, ``$PWD`` when it is the working
folder, as a shell sets it), the first walk that finds a store (then a git root) wins; so a folder
reached through a symlink from outside the project and a project folder that is a symlink to
outside give the CLI, the hook and the MCP server one store. Paths are otherwise compared as the
file system gives them: no Unicode normalization (a folder's NFC and NFD spellings are two folders
on Linux) but for the fallbacks to the spelling on disk above (the project-dir variable, the
payload's ``cwd``).

:data:`SURFACES` lists every entry point that resolves a store through this module, and how
tests/integration/test_store_resolver.py drives it; an AST check there fails for a module outside this one that
names the default folder, reads ``$CONSOLIDATE_STORE`` or a project-dir variable, or the working
folder for a store. Standard library only, and ``consolidate.core.settings`` (``os`` only): the fast
hook imports it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from consolidate.core.settings import STORE

if TYPE_CHECKING:  # imported by name for a non-ASCII path (_NORMAL): the edge for grimp and mypy
    from consolidate.core import normal  # noqa: F401

#: consolidate.core.normal, imported for a path with non-ASCII characters only (the light hooks
#: resolve an ASCII one without its tables).
_NORMAL = "consolidate.core.normal"

#: The store folder's name in a project (the default store: ``<project>/.memofs``).
STORE_FOLDER = ".memofs"
#: The variables naming the project's root folder in an agent CLI's hook (and MCP) process, first
#: set wins: Claude Code's, Gemini CLI's (which also sets Claude Code's, for compatibility).
PROJECT_DIR_VARIABLES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")
#: The entry naming a git work tree's root (a folder; a file in a submodule or a linked worktree).
GIT_MARK = ".git"

#: Where a resolved store came from (:attr:`Resolved.source`), in the order they are tried.
SOURCES = ("option", "setting", "project", "enclosing", "worktree", "git", "cwd")


class Resolved(NamedTuple):
    """A resolved store: ``path`` (a ``str``: as given for an option, absolute otherwise) and
    ``source``, one of :data:`SOURCES`."""

    path: str
    source: str


class Surface(NamedTuple):
    """An entry point that resolves a store: ``name``, ``entry`` (``module:function`` that calls this
    module), and ``drive`` (how tests/integration/test_store_resolver.py drives it)."""

    name: str
    entry: str
    drive: str


#: Every entry point that resolves a store, each through :func:`resolve` (directly or through
#: consolidate.store.store.resolve_store_path). tests/integration/test_store_resolver.py walks this list.
SURFACES = (
    Surface("cli", "consolidate.store.store:resolve_store_path",
            "`consolidate note`/`end`/`recall`/`status` (consolidate.cli.options.open_store -> Store) from a"
            " nested folder, --store before and after the command"),
    Surface("fast-hook", "consolidate.agents.hooks.fast:_hook_end",
            "`consolidate hook --no-worker` with a SessionEnd/Stop/SessionStart payload on stdin, store existing"),
    Surface("full-hook", "consolidate.agents.hooks.full:cmd_hook",
            "`consolidate hook --no-worker --harvest` with every hook event's payload on stdin (Claude Code,"
            " Gemini CLI, Codex)"),
    Surface("file-hook", "consolidate.agents.hooks.file_hook:answer",
            "the installed PreToolUse command (`python -m consolidate.agents.hooks.file_hook`) with a Read payload"
            " from a nested folder, the store and its graph existing"),
    Surface("idle-run", "consolidate.agents.hooks.fast:_idle_run",
            "`consolidate run --session S` for an ended session without notes, from a nested folder"),
    Surface("worker", "consolidate.cli.commands.worker_cmd:worker_failed",
            "`consolidate worker` (open_store) from a nested folder; its failure record through resolve_store_path"),
    Surface("mcp", "consolidate.cli.commands.mcp_cmd:cmd_mcp",
            "`consolidate mcp` over stdio started in a nested folder: the `note` tool"),
    Surface("plugin", "consolidate.agents.plugin_env:apply",
            "plugins/consolidate/hooks/hooks.json's command with CLAUDE_PLUGIN_OPTION_STORE relative, from a"
            " nested folder"),
    Surface("extension", "consolidate.agents.plugin_env:load_env_file",
            "hooks/hooks.json's command (gemini-extension.json) with a relative CONSOLIDATE_STORE in the"
            " extension's .env, from a nested folder"),
    Surface("install-hook", "consolidate.agents.install:hook_config",
            "`consolidate --store X install-hook AGENT --dry-run` and `install-hook AGENT --store X`: the"
            " hook command written carries the store"),
    Surface("python-api", "consolidate.store.store:Store",
            "`Store()` without a path, from a nested folder"),
)


def named(option: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``--store`` (``option``) or ``$CONSOLIDATE_STORE`` names the store, so that a
    payload's ``cwd`` plays no part in it (the ``hook`` command checks the ``cwd`` only otherwise)."""
    return bool(option) or bool(STORE.get(environ))


def existing_folder(path: str) -> str | None:
    """``path`` when it names an existing folder, else its NFC or NFD spelling that does (the one on
    disk), else None. Never creates anything."""
    if path.isascii():  # one spelling: consolidate.core.normal (its tables, 3-6 ms) is not needed
        return path if os.path.isdir(path) else None
    for spelling in importlib.import_module(_NORMAL).spellings(path):
        if os.path.isdir(spelling):
            return spelling
    return None


def project_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """The project's root folder an agent CLI gives its hook process (:data:`PROJECT_DIR_VARIABLES`,
    first set to an absolute path naming an existing folder, in the spelling on disk:
    :func:`existing_folder`; a relative value or one naming no folder is ignored), or None."""
    env = os.environ if environ is None else environ
    for name in PROJECT_DIR_VARIABLES:
        value = env.get(name)
        if value and "\x00" not in value and os.path.isabs(value):
            found = existing_folder(os.path.abspath(value))
            if found:
                return found
    return None


def payload_folder(cwd: object) -> str | None:
    """A payload's ``cwd`` as the folder on disk: an absolute path (``.``/``..`` folded) naming an
    existing folder as written, else in its other Unicode spelling (:func:`existing_folder`); None
    for anything else (not a string, relative, naming no folder). What the hooks check a ``cwd``
    with, so that every event and entry takes one folder."""
    if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isabs(cwd):
        return existing_folder(os.path.abspath(cwd))
    return None


def spelled_on_disk(path: str) -> str:
    """``path`` (a payload's ``cwd``, unchecked) in the spelling on disk when it names no folder as
    written but does in its other Unicode spelling (:func:`payload_folder`), else as given."""
    if path.isascii() or os.path.isdir(path):
        return path
    return payload_folder(path) or path


def start_folder(cwd: object = None) -> str:
    """The folder a call starts from: ``cwd`` (a payload's) when it is an absolute path, in the
    spelling on disk when only another Unicode spelling names a folder (:func:`payload_folder`),
    else the process's working folder; absolute, ``.``/``..`` folded (no symlink resolved)."""
    if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isabs(cwd):
        return payload_folder(cwd) or os.path.abspath(cwd)
    return os.getcwd()


def logical_start(cwd: object = None, environ: Mapping[str, str] | None = None) -> str:
    """The start folder as the user sees it: a payload's ``cwd`` as written (:func:`start_folder`);
    without one, ``$PWD`` when it is an absolute path naming the working folder (what a shell sets:
    the path through symlinks), else the working folder (physical)."""
    start = start_folder(cwd)
    if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isabs(cwd):
        return start
    env = os.environ if environ is None else environ
    pwd = env.get("PWD", "")
    try:
        if pwd and "\x00" not in pwd and os.path.isabs(pwd) and os.path.samefile(pwd, start):
            return os.path.abspath(pwd)
    except OSError:
        pass
    return start


def walks(folder: str) -> list[str]:
    """The paths of ``folder`` to walk up from, in order: its physical path (symlinks resolved), then
    ``folder`` as written when that differs."""
    physical = os.path.realpath(folder)
    return [physical] if physical == folder else [physical, folder]


def ancestors(folder: str) -> list[str]:
    """``folder`` (absolute) and every folder above it, nearest first, the file-system root last."""
    out = [folder]
    while True:
        parent = os.path.dirname(out[-1])
        if parent == out[-1]:
            return out
        out.append(parent)


def _is_git_root(folder: str) -> bool:
    return os.path.lexists(os.path.join(folder, GIT_MARK))


def git_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder or a file), or None."""
    for f in ancestors(folder):
        if _is_git_root(f):
            return f
    return None


def enclosing_store(folder: str) -> str | None:
    """The nearest ``<f>/.memofs`` folder at or above ``folder``, looked for up to the outermost git
    root (inclusive: past a nested repository's root to the enclosing work tree's), or up to the
    file-system root outside a git work tree; None when there is none."""
    chain = ancestors(folder)
    roots = [i for i, f in enumerate(chain) if _is_git_root(f)]
    limit = roots[-1] if roots else len(chain) - 1
    for f in chain[:limit + 1]:
        candidate = os.path.join(f, STORE_FOLDER)
        if os.path.isdir(candidate):
            return candidate
    return None


#: The most of a ``.git`` or ``commondir`` file read (a path and a newline; anything longer is not one).
_POINTER_BYTES = 4096


def _pointer(path: str) -> str | None:
    """The first line of the small text file ``path`` (a ``.git`` file, ``commondir``), or None."""
    try:
        with open(path, "rb") as f:
            data = f.read(_POINTER_BYTES)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    return lines[0].strip() if lines and "\x00" not in lines[0] else None


def main_worktree(root: str) -> str | None:
    """The main worktree of the linked git worktree whose root is ``root``, or None (not a linked
    worktree: ``.git`` a folder or a submodule's file; a bare repository's worktree). The worktree's
    ``.git`` file says ``gitdir: G`` (relative to ``root`` or absolute), ``G/commondir`` names the
    repository's ``.git`` (relative to ``G``), whose parent folder is the main worktree."""
    mark = os.path.join(root, GIT_MARK)
    if not os.path.isfile(mark):
        return None
    line = _pointer(mark)
    if not line or not line.startswith("gitdir:"):
        return None
    gitdir = os.path.normpath(os.path.join(root, line[len("gitdir:"):].strip()))
    common = _pointer(os.path.join(gitdir, "commondir"))
    if not common:
        return None  # a submodule's git folder: no worktree of another checkout
    common = os.path.normpath(os.path.join(gitdir, common))
    if os.path.basename(common) != GIT_MARK:
        return None  # a bare repository: no main worktree
    main = os.path.dirname(common)
    return main if main != root and os.path.isdir(common) else None


def worktree_store(folder: str) -> str | None:
    """The store of the main worktree (rule 4's walk from there: :func:`enclosing_store`) when
    ``folder`` is in a linked git worktree (:func:`main_worktree` of a git root at or above it,
    nearest first), or None."""
    for f in ancestors(folder):
        if _is_git_root(f):
            main = main_worktree(f)
            found = enclosing_store(main) if main else None
            if found:
                return found
    return None


def linked_worktree(folder: str, main: str) -> str | None:
    """The root of the linked git worktree at or above ``folder`` whose main worktree is ``main``
    (the folder holding the shared store: :func:`worktree_store`), or None: what a path of that
    worktree is relative to, as a path of the main worktree is relative to ``main`` (file recall)."""
    for f in ancestors(os.path.abspath(folder)):
        if _is_git_root(f):
            found = main_worktree(f)
            if found and (found == main or os.path.realpath(found) == os.path.realpath(main)):
                return f
    return None


def _first(finder, folders: list[str]) -> str | None:
    for folder in folders:
        found = finder(folder)
        if found:
            return found
    return None


def project_root(cwd: object = None, environ: Mapping[str, str] | None = None) -> str:
    """The project folder of a call (what a relative store setting is taken from): the agent CLI's
    project folder (:func:`project_dir`), else the git root above the start folder, else the start
    folder itself (:func:`start_folder`)."""
    start = start_folder(cwd)
    return project_dir(environ) or git_root(start) or start


def resolve(option: str | os.PathLike | None = None, *, cwd: object = None,
            environ: Mapping[str, str] | None = None) -> Resolved:
    """The store a call means (the module docstring's order). ``option``: ``--store`` (or a path a
    caller was given); ``cwd``: a hook payload's ``cwd`` (any JSON value; only an absolute path
    string is used); ``environ``: default ``os.environ``. Never raises for a missing folder and never
    creates one: the store is created by whoever writes it. Raises OSError only when the working
    folder is gone and is needed."""
    if option is not None and os.fspath(option):
        return Resolved(os.fspath(option), "option")
    setting = STORE.get(environ)
    if setting:
        if os.path.isabs(setting):
            return Resolved(setting, "setting")
        return Resolved(os.path.join(project_root(cwd, environ), setting), "setting")
    project = project_dir(environ)
    if project:
        found = _first(enclosing_store, walks(project))
        if found:
            return Resolved(found, "enclosing")
        shared = _first(worktree_store, walks(project))
        return Resolved(shared, "worktree") if shared else Resolved(os.path.join(project, STORE_FOLDER), "project")
    start = logical_start(cwd, environ)
    paths = walks(start)
    found = _first(enclosing_store, paths)
    if found:
        return Resolved(found, "enclosing")
    shared = _first(worktree_store, paths)
    if shared:
        return Resolved(shared, "worktree")
    root = _first(git_root, paths)
    if root:
        return Resolved(os.path.join(root, STORE_FOLDER), "git")
    return Resolved(os.path.join(paths[0], STORE_FOLDER), "cwd")


def store_path(option: str | os.PathLike | None = None, *, cwd: object = None,
               environ: Mapping[str, str] | None = None) -> str:
    """:func:`resolve`'s path alone."""
    return resolve(option, cwd=cwd, environ=environ).path


def in_folder(folder: str | os.PathLike) -> str:
    """The store folder a fresh store in ``folder`` gets (``<folder>/.memofs``: a demo's, a test's,
    an evaluation's throwaway store, whose folder the caller made)."""
    return os.path.join(os.fspath(folder), STORE_FOLDER)
