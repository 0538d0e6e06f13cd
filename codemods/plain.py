"""The engine of the plain-framework rules (``strands-agent``, ``openai-agent``): analysis → plan → emit.

:func:`migrate_plain` is a rule's ``transform``: it finds the module's framework, plans the module
(:func:`codemods.plan.module_plan.plan_module`: the facts of :mod:`codemods.analysis`, one
:class:`~codemods.plan.model.Plan` per driver, the module-level decisions) and writes what the plan says
(:func:`codemods.emit.module.emit_module`). What gets written, per driver:

* a top-level function nothing else calls (or only the ``__main__`` block) becomes
  ``class <Name>Workflow(AgentWorkflow)`` whose ``async def run(self, ctx)`` holds its body, converted; the
  ``__main__`` block then serves the workflow as ``osmosis rollout init`` scaffolds do (``uvicorn.run(
  create_rollout_server(backend=LocalBackend(workflow=…)))``), with the replaced lines' comments kept;
* a function other code calls (a decorator such as a web route, another function, another module, the Lambda
  runtime) stays as it is, and the workflow is added *beside* it (a comment-free converted copy);
* module-level script code that runs an agent moves into a workflow's ``run()`` (named after the file);
* ``run()`` of an existing ``AgentWorkflow`` subclass that still builds plain agents is migrated in place.

Converted means: agents built in ``run()`` as the Osmosis classes with the rollout placeholder model (sampling
settings carried over), module-level agents a driver uses built there too (moved when nothing else uses them,
copied otherwise), the program's input replaced by the rollout prompt (``ctx.prompt``, or its user text where a
template or other code reads it — generated helper ``_prompt_text``), sessions created once per sample, sync runs
awaited, ``exit(0)`` → ``return``, returned values dropped (a workflow's result is its samples) with their effects
kept. A module that ends with a workflow but no ``Grader`` gets a TODO saying what a grader could read; a module
with several workflows gets a TODO (discovery wants one per entrypoint module).
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from codemods.base import ImportTable, RuleContext
from codemods.emit.module import emit_module
from codemods.framework import Framework
from codemods.plan.module_plan import plan_module


def migrate_plain(module: cst.Module, ctx: RuleContext, rule_code: str,
                  framework: Callable[[ImportTable, RuleContext], Optional[Framework]],
                  fallback: Callable[[ImportTable, RuleContext], Framework]) -> cst.Module:
    """A plain-framework rule's ``transform``: the module's framework (``framework(table, ctx)``, None when the
    module does not import it) — or ``fallback`` when the module only imports what another file of the run offers
    for this rule — then plan and emit."""
    table = ImportTable.of(module)
    fw = framework(table, ctx)
    if fw is None:
        if ctx.repo is None or not any(v.rule == rule_code for v in ctx.repo.imported(ctx.filename).values()):
            return module
        fw = fallback(table, ctx)
    plan = plan_module(module, fw)
    if plan is None:
        return module
    return emit_module(module, fw, plan)
