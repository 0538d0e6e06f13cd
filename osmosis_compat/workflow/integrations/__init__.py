"""Framework integrations of the workflow API: ``strands`` (Strands Agents) and ``openai_agents`` (OpenAI Agents SDK).

Import the submodule you use; this package imports neither framework. As upstream 0.2.x, the package-level names
are the Strands ones (``OsmosisRolloutModel``, ``OsmosisStrandsAgent``), resolved lazily on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["OsmosisRolloutModel", "OsmosisStrandsAgent"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module(f"{__name__}.strands"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
