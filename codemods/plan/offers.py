"""What a module can offer other modules of the run for the names they import from it — a rollout factory for a
module-level agent, a rollout copy of a class whose methods run agents or of a helper function — or why not.

The verdicts feed :mod:`codemods.analysis.repo` (through the rules' ``offers`` hook) before any file is migrated;
the same plans are what :mod:`codemods.emit.offered` later writes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import libcst as cst

from codemods.analysis.drivers import Driver, find_drivers
from codemods.analysis.module import apply_imported, module_agent_deps, module_model
from codemods.analysis.names import name_counts
from codemods.analysis.repo import Verdict
from codemods.plan.model import Plan
from codemods.plan.planner import DriverPlanner
from codemods.syntax import block_statements

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel
    from codemods.framework import Framework


def factory_statements(model: "ModuleModel", name: str) -> list[cst.BaseStatement]:
    """The module-level statements a rollout factory for the agent ``name`` rebuilds: the module agents it
    references (handoffs, tools), in module order, then its own."""
    deps = sorted(module_agent_deps(model, {name}) - {name}, key=lambda n: model.agents[n])
    return [model.body[model.agents[d]] for d in (*deps, name)]


def plan_agent_factory(model: "ModuleModel", fw: "Framework", name: str, factory: str) -> Plan:
    """The plan of ``def <factory>(): …; return <the agent>`` (its ``problems`` say why it cannot be written)."""
    driver = Driver("factory", factory, [model.agents[name]], factory_statements(model, name), None)
    return DriverPlanner(model, fw, driver, fw.target).run()


def plan_class_offer(model: "ModuleModel", fw: "Framework", name: str) -> Plan:
    """A plan whose ``class_plans[name]`` are the methods of the class ``name`` converted (or whose ``problems``
    say why not)."""
    planner = DriverPlanner(model, fw, Driver("function", "__offer__", [], [], None), fw.target)
    planner.plan_class(name)
    return planner.p


def plan_helper_offer(model: "ModuleModel", fw: "Framework", name: str) -> Plan:
    """The plan of the helper function ``name`` converted to run the Osmosis agents."""
    func = model.body[model.functions[name]]
    driver = Driver("helper", name, [model.functions[name]], list(block_statements(func.body)), func)
    return DriverPlanner(model, fw, driver, fw.target).run()


def offers_of(tree: cst.Module, fw: "Framework", module_name: str, names: Sequence[str]) -> dict[str, Verdict]:
    """What ``tree`` can offer other files for ``names``: per name a :class:`~codemods.analysis.repo.Verdict` (the
    rollout version's name, or the problem)."""
    counts = [name_counts(s) for s in tree.body]
    model = module_model(tree, fw, counts, fw.ctx.filename, {n: ["other modules"] for n in names})
    if fw.ctx.repo is not None:  # what this exporter itself imports from files analysed before it
        apply_imported(model, fw, fw.ctx.repo)
    find_drivers(model, fw)
    out: dict[str, Verdict] = {}
    for name in names:
        if name.endswith(("_for_rollout", "ForRollout")):
            continue  # already a rollout version (written by a previous run)
        if name in model.agents and name not in model.groups:
            plan = plan_agent_factory(model, fw, name, f"{name}_for_rollout")
            kind, rollout = "agent", f"{name}_for_rollout"
        elif name in model.runner_classes and name in model.classes:
            plan = plan_class_offer(model, fw, name)
            kind, rollout = "class", f"{name}ForRollout"
        elif name in model.runners and name in model.functions:
            plan = plan_helper_offer(model, fw, name)
            kind, rollout = "helper", f"{name}_for_rollout"
        else:
            continue
        problem = "; ".join(plan.problems)
        out[name] = Verdict(kind, module_name, name, None if problem else rollout, problem, rule=fw.code)
    return out
