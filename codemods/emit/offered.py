"""Rollout versions a module writes for names other modules of the run use: a factory that builds a module-level
agent as the Osmosis class (``<name>_for_rollout()``), a converted copy of a class or helper function."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.body import code
from codemods.analysis.module import assigned_value
from codemods.emit.body import emit_body, emit_stmt
from codemods.framework import Framework
from codemods.plan.offers import factory_statements, plan_agent_factory, plan_class_offer, plan_helper_offer
from codemods.syntax import block_statements, kwarg, strip_comments, with_kwarg

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel


def agent_factory(model: "ModuleModel", fw: Framework, name: str, factory: str) -> Optional[cst.FunctionDef]:
    """``def <factory>(): …; return OsmosisAgent(...)``: the module-level agent ``name`` (and the module agents it
    references, e.g. handoffs) built per call as the Osmosis class on the placeholder model; None when its plan has
    problems (:func:`codemods.plan.offers.plan_agent_factory`)."""
    plan = plan_agent_factory(model, fw, name, factory)
    if plan.problems:
        return None
    stmts = factory_statements(model, name)
    converted = [strip_comments(emit_stmt(fw, plan, s).with_changes(leading_lines=[])) for s in stmts]
    last = assigned_value(converted[-1])
    body = [*converted[:-1], cst.SimpleStatementLine(body=[cst.Return(value=last)])]
    return cst.FunctionDef(
        name=cst.Name(factory),
        params=cst.Parameters(),
        body=cst.IndentedBlock(body=body),
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
    )


def offered_copy(model: "ModuleModel", fw: Framework, name: str, new_name: str, kind: str) -> Optional[cst.CSTNode]:
    """The rollout version of a class or helper function another file uses (a comment-free converted copy)."""
    if kind == "class":
        offer = plan_class_offer(model, fw, name)
        plans = offer.class_plans.get(name, [])
        if offer.problems or not plans:
            return None
        cls = model.body[model.classes[name]]
        by_id = {id(mp.driver.func): mp for mp in plans}
        methods = []
        for stmt in block_statements(cls.body):
            mp = by_id.get(id(stmt))
            if mp is None:
                methods.append(stmt)
                continue
            deps = [strip_comments(emit_stmt(fw, mp, model.body[model.agents[d]]).with_changes(leading_lines=[]))
                    for d in mp.deps]
            inner = emit_body(fw, mp, block_statements(stmt.body), drop_returns=False)
            methods.append(stmt.with_changes(body=stmt.body.with_changes(body=[*deps, *inner])))
        new = cls.with_changes(name=cst.Name(new_name), body=cls.body.with_changes(body=methods))
    else:
        func = model.body[model.functions[name]]
        hplan = plan_helper_offer(model, fw, name)
        if hplan.problems:
            return None
        deps = [strip_comments(emit_stmt(fw, hplan, model.body[model.agents[d]]).with_changes(leading_lines=[]))
                for d in hplan.deps]
        inner = emit_body(fw, hplan, block_statements(func.body), drop_returns=False)
        new = func.with_changes(name=cst.Name(new_name), body=func.body.with_changes(body=[*deps, *inner]),
                                decorators=tool_named(fw, func, name))
    return strip_comments(new.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))


def tool_named(fw: Framework, func: cst.FunctionDef, name: str) -> list:
    """The decorators of a tool's rollout copy: the tool keeps the name the model knows (``@tool(name="x")``,
    ``@function_tool(name_override="x")``), whatever the copy is called."""
    out = []
    for dec in func.decorators:
        target = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        resolved = fw.table.resolve(target) or code(target)
        if fw.table.matches(target, fw.tool_decorators) is None or resolved.endswith("guardrail"):
            out.append(dec)
            continue
        keyword = "name_override" if resolved.endswith("function_tool") else "name"
        call = dec.decorator if isinstance(dec.decorator, cst.Call) else cst.Call(func=dec.decorator)
        if kwarg(call, keyword) is None:
            call = with_kwarg(call, keyword, cst.SimpleString(f'"{name}"'))
        out.append(dec.with_changes(decorator=call))
    return out
