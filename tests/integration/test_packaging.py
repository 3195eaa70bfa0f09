"""The distribution as a user gets it (issue 32): ``python -m build`` makes an sdist and a wheel from
a copy of the checkout (its tracked files, symlinks kept), the wheel holds one top-level package,
``consolidate`` (judges/ and prompts/ as ``consolidate.judges`` and ``consolidate.judges.prompts``,
real files), and the wheel installed into a fresh virtual environment runs ``consolidate demo``, a
SessionStart hook and ``consolidate mcp`` (initialize, one ``recall``) with nothing of the checkout in
sight.

The fresh environment: ``python -m venv --without-pip``, the wheel installed by pip with
``--no-deps --no-index``, and the dependencies seen through a folder of symlinks to this
environment's site-packages minus the project's own entries (its editable finder and dist-info),
added by a ``.pth`` (a dependency's own ``.pth`` files still run). Resolving the dependencies from
the registry takes minutes and needs the network; this takes seconds offline. The build runs without
isolation (``--no-isolation``): the build requirements are in the ``test`` extra."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import anyio
import pytest
from paths import REPO

pytestmark = pytest.mark.integration

ROOT = REPO
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
VERSION = PYPROJECT["project"]["version"]
DIST = NAME.replace("-", "_")
#: site-packages entries that are the project itself (an editable or a plain install of it)
OWN = ("consolidate", "__pycache__")
FACT = "The staging database is rebuilt every night at 02:00 UTC"


def _own_entry(name: str) -> bool:
    return name in OWN or (name.startswith(("__editable__", "consolidate")) and "consolidate" in name)


def _dependency_dirs() -> list[Path]:
    """The folders this interpreter imports the dependencies from, in order: sys.path minus the
    standard library (under the base interpreter's prefix) and the checkout's own import roots (its
    root, tests/). A virtual environment inside the checkout (CI makes ``.venv`` there) is kept."""
    base = Path(sys.base_prefix).resolve()
    checkout = {ROOT, ROOT / "tests"}
    out = []
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if path.is_dir() and path not in out and not path.is_relative_to(base) and path not in checkout:
            out.append(path)
    return out


def _env() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH (the tests' points at the checkout), no
    CONSOLIDATE_* settings but the fast hash embedding."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLIDATE_", "PYTHON", "VIRTUAL_ENV"))}
    env["CONSOLIDATE_EMBEDDING"] = "hash"
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """``{"wheel", "sdist", "venv", "home"}``: the artifacts built from a copy of the checkout's
    tracked files, and a fresh venv with the wheel installed."""
    base = tmp_path_factory.mktemp("packaging")
    src = base / "src"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        source, target = ROOT / rel, src / rel
        if not os.path.lexists(source):  # deleted in the work tree, not yet in the index
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    out = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(base / "dist"), str(src)],
                         capture_output=True, text=True, timeout=300, env={**_env(), "PYTHONPATH": ""})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    [wheel] = (base / "dist").glob("*.whl")
    [sdist] = (base / "dist").glob("*.tar.gz")

    deps = base / "deps"
    deps.mkdir()
    for sp in _dependency_dirs():
        for entry in sorted(sp.iterdir()):
            if not _own_entry(entry.name) and not (deps / entry.name).exists():
                (deps / entry.name).symlink_to(entry)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120,
                   env=_env())
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (purelib / "_deps.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                          "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True, timeout=300,
                         env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    home = base / "home"
    home.mkdir()
    return {"wheel": wheel, "sdist": sdist, "venv": venv, "home": home}


def _run(built, *argv: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(built["venv"] / "bin" / argv[0]), *argv[1:]], input=stdin, capture_output=True,
                          text=True, cwd=built["home"], env=_env(), timeout=timeout)


def test_the_wheel_holds_one_top_level_package_of_real_files(built):
    with zipfile.ZipFile(built["wheel"]) as z:
        infos = z.infolist()
        names = {i.filename for i in infos}
        entry_points = z.read(f"{DIST}-{VERSION}.dist-info/entry_points.txt").decode()
    assert built["wheel"].name == f"{DIST}-{VERSION}-py3-none-any.whl"
    assert {n.split("/")[0] for n in names} == {"consolidate", f"{DIST}-{VERSION}.dist-info"}
    assert [i.filename for i in infos if stat.S_ISLNK(i.external_attr >> 16)] == []
    judges = {p.name for p in (ROOT / "judges").glob("*.py")}
    prompts = {p.name for p in (ROOT / "prompts").iterdir() if p.suffix in (".py", ".md")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("consolidate/judges/") and n.count("/") == 2} == judges
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("consolidate/judges/prompts/")} == prompts
    assert {"consolidate/ui/static/ui.css", "consolidate/rules/data/gitleaks.toml"} <= names
    assert "noop = consolidate.judges.noop:NoopJudge" in entry_points and "= judges." not in entry_points
    with tarfile.open(built["sdist"]) as t:
        members = t.getmembers()
    assert [m.name for m in members if m.issym() or m.islnk()] == []
    assert f"{DIST}-{VERSION}/consolidate/judges/prompts/judge-v1.md" in {m.name for m in members}


def test_the_installed_wheel_imports_from_the_venv_only(built):
    code = ("import importlib.metadata as md, importlib.util, json, consolidate, consolidate.judges.registry as r\n"
            "print(json.dumps({'files': [consolidate.__file__, r.__file__], 'version': md.version(%r),\n"
            "  'own': consolidate.__version__, 'judges': importlib.util.find_spec('judges') is not None,\n"
            "  'installed': r.installed()}))" % NAME)
    out = _run(built, "python", "-c", code)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    venv = str(built["venv"].resolve())
    assert all(f.startswith(venv) for f in got["files"]), got["files"]
    assert got["version"] == got["own"] == VERSION and got["judges"] is False
    assert all(v.startswith("consolidate.judges.") for v in got["installed"].values())


def test_the_installed_command_runs_the_demo_a_hook_and_the_mcp_server(built):
    from mcp import Client, StdioServerParameters

    demo = _run(built, "consolidate", "demo", timeout=300)
    assert demo.returncode == 0, demo.stderr
    assert "recall" in demo.stdout and "store layout" in demo.stdout

    store = built["home"] / ".memofs"
    script = built["home"] / "script.json"
    script.write_text(json.dumps({"staging database": {"verdict": "keep", "statement": FACT, "type": "fact",
                                                        "evidence": "observed-success", "confidence": "high",
                                                        "reason": "scripted"}}))
    setup = ("import sys; from consolidate import Store, run_queue; from consolidate.judges import ScriptedJudge\n"
             "import json; s = Store(sys.argv[1], embedding='hash', project='app')\n"
             "s.sessions.add_note('s0', sys.argv[3], flag=True, kind='fact')\n"
             "s.sessions.end('s0', 'success')\n"
             "run_queue(s, judges=[ScriptedJudge(json.load(open(sys.argv[2])))]); s.close()")
    out = _run(built, "python", "-c", setup, str(store), str(script), FACT)
    assert out.returncode == 0, out.stderr

    payload = {"session_id": "s1", "transcript_path": str(built["home"] / "s1.jsonl"), "cwd": str(built["home"]),
               "hook_event_name": "SessionStart", "source": "startup"}
    hook = _run(built, "consolidate", "hook", "--store", str(store), stdin=json.dumps(payload))
    assert hook.returncode == 0, hook.stderr
    assert hook.stdout.startswith("consolidate: this is session s1") and FACT in hook.stdout

    params = StdioServerParameters(command=str(built["venv"] / "bin" / "consolidate"), args=["mcp", "--store", str(store)],
                                   env=_env(), cwd=str(built["home"]))

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            got = await client.call_tool("recall", {"query": "when is the staging database rebuilt"})
            assert not got.is_error, got.content
            return [m["text"] for m in got.structured_content["memories"]]

    texts = anyio.run(main)
    assert any(t.startswith(FACT) for t in texts), texts
