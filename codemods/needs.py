"""Which ``osmosis-ai`` requirement a migrated tree needs, computed from what the run wrote.

The names the migrated files import decide the extras (osmosis-ai's own ``Provides-Extra``):

==========================================================  =====================  ======================
the migrated file imports                                   0.3.8                  0.2.31
==========================================================  =====================  ======================
``osmosis_ai.rollout.integrations.agents.strands``          ``[strands]``          (core dependency)
``osmosis_ai.rollout.integrations.agents.openai_agents``    ``[openai-agents]``    (core dependency)
``osmosis_ai.rollout.server`` (or, newly, ``uvicorn``)       ``[server]``           ``[server]``
any other ``osmosis_ai.rollout`` module                     —                      ``[server]`` (0.2.31's
                                                                                   ``osmosis_ai.rollout``
                                                                                   imports FastAPI)
==========================================================  =====================  ======================

The lower bound is the release the output is proven on (``tests/codemods/test_upstream_migrate.py``): ``>=0.3.8``
for target 0.3, ``>=0.2.31,<0.3`` for target 0.2. Files importing ``osmosis_compat`` (``--strategy wrap``) also
need osmosis-compat; files still importing ``RolloutAgentLoop`` from ``osmosis_ai`` (a loop left with a TODO) need
the legacy API (osmosis-ai ≤ 0.2.17, or osmosis-compat's shim) until they are migrated. Nothing is edited: the
summary and the report say it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from codemods.driver import STATUS_CHANGED, FileResult
from codemods.imported import Imported, imported

LOWER_BOUND = {"0.3": ">=0.3.8", "0.2": ">=0.2.31,<0.3"}
_EXTRAS = {
    "0.3": (("osmosis_ai.rollout.integrations.agents.strands", "strands"),
            ("osmosis_ai.rollout.integrations.agents.openai_agents", "openai-agents"),
            ("osmosis_ai.rollout.server", "server")),
    "0.2": (("osmosis_ai.rollout", "server"),),
}
LEGACY_NAMES = frozenset({"RolloutAgentLoop"})


@dataclass
class Needs:
    """What the migrated files need. ``extras``: extra → the files that need it; ``files``: the migrated files
    that import ``osmosis_ai``; ``compat`` / ``legacy``: files that import ``osmosis_compat`` / still use the
    legacy API."""

    target: str
    extras: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    compat: list[str] = field(default_factory=list)
    legacy: list[str] = field(default_factory=list)

    @property
    def requirement(self) -> Optional[str]:
        """``osmosis-ai[server,strands]>=0.3.8``, or ``None`` when no migrated file imports osmosis_ai."""
        if not self.files:
            return None
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"osmosis-ai{extras}{LOWER_BOUND[self.target]}"

    def as_json(self, declared: Optional[str] = None) -> dict[str, Any]:
        """The report's ``"requires"`` object."""
        return {
            "requirement": self.requirement,
            "extras": {k: sorted(v) for k, v in sorted(self.extras.items())},
            "files": sorted(self.files),
            "osmosis_compat": sorted(self.compat),
            "legacy_api": sorted(self.legacy),
            "declared": declared,
        }

    def describe(self, declared: Optional[str] = None) -> list[str]:
        """The summary's lines (none when the run wrote nothing that imports osmosis_ai)."""
        lines = []
        if self.requirement:
            note = f"; declared: {declared}" if declared else ""
            lines.append(f"requirement: the migrated files need {self.requirement} (not edited{note})")
        if self.compat:
            lines.append(f"  and osmosis-compat: {len(self.compat)} file(s) import osmosis_compat (--strategy wrap)")
        if self.legacy:
            lines.append(f"  {len(self.legacy)} file(s) still use the legacy RolloutAgentLoop API (see their TODOs)")
        return lines


def _imports_of(data: Optional[bytes], known: Optional[Imported]) -> Optional[Imported]:
    """What ``data`` imports: ``known`` when the driver read it already, else parsed here (None: does not parse)."""
    if known is not None:
        return known
    tree = _parse(data)
    return None if tree is None else imported(tree)


def _parse(data: Optional[bytes]) -> Optional[ast.AST]:
    try:
        return ast.parse(data or b"")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def needs_of(results: Sequence[FileResult], target: str) -> Needs:
    """What the files this run changed (or would change) import, as an osmosis-ai requirement."""
    needs = Needs(target)
    for r in results:
        if r.status != STATUS_CHANGED or not r.new_bytes or b"osmosis" not in r.new_bytes:
            continue
        new = _imports_of(r.new_bytes, r.imports)
        if new is None:
            continue
        modules, names = new.modules, new.osmosis_names
        if any(m == "osmosis_ai" or m.startswith("osmosis_ai.") for m in modules):
            needs.files.append(r.path)
            wanted = {extra for m in modules for prefix, extra in _EXTRAS[target]
                      if m == prefix or m.startswith(prefix + ".")}
            old = _imports_of(r.old_bytes, r.old_imports) if "uvicorn" in modules else None
            if "uvicorn" in modules and (old is None or "uvicorn" not in old.modules):
                wanted.add("server")  # the serve block the run wrote runs uvicorn: osmosis-ai[server] brings it
            for extra in wanted:
                needs.extras.setdefault(extra, []).append(r.path)
        if any(m == "osmosis_compat" or m.startswith("osmosis_compat.") for m in modules):
            needs.compat.append(r.path)
        if names & LEGACY_NAMES:
            needs.legacy.append(r.path)
    return needs
