"""The registry of migration rules, in the order they run on a file.

Each rule is a :class:`codemods.base.Rule` subclass in its own module. The ``imports`` rule runs last so that it
can tidy the imports the other rules made unused and add the ones they need.
"""

from __future__ import annotations

from codemods.base import Rule


def all_rules() -> list[type[Rule]]:
    """Every rule class, in run order (imported lazily: importing libcst is not free)."""
    rules: list[type[Rule]] = []
    try:
        from codemods.rules.legacy_loop import LegacyLoopRule

        rules.append(LegacyLoopRule)
    except ModuleNotFoundError as exc:  # written in parallel by another engineer; absent until it lands
        if exc.name != "codemods.rules.legacy_loop":
            raise
    from codemods.rules.imports import ImportsRule
    from codemods.rules.openai_agent import OpenAIAgentRule
    from codemods.rules.strands_agent import StrandsAgentRule
    from codemods.rules.workflow_03 import Workflow03Rule

    # workflow-0.3 after the rules that write workflows (it moves what they wrote for 0.2, if any), before imports
    rules += [StrandsAgentRule, OpenAIAgentRule, Workflow03Rule, ImportsRule]
    return rules
