"""Which osmosis-ai API a tree is written for: ``--target`` when given, else its declared requirement.

Read the way ruff reads ``requires-python``: from the closest project file above each PATH (the PATH itself, then
its parents) that declares an ``osmosis-ai`` requirement — ``pyproject.toml`` (``[project]`` dependencies and
optional dependencies, Poetry's ``osmosis-ai = "^0.3"``), ``requirements*.txt``, ``setup.cfg`` (``install_requires``).
The requirement's *lower bound* decides: ``>=0.3``, ``==0.3.8``, ``~=0.3.2``, ``^0.3`` → ``"0.3"``; a bound
below 0.3, an upper bound only (``<0.3``) or no version → ``"0.2"``. No declaration anywhere → ``"0.2"``
(:data:`codemods.base.DEFAULT_TARGET`, the seeds' API).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from codemods.base import DEFAULT_TARGET

_NAME = r"osmosis[-_.]ai"
# a requirement: the name, optional extras, then the version specifiers up to a quote, `;`, `#` or the line's end
_SPEC = rf"{_NAME}(?![\w.-])\s*(?:\[[^\]]*\])?\s*(?P<spec>[^\"'\n;#]*)"
_REQ_QUOTED = re.compile(rf"[\"']\s*{_SPEC}", re.IGNORECASE)  # pyproject: "osmosis-ai>=0.3" in a list
_REQ_LINE = re.compile(rf"^\s*{_SPEC}", re.IGNORECASE | re.MULTILINE)  # requirements*.txt, setup.cfg
_POETRY = re.compile(rf"^\s*[\"']?{_NAME}[\"']?\s*=\s*(?P<value>.+)$", re.IGNORECASE | re.MULTILINE)
_CLAUSE = re.compile(r"(===|==|~=|>=|<=|!=|>|<|\^|~)?\s*v?(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class TargetChoice:
    """The target and where it came from (``source`` is None for the default)."""

    target: str
    source: Optional[str] = None  # e.g. "pyproject.toml: osmosis-ai>=0.3"

    def describe(self) -> str:
        """``osmosis-ai 0.3 (from pyproject.toml: osmosis-ai>=0.3)`` — for the summary line."""
        origin = self.source or "default: no osmosis-ai requirement declared"
        return f"osmosis-ai {self.target} ({origin})"


def target_of_spec(spec: str) -> str:
    """``"0.3"`` when the specifier's lower bound is 0.3 or later, else ``"0.2"``."""
    lower: Optional[tuple[int, ...]] = None
    for op, version in _CLAUSE.findall(spec):
        if op in ("<", "<=", "!="):
            continue
        parts = tuple(int(x) for x in version.split("."))
        lower = parts if lower is None or parts > lower else lower
    if lower is None:
        return DEFAULT_TARGET
    return "0.3" if lower[:2] >= (0, 3) or lower[0] >= 1 else "0.2"


def _declared_in(path: Path) -> Optional[str]:
    """The osmosis-ai requirement text declared in one project file, if any."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("#")]
    text = "\n".join(lines)
    if path.name == "pyproject.toml":
        m = _POETRY.search(text)
        if m:
            value = m.group("value").strip()
            version = re.search(r"version\s*=\s*[\"']([^\"']*)", value)
            return f"osmosis-ai {version.group(1) if version else value.strip(chr(34) + chr(39))}"
    m = (_REQ_QUOTED if path.name == "pyproject.toml" else _REQ_LINE).search(text)
    if m is None:
        return None
    return f"osmosis-ai{m.group('spec').strip().rstrip(',')}"


def _project_files(directory: Path) -> list[Path]:
    out = [directory / "pyproject.toml"]
    try:
        out += sorted(p for p in directory.glob("requirements*.txt") if p.is_file())
    except OSError:
        pass
    out.append(directory / "setup.cfg")
    return [p for p in out if p.is_file()]


def detect_target(paths: Iterable[str]) -> TargetChoice:
    """The target the tree at ``paths`` declares (closest declaration above the first PATH that has one)."""
    seen: set[Path] = set()
    for raw in paths:
        start = Path(os.path.abspath(raw))
        directory = start if start.is_dir() else start.parent
        for d in (directory, *directory.parents):
            if d in seen:
                break
            seen.add(d)
            for f in _project_files(d):
                req = _declared_in(f)
                if req is not None:
                    spec = req[len("osmosis-ai"):]
                    return TargetChoice(target_of_spec(spec), f"{f}: {req}")
    return TargetChoice(DEFAULT_TARGET)
