"""docs/architecture.md lists every module of ``codemods/`` (one line each), and nothing that is gone.

The listing had gone stale (it still named ``codemods/wrap.py`` and ``analysis/program.py`` after both were
removed, and none of ``plan/`` or ``emit/``): a new module now fails here until it has its line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## codemods/ — osmosis-migrate"
ENTRY = re.compile(r"^\s*\* `(codemods/[\w/.]*)` — \S", re.M)


def _listing() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert text.count(SECTION) == 1, f"docs/architecture.md has one section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return ENTRY.findall(section)


def _modules() -> tuple[set[str], set[str]]:
    """Under codemods/, as repository paths: the modules and subpackages that need a line (a subpackage ends with
    ``/``; its line stands for its ``__init__.py``), and every path a line may name (those plus the
    ``__init__.py`` files)."""
    needed: set[str] = set()
    named: set[str] = set()
    for path in (ROOT / "codemods").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        named.add(rel)
        if path.name != "__init__.py":
            needed.add(rel)
        if path.parent != ROOT / "codemods":
            needed.add(path.parent.relative_to(ROOT).as_posix() + "/")
    return needed, named | needed


def test_every_module_of_codemods_is_listed():
    needed, _ = _modules()
    missing = sorted(needed - set(_listing()))
    assert not missing, f"modules of codemods/ without their line in docs/architecture.md: {missing}"


def test_the_listing_names_only_modules_that_exist():
    listed = _listing()
    assert len(listed) == len(set(listed)), "a module is listed twice"
    _, named = _modules()
    gone = sorted(set(listed) - named)
    assert not gone, f"docs/architecture.md lists modules that are gone: {gone}"


def test_the_listing_is_read():
    """The parser finds the listing's lines (a format change must not make the checks above vacuous)."""
    listed = _listing()
    assert "codemods/driver.py" in listed and "codemods/plan/planner.py" in listed and "codemods/emit/" in listed
