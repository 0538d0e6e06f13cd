"""The options every part of osmosis-migrate shares (a leaf module without heavy imports: the CLI and the driver
read it before libcst is loaded)."""

from __future__ import annotations

STRATEGIES = ("auto", "rewrite", "wrap")  # --strategy: how legacy loops are migrated
TARGETS = ("0.2", "0.3")  # osmosis-ai API generations the output can be written for (see RuleContext.target)
# today's osmosis-ai (what `pip install osmosis-ai` gives): the target unless the tree declares a 0.2 workflow-era
# requirement (codemods.targets)
DEFAULT_TARGET = "0.3"
