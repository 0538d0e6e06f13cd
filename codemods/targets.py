"""Which osmosis-ai API a tree is written for: ``--target`` (or ``[tool.osmosis-migrate] target``) when given,
else what its declared ``osmosis-ai`` requirement says.

The declaration is the closest one above the first PATH (the PATH itself, then its parents, up to the repository
root): :func:`codemods.requirements.declared_in` reads the project files of each directory as what they are.

The decision (:func:`target_of_spec`), by the releases the requirement admits:

* it admits a 0.3 or later release (``>=0.3``, ``==0.3.8``, ``^0.3``, no version at all, ``>=0.2.20``) →
  ``"0.3"``: that is what pip installs;
* else it admits a release of the **0.2 workflow era**, 0.2.18–0.2.31 (``==0.2.31``, ``>=0.2.20,<0.3``,
  ``~=0.2.25``, ``<0.3``, ``^0.2``) → ``"0.2"``;
* else (a **legacy-era** pin, ≤ 0.2.17: ``==0.2.12``, ``>=0.2.7,<0.2.18``) → ``"0.3"``: the legacy API says
  nothing about which workflow API the migrated code should use, and today's is 0.3.

No declaration → ``"0.3"`` (:data:`codemods.base.DEFAULT_TARGET`, today's osmosis-ai).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

from codemods.base import DEFAULT_TARGET
from codemods.config import start_dir, upwards
from codemods.requirements import Requirement, admits, declared_in

#: releases probed to decide: the workflow era, today's line and what may come after it
WORKFLOW_ERA = [(0, 2, p) for p in range(18, 32)]
LEGACY_ERA = [(0, 2, p) for p in range(0, 18)]
LATER = [(0, 3, p) for p in range(0, 10)] + [(0, 3, 99), (0, 4, 0), (1, 0, 0), (99, 0, 0)]

WHY_DEFAULT = "default: no osmosis-ai requirement declared"
WHY_03 = "it allows osmosis-ai 0.3 (today's release), which is what pip installs"
WHY_02 = "the 0.2 workflow era (0.2.18–0.2.31)"
WHY_LEGACY = "a legacy-era requirement (≤ 0.2.17) says nothing about the workflow API: today's 0.3"
WHY_NONE = "it admits no release this tool knows: today's 0.3"


@dataclass(frozen=True)
class TargetChoice:
    """The target and where it came from. ``source``: ``"--target"``, the config file, or the requirement's
    location and text (``None`` for the default); ``requirement``: the declaration read, if any; ``why``: the
    reason in words."""

    target: str
    source: Optional[str] = None
    requirement: Optional[Requirement] = None
    why: str = ""

    def describe(self) -> str:
        """``osmosis-ai 0.3 (pyproject.toml:7 ([project] dependencies): osmosis-ai>=0.3.2 — it allows …)`` — the
        summary's ``target:`` line."""
        if self.source is None:
            return f"osmosis-ai {self.target} ({self.why or WHY_DEFAULT})"
        why = f" — {self.why}" if self.why else ""
        return f"osmosis-ai {self.target} ({self.source}{why})"

    def as_json(self) -> dict:
        """The report's ``"target"`` object."""
        req = self.requirement
        return {
            "version": self.target,
            "source": self.source,
            "why": self.why or (WHY_DEFAULT if self.source is None else ""),
            "requirement": None if req is None else {
                "file": req.file, "line": req.line, "where": req.where, "text": req.text,
                "extras": list(req.extras), "specifier": req.effective_spec, "marker": req.marker,
            },
        }


def target_of_spec(spec: str) -> tuple[str, str]:
    """(target, why) for a version specifier (PEP 440 or Poetry; ``""`` for none), per the module docstring."""
    if any(admits(spec, v) for v in LATER):
        return "0.3", WHY_03
    if any(admits(spec, v) for v in WORKFLOW_ERA):
        return "0.2", WHY_02
    if any(admits(spec, v) for v in LEGACY_ERA):
        return "0.3", WHY_LEGACY
    return "0.3", WHY_NONE


def detect_target(paths: Iterable[str]) -> TargetChoice:
    """The target the tree at ``paths`` declares: the closest ``osmosis-ai`` declaration above the first PATH
    (then the next PATHs, for directories not seen yet). Raises :class:`codemods.config.ConfigError` for a
    ``pyproject.toml`` that is not valid TOML on the way."""
    seen: set[str] = set()
    for raw in paths:
        for directory in upwards(start_dir(raw)):
            if directory in seen:
                break
            seen.add(directory)
            req = declared_in(directory)
            if req is not None:
                target, why = target_of_spec(req.effective_spec)
                return TargetChoice(target, req.describe(os.getcwd()), req, why)
    return TargetChoice(DEFAULT_TARGET, why=WHY_DEFAULT)
