"""docs/migrate.md shows what the tool does today: its worked example is the tool's output, and the files it sends
readers to exist."""

from __future__ import annotations

import re
from pathlib import Path

from codemods.driver import migrate_source

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "migrate.md", ROOT / "docs" / "architecture.md"]
EXAMPLE = re.compile(r"<!-- docs-example: (?P<name>[\w.]+) -->\n```python\n(?P<before>.*?)```\n\n```python\n(?P<after>.*?)```",
                     re.S)


def test_the_worked_example_is_what_the_tool_writes():
    """The before/after pair under ``<!-- docs-example: NAME -->``: migrating the first block (as file NAME, the
    default target and marker width) gives the second, byte for byte."""
    examples = list(EXAMPLE.finditer((ROOT / "docs" / "migrate.md").read_text()))
    assert examples, "docs/migrate.md has its worked example"
    for example in examples:
        result = migrate_source(example["before"], filename=example["name"])
        assert result.new_text == example["after"], f"docs/migrate.md's example {example['name']} is stale"


# a repository path shown as code: `codemods/plan/planner.py`, `tests/codemods/test_cli.py`, `bench/migrate.py`
PATH = re.compile(r"`((?:codemods|tests|bench|osmosis_compat|examples|docs)/[\w./-]*)`")
MODULE = re.compile(r"`(?:from |import )?(codemods(?:\.\w+)+)")


def _resolves(dotted: str) -> bool:
    """``codemods.driver.migrate_source``: some prefix of it is a module or package of the repository."""
    parts = dotted.split(".")
    return any((ROOT.joinpath(*parts[:i]).with_suffix(".py")).exists() or ROOT.joinpath(*parts[:i]).is_dir()
               for i in range(len(parts), 1, -1))


def test_the_files_the_docs_name_exist():
    """A renamed or removed module leaves no pointer behind (the docs named `codemods/wrap.py` after it was gone)."""
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for path in PATH.findall(text):
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
        for dotted in MODULE.findall(text):
            if not _resolves(dotted):
                missing.append(f"{doc.relative_to(ROOT)}: {dotted}")
    assert not missing, missing
