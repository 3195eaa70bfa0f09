"""The design the code cites lives in the repository (issue 20, item 8): every
``docs/design.md#section`` a docstring, comment, benchmark or test names is a heading of
docs/design.md, its own links resolve, and nothing cites the SPEC file users never get."""

from __future__ import annotations

import re
from pathlib import Path
from paths import REPO

ROOT = REPO
DESIGN = ROOT / "docs" / "design.md"
#: ``docs/design.md#section`` (code, README) or ``](design.md#section)`` (a link of a docs page)
CITE = re.compile(r"(?:docs/design\.md|\]\(design\.md)#([a-z0-9-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors() -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{2,4} (.+)$", DESIGN.read_text(encoding="utf-8"), re.M)}


def _files():
    for folder in ("consolidate", "judges", "benchmarks", "tests", "prompts"):
        yield from (p for p in sorted((ROOT / folder).rglob("*"))
                    if p.suffix in (".py", ".md") and p.name != Path(__file__).name)
    yield ROOT / "README.md"
    # the pages moved out of the README (issue 32) cite it too; design.md's own links: below
    yield from (p for p in sorted((ROOT / "docs").rglob("*.md")) if p != DESIGN)


def citations() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in _files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITE.finditer(line):
                out.setdefault(m.group(1), []).append(f"{path.relative_to(ROOT)}:{n}")
    return out


def test_slug_is_githubs():
    assert slug("Evidence and confidence") == "evidence-and-confidence"
    assert slug("Non-negotiables") == "non-negotiables"


def test_every_cited_section_exists():
    cited = citations()
    assert len(cited) >= 8  # the pipeline, its outcomes, judges, the write policy and its parts, the layout
    missing = {a: where for a, where in cited.items() if a not in anchors()}
    assert not missing, f"cited but not a heading of docs/design.md: {missing}"


def test_the_design_doc_links_resolve():
    text = DESIGN.read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(#([a-z0-9-]+)\)", text))
    assert links and links <= anchors()


def test_nothing_cites_the_spec_users_never_get():
    pattern = re.compile(r"SPEC (section|§)|SPEC\.md|shared/SPEC")
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in _files()
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not offenders


def test_the_readme_points_to_the_design():
    assert "docs/design.md" in (ROOT / "README.md").read_text(encoding="utf-8")
