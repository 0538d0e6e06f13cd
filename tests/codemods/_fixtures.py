"""Where the codemod fixtures live; shared by the codemod tests (the legacy-loop fixtures included)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_files(rule_dir: str | None = None) -> list[Path]:
    """Every input fixture (``fixtures/<rule>/*.py``), or those of one rule directory."""
    base = FIXTURES / rule_dir if rule_dir else FIXTURES
    return sorted(p for p in base.rglob("*.py") if "__snapshots__" not in p.parts)


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"
