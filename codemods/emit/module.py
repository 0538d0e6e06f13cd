"""Writing a module as its :class:`~codemods.plan.module_plan.ModulePlan` says: module-level models that become the
placeholder, factories / helpers / classes converted in place or copied beside, the rollout versions other files
use, each driver as an ``AgentWorkflow`` (in place or beside it) with its callers and serving lines, TODO markers
for what was refused or left plain, then the module's imports.

The emitters share one :class:`ModuleEdit` (what replaces which top-level statement, what leaves); untouched
statements keep their identity, so their line numbers (and the input's name counts) still apply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import libcst as cst

from codemods.analysis.body import code
from codemods.analysis.code_facts import attributes_of
from codemods.analysis.module import (
    ModuleModel,
    assigned_name,
    assigned_value,
    is_main_guard,
    is_workflow_class,
    module_agent_deps,
)
from codemods.analysis.names import candidate_uses
from codemods.base import has_skip_marker, with_todo_comment, without_outdated_todos
from codemods.emit.body import emit_body, emit_stmt, strip_run_config
from codemods.emit.finish import fw_finish
from codemods.emit.markers import LeftoverMarker, TodoSlots, module_todos
from codemods.emit.offered import agent_factory, offered_copy, tool_named
from codemods.emit.serving import serving_guard
from codemods.framework import Framework
from codemods.osmosis_api import WORKFLOW_IMPORTS, prompt_text_expr
from codemods.plan.model import Plan
from codemods.plan.module_plan import ModulePlan, Placement
from codemods.syntax import (
    ascii_reason,
    assign_stmt,
    block_statements,
    is_docstring,
    is_import_stmt,
    keep_comments,
    replace_method,
    run_method,
    strip_comments,
    strip_trailing_bare_return,
    tidy_moved,
    with_blank_lines,
)
from codemods.visit import Transformer


@dataclass
class ModuleEdit:
    """The emitters' shared record of what happens to the module's top-level statements."""

    body: list[cst.BaseStatement]  # the input's top-level statements
    replacements: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)  # index → what stands there
    removed: set[int] = field(default_factory=set)  # statements that leave (moved into run(), or dropped)
    dropped: set[int] = field(default_factory=set)  # …of which deleted (their comments stay at module level)
    spaced: set[int] = field(default_factory=set)  # …of which a blank line above stays too (a block's separation)
    todos: TodoSlots = field(default_factory=TodoSlots)
    created: list[tuple[str, cst.CSTNode]] = field(default_factory=list)  # (workflow class, the input statement)
    same_code: dict[int, int] = field(default_factory=dict)  # id(new statement) → index of the same-code input one
    kept_deps: set[str] = field(default_factory=set)  # module agents kept on purpose (plain users, helpers' copies)


def emit_module(module: cst.Module, fw: Framework, mp: ModulePlan) -> cst.Module:
    """``module`` written as ``mp`` says (the rule's edits and TODOs recorded on ``fw.ctx``)."""
    edit = ModuleEdit(body=list(module.body), kept_deps=set(mp.dep_of))
    _emit_module_vars(fw, mp, edit)
    _emit_orphans(fw, mp, edit)
    _emit_module_configs(fw, mp, edit)
    for placement in mp.placements:
        if placement.kind == "class":
            _emit_class(fw, mp, edit, placement)
        else:
            _emit_function(fw, mp, edit, placement)
    _emit_offered(fw, mp, edit)
    for p in mp.plans:
        if p.problems:
            _refuse(fw, mp, edit, p)
        elif p.driver.kind == "workflow":
            _emit_workflow_in_place(fw, edit, p)
        else:
            _emit_driver(fw, mp, edit, p)
    _emit_answers(fw, mp, edit)
    _mark_shared_state(fw, mp, edit)
    _mark_leftovers(fw, mp, edit)
    return _assemble(module, fw, mp, edit)


class _Answer(Transformer):
    def __init__(self, fw: Framework, answers: dict[int, cst.BaseExpression]) -> None:
        self.fw, self.answers = fw, answers

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.answers:
            self.fw.note_replaced(original.func)
            return self.answers[id(original)]
        return updated


def _emit_answers(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """Module functions only migrated drivers call, whose confirmations now give their declared defaults."""
    for p in mp.plans:
        if p.problems:
            continue
        for name, answers in p.helper_answers.items():
            i = mp.model.functions[name]
            if i in edit.replacements or i in edit.removed:
                continue
            func = edit.body[i]
            edit.replacements[i] = [func.visit(_Answer(fw, {id(call): value for call, value in answers}))]
            given = ", ".join(f"`{code(call.func)}()` → its declared default `{code(value)}`" for call, value in answers)
            fw.ctx.edit(fw.codes.wrap.code, func, f"`{name}()`: {given} (a rollout has no one to ask; only "
                        "workflows call it)")


class _StripConfig(Transformer):
    """The module-level ``RunConfig(...)`` call ``target`` without its model arguments (:func:`strip_run_config`)."""

    def __init__(self, fw: Framework, target: cst.Call, where: cst.CSTNode) -> None:
        self.fw, self.target, self.where = fw, target, where

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return strip_run_config(self.fw, original, updated, self.where) if original is self.target else updated


def _emit_module_configs(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """Module-level run configs only migrated drivers use lose what would override the placeholder model."""
    for p in mp.ok:
        for name, call in p.module_configs.items():
            j = mp.model.definition(name)
            if j is None or j in edit.removed or j in edit.replacements:
                continue
            stmt = edit.body[j]
            edit.replacements[j] = [stmt.visit(_StripConfig(fw, call, stmt))]


def _mark_shared_state(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """A TODO above each module-level container the workflows' tools change (``mp.shared_state``)."""
    for j, (name, tools) in mp.shared_state.items():
        if j in edit.removed:
            continue  # built per rollout now
        by = ", ".join(f"`{t}`" for t in tools)
        edit.todos.add(j, fw.codes.shared_state.code, (
            f"`{name}` is changed by the tool{'s' if len(tools) > 1 else ''} {by} the workflow's agent calls: served, "
            "every rollout of the process shares it - concurrent rollouts interleave and each starts where the last "
            "one left off; if each rollout should start from this value, build it in run() and hand it to the tools"))


def _emit_orphans(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """Module-level values only the replaced models read (``mp.orphans``) are deleted; their comments stay."""
    for j, name in mp.orphans:
        edit.removed.add(j)
        edit.dropped.add(j)
        edit.spaced.add(j)
        fw.replaced.update(mp.counts[j])  # what only it imported may go too
        what = name if name.startswith("the check of ") else f"module-level `{name}`"
        fw.ctx.edit(fw.codes.model.code, edit.body[j], f"{what} removed: only the model the rollout's placeholder "
                    "replaces read it (kept, it would still run at import)")


def _emit_module_vars(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    for mv in mp.module_vars:
        stmt = edit.body[mv.index]
        value = assigned_value(stmt)
        small = stmt.body[0]
        placeholder = mv.ctors[0].fallback
        edit.replacements[mv.index] = [keep_comments(stmt, stmt.with_changes(body=[small.with_changes(value=placeholder)]))]
        fw.note_replaced(value.func)
        fw.ctx.edit(fw.codes.model.code, stmt, f"module-level model `{mv.var}` → {code(placeholder, 60)} "
                    "(only migrated agents use it)")


def _deps_block(fw: Framework, mp: ModulePlan, edit: ModuleEdit, plan: Plan, move: set[str],
                where: str) -> list[cst.BaseStatement]:
    """The module-level agents ``plan`` builds, converted: those in ``move`` leave the module level (with their
    comments) and are built here; the others are comment-free copies (the originals stay for their users)."""
    out: list[cst.BaseStatement] = []
    for dep in plan.deps:
        j = mp.model.agents[dep]
        stmt = emit_stmt(fw, plan, edit.body[j])
        if dep in move and j not in edit.removed:  # the first method that builds it takes its comments
            out.extend(tidy_moved([stmt]))
            edit.removed.add(j)
            fw.ctx.edit(fw.codes.wrap.code, edit.body[j], f"module-level agent `{dep}` now built {where}")
        else:
            copy = strip_comments(stmt.with_changes(leading_lines=[]))
            note = plan.notes_at.get(id(edit.body[j]))
            if note is not None:  # why this copy stays plain (not the sample) belongs to the copy too
                copy = with_todo_comment(copy, note[0], ascii_reason(note[1]))
            out.append(copy)
    return out


def _state_block(fw: Framework, mp: ModulePlan, edit: ModuleEdit, plan: Plan) -> list[cst.BaseStatement]:
    """The module-level state objects ``plan`` builds per rollout (``plan.state``): moved into run() with their
    comments when the driver is converted in place (nothing else uses them), else comment-free copies."""
    out: list[cst.BaseStatement] = []
    for name in plan.state:
        j = mp.model.definition(name)
        if j is None:
            continue
        if plan.mode == "inplace" and j not in edit.removed:
            out.extend(tidy_moved([edit.body[j]]))
            edit.removed.add(j)
            fw.ctx.edit(fw.codes.wrap.code, edit.body[j], f"module-level `{name}` now built per rollout in "
                        f"{plan.cls_name}.run() (every rollout would share it)")
        else:
            out.append(strip_comments(edit.body[j].with_changes(leading_lines=[])))
    return out


def _with_deps(inner: list[cst.BaseStatement], deps: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``deps`` placed at the top of a converted body, after its docstring."""
    docstring = inner[:1] if inner and is_docstring(inner[0]) else []
    return [*docstring, *deps, *inner[len(docstring):]]


def _emit_function(fw: Framework, mp: ModulePlan, edit: ModuleEdit, pl: Placement) -> None:
    """A factory or helper, converted in place or as a rollout copy beside it (a tool copy keeps the tool's name)."""
    model, plan = mp.model, pl.plan
    func = edit.body[pl.index]
    assert isinstance(func, cst.FunctionDef)
    deps: list[cst.BaseStatement] = []
    if pl.kind == "helper":  # module-level agents only it uses move in
        move = {dep for dep in plan.deps if pl.in_place and not model.external.get(dep)
                and set(model.users(dep, skip=[model.agents[dep]])) <= {pl.index} | mp.moved_idx}
        deps = _deps_block(fw, mp, edit, plan, move, f"where `{pl.name}` runs it")
    inner = _with_deps(emit_body(fw, plan, block_statements(func.body), drop_returns=False), deps)
    block = func.body.with_changes(body=inner, footer=[*plan.tail, *func.body.footer])
    verb = "builds" if pl.kind == "factory" else "runs"
    what = fw.osmosis_agent[1]
    if pl.in_place:
        edit.replacements[pl.index] = [func.with_changes(body=block)]
        fw.ctx.edit(fw.codes.wrap.code, func, f"{'factory ' if pl.kind == 'factory' else ''}`{pl.name}` now {verb} "
                    f"{what} (only migrated code uses it)")
        return
    decorators = [] if pl.kind == "factory" else tool_named(fw, func, pl.name)
    copy = strip_comments(func.with_changes(name=cst.Name(pl.new_name), body=block, decorators=decorators,
                                            leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    edit.replacements[pl.index] = [func, copy]
    fw.ctx.edit(fw.codes.wrap.code, func, f"`{pl.name}` kept for its other users; `{pl.new_name}` {verb} {what} "
                "for the workflows")


def _emit_class(fw: Framework, mp: ModulePlan, edit: ModuleEdit, pl: Placement) -> None:
    """A class whose methods run agents: its methods converted, in place or in a rollout copy beside it."""
    model = mp.model
    mplans = {id(m.driver.func): m for m in pl.method_plans}
    cls = edit.body[pl.index]
    assert isinstance(cls, cst.ClassDef)
    only_here = {d for m in mplans.values() for d in m.deps
                 if pl.in_place and not model.external.get(d) and set(model.users(d, skip=[model.agents[d]])) <= {pl.index}}
    new_methods = []
    for stmt in block_statements(cls.body):
        m = mplans.get(id(stmt))
        if m is None:
            new_methods.append(stmt)
            continue
        deps = _deps_block(fw, mp, edit, m, only_here, f"where `{pl.name}` runs it")
        inner = _with_deps(emit_body(fw, m, block_statements(stmt.body), drop_returns=False), deps)
        new_methods.append(stmt.with_changes(body=stmt.body.with_changes(body=inner, footer=[*m.tail, *stmt.body.footer])))
    new_cls = cls.with_changes(body=cls.body.with_changes(body=new_methods))
    what = fw.osmosis_agent[1]
    if pl.in_place:
        edit.replacements[pl.index] = [new_cls]
        fw.ctx.edit(fw.codes.wrap.code, cls, f"class `{pl.name}` now builds and runs {what} (only workflows use it)")
    else:
        copy = strip_comments(new_cls.with_changes(name=cst.Name(pl.new_name),
                                                   leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
        edit.replacements[pl.index] = [cls, copy]
        fw.ctx.edit(fw.codes.wrap.code, cls, f"class `{pl.name}` kept for its other users; `{pl.new_name}` runs "
                    f"{what} for the workflows")
    for m in mplans.values():
        edit.kept_deps.update(m.deps)


def _emit_offered(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """What other files of the run use from this one: their rollout versions, beside the originals."""
    model, what = mp.model, fw.osmosis_agent[1]
    placed = {pl.name for pl in mp.placements if pl.kind in ("class", "helper")}
    for name, verdict in mp.offered.items():
        if verdict.rollout in model.bindings:
            continue  # written by a previous run
        if verdict.kind == "agent" and name in model.agents:
            idx = model.agents[name]
            factory = agent_factory(model, fw, name, verdict.rollout)
            if factory is not None:
                edit.replacements[idx] = [*edit.replacements.get(idx, [edit.body[idx]]), factory]
                fw.ctx.edit(fw.codes.wrap.code, edit.body[idx], f"`{verdict.rollout}()` builds `{name}` as {what} for "
                            "the workflows of other modules (the plain agent stays for its other users)")
        elif verdict.kind in ("class", "helper") and name not in placed:
            copy = offered_copy(model, fw, name, verdict.rollout, verdict.kind)
            if copy is not None:
                idx = model.classes.get(name, model.functions.get(name))
                edit.replacements[idx] = [*edit.replacements.get(idx, [edit.body[idx]]), copy]
                fw.ctx.edit(fw.codes.wrap.code, edit.body[idx], f"`{verdict.rollout}` runs {what} for the workflows "
                            f"of other modules (`{name}` stays for its other users)")


def _refuse(fw: Framework, mp: ModulePlan, edit: ModuleEdit, p: Plan) -> None:
    """A driver that is not migrated: a TODO at its first statement (a script's: its first run) with the reasons."""
    d = p.driver
    what = {"function": f"`{d.name}`", "script": "the module-level code that runs the agent",
            "main": "the `__main__` block", "workflow": f"`{d.name}.run()`"}[d.kind]
    where = d.indices[0]
    if d.kind == "script":
        where = next((j for j in d.indices if fw.has_run_site(edit.body[j], set(mp.model.agents))), where)
    edit.todos.add(where, fw.codes.not_migrated.code, f"{what} is not migrated: " + "; ".join(p.problems))


def _emit_workflow_in_place(fw: Framework, edit: ModuleEdit, p: Plan) -> None:
    """``run()`` of an existing AgentWorkflow subclass that still builds plain agents, migrated where it is."""
    if not any(rp.changes for rp in p.runs.values()) and not any(cp.model is not None or cp.messages_prompt
                                                                  for cp in p.ctors.values()) \
            and not p.model_assigns and not p.sessions and not p.notes_at:
        return  # nothing plain left in it
    first = p.driver.indices[0]
    cls = edit.body[first]
    run = run_method(cls)
    new_body = emit_body(fw, p, list(block_statements(run.body)), drop_returns=False)
    new_run = run.with_changes(body=run.body.with_changes(body=new_body, footer=[*p.tail, *run.body.footer]))
    if new_run.deep_equals(run):
        return  # migrated already (its TODO markers are there)
    edit.replacements[first] = [replace_method(cls, run, new_run)]
    fw.ctx.edit(fw.codes.wrap.code, cls, f"`{p.driver.name}.run()` migrated in place")


def _run_body(fw: Framework, mp: ModulePlan, edit: ModuleEdit, p: Plan) -> list[cst.BaseStatement]:
    """The statements of a driver's ``run()``: parameter defaults, the prompt's text bound, the module-level agents
    it builds per rollout, then its own statements converted."""
    d = p.driver
    move = {n for n in p.deps if n in mp.moved and mp.owner[n] is p and p.mode == "inplace"}
    deps = _deps_block(fw, mp, edit, p, move, f"per rollout in {p.cls_name}.run()")
    state = _state_block(fw, mp, edit, p)
    prefix = [assign_stmt(var, default) for var, default in p.defaults]
    if p.bind:
        prefix.append(assign_stmt(p.bind, prompt_text_expr()))
    inner = emit_body(fw, p, d.stmts, drop_returns=True)
    if d.kind == "script":
        inner = tidy_moved(inner)
    docstring = inner[:1] if inner and is_docstring(inner[0]) else []
    return strip_trailing_bare_return([*docstring, *prefix, *state, *deps, *inner[len(docstring):]])


def _emit_driver(fw: Framework, mp: ModulePlan, edit: ModuleEdit, p: Plan) -> None:
    """A driver as ``class <Name>Workflow(AgentWorkflow)``: in place of a function, beside a function other code
    calls, in place of the module-level script, or before the ``__main__`` block that ran the agent (which then
    serves it); then its callers."""
    d, cls_name, wrap = p.driver, p.cls_name, fw.codes.wrap.code
    first = d.indices[0]
    body = edit.body
    inner = _run_body(fw, mp, edit, p)
    own_footer = d.func.body.footer if d.func is not None and isinstance(d.func.body, cst.IndentedBlock) else []
    footer = [*p.tail, *own_footer]
    blank2 = [cst.EmptyLine(), cst.EmptyLine()]
    if p.mode == "beside":
        cls = workflow_class(cls_name, [strip_comments(s) for s in inner], [], blank2)
        edit.replacements[first] = [*edit.replacements.get(first, [body[first]]), cls]  # after a rollout copy
        what = d.name if d.lifted is None else d.lifted.call
        if d.lifted is not None and fw.direct_run_import is not None and d.lifted.kind != "class":
            fw.need(*fw.direct_run_import)  # the workflow's run (Runner.run) names it
        fw.ctx.edit(wrap, body[first], f"`{what}` wrapped as {cls_name}(AgentWorkflow).run() beside it "
                    f"({'; '.join(p.notes)})")
    elif d.kind == "function":
        edit.replacements[first] = [workflow_class(cls_name, inner, footer, body[first].leading_lines)]
        fw.ctx.edit(wrap, body[first], f"`{d.name}` wrapped as {cls_name}(AgentWorkflow).run()")
    elif d.kind == "script":
        edit.replacements[first] = [workflow_class(cls_name, inner, [], blank2)]
        edit.removed.update(d.indices[1:])
        fw.ctx.edit(wrap, body[first], f"the module-level code that runs the agent wrapped as {cls_name}(AgentWorkflow).run()")
    else:  # the __main__ block runs the agent itself
        cls = workflow_class(cls_name, tidy_moved(inner), [], blank2)
        edit.replacements[first] = [cls, serving_guard(fw, body[first], cls_name, None, mp.model)]
        fw.ctx.edit(wrap, body[first], f"the `__main__` block wrapped as {cls_name}(AgentWorkflow).run()")
    edit.created.append((cls_name, body[first]))
    fw.needed[:0] = [x for x in WORKFLOW_IMPORTS if x not in fw.needed]
    if p.prompt_text:
        fw.prompt_text_needed = True
    _emit_callers(fw, mp, edit, p)


def _emit_callers(fw: Framework, mp: ModulePlan, edit: ModuleEdit, p: Plan) -> None:
    """The callers of a driver converted in place: the ``__main__`` block serves the workflow; module-level calls
    go (they would run at import)."""
    model, cls_name, name = mp.model, p.cls_name, p.driver.name
    for j in p.callers:
        stmt = edit.replacements.get(j, [edit.body[j]])[-1] if j in edit.replacements else edit.body[j]
        if is_main_guard(edit.body[j]):
            edit.replacements[j] = [serving_guard(fw, stmt, cls_name, name, model)]
            fw.ctx.edit(fw.codes.serve.code, edit.body[j], f"the `__main__` block now serves {cls_name} (`python` on "
                        "this file starts the rollout server, as `osmosis rollout init` scaffolds do)")
            continue
        edit.removed.add(j)
        edit.dropped.add(j)
        edit.replacements.pop(j, None)
        fw.replaced.update(mp.counts[j])
        fw.ctx.edit(fw.codes.serve.code, edit.body[j], f"module-level call of `{name}` removed (it would run at "
                    f"import); the `__main__` block serves {cls_name}")
        if model.main_guard is None and not any(is_main_guard(s) for r in edit.replacements.values() for s in r):
            fw.append_guard = serving_guard(fw, None, cls_name, name, model)


def _mark_leftovers(fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> None:
    """Whatever plain agent is still built outside what was migrated gets a TODO saying why it stays."""
    model, ok, counts, heads = mp.model, mp.ok, mp.counts, fw.ctor_heads()
    migrated_idx = {j for p in ok for j in p.driver.indices} | edit.removed
    beside_idx = {p.driver.indices[0] for p in ok if p.mode == "beside"} | {d.indices[0] for d in mp.done_beside}
    kept = edit.kept_deps
    for d in mp.done_beside:  # its module-level agents stay for it, as when the workflow was added
        kept |= module_agent_deps(model, set(counts[d.indices[0]]))
    for p in ok:  # a library module's agents stay for its importers; the lifted workflow builds copies
        if p.driver.lifted is not None:
            kept |= set(p.deps)
    for ci in model.classes.values():  # a workflow (an earlier run's) builds its own copy of a module agent
        if is_workflow_class(model.body[ci], model.table):
            kept |= {n for n in model.agents if n in counts[ci] and ci not in model.users(n)}
    for name, i in model.functions.items():  # kept for plain callers beside its rollout version
        if f"{name}_for_rollout" in model.functions:
            beside_idx.add(i)
            kept |= module_agent_deps(model, set(counts[i]))  # its module-level agents stay for it
    for name, i in model.classes.items():
        if f"{name}ForRollout" in model.classes:
            beside_idx.add(i)
    renamed = {n for p in ok for n in p.renames}
    for pl in mp.placements:  # a helper kept for other users beside its rollout version: its agents stay on purpose
        if pl.kind == "helper" and pl.name in renamed:
            beside_idx.add(pl.index)
            kept |= set(pl.plan.deps)
    for i, stmt in enumerate(edit.body):
        if i in migrated_idx and i not in beside_idx:
            continue
        if i in beside_idx or i in edit.replacements or not (heads & counts[i].keys()) or has_skip_marker(stmt):
            continue
        name = assigned_name(stmt)
        if name in kept and name not in mp.moved:
            continue  # kept on purpose for its other users; the workflows build their own copies
        if name and _only_direct_tool_calls(model, name):
            continue  # `agent.tool.x(...)` runs the tool, never the model: nothing there to train
        if name in mp.offered or (isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value in mp.offered):
            continue  # other files' workflows use its rollout version, written beside it
        marker = LeftoverMarker(fw, model, mp.plans, name)
        marker.refused = mp.refused
        marked = stmt.visit(marker)
        if marker.marked:
            edit.replacements[i] = [marked]
            edit.same_code[id(marked)] = i  # only comments were added: the statement uses the names it used


def _only_direct_tool_calls(model: ModuleModel, var: str) -> bool:
    """Every top-level use of the agent ``var`` is a direct tool call ``var.tool.<name>(...)`` (some use exists)."""
    users = model.users(var, skip=[model.agents.get(var, -1)])
    return bool(users) and all(
        attributes_of(model.body[j], var).count("tool") == model.counts[j].get(var, 0) for j in users)


def _assemble(module: cst.Module, fw: Framework, mp: ModulePlan, edit: ModuleEdit) -> cst.Module:
    """The new top level: replacements in place, removed statements gone (a deleted line's comments stay at
    module level), TODO markers, the serving block when one had to be added; then module notes and imports."""
    new_body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    blank = False  # a deleted statement separated its block with a blank line: the next one keeps it
    for i, stmt in enumerate(edit.body):
        if i in edit.removed:
            if i in edit.dropped:  # a deleted line's comments stay at module level (a moved statement took its own)
                carried.extend(line for line in stmt.leading_lines if line.comment is not None)
                blank = blank or (i in edit.spaced and bool(stmt.leading_lines)
                                  and stmt.leading_lines[0].comment is None)
            if i not in edit.replacements:
                continue
        out = list(edit.replacements.get(i, [stmt]))
        if i in edit.removed and i in edit.replacements and not out:
            continue
        # the first statement keeps the input's code when it is the input statement or its comment-marked self
        comment_only = bool(out) and (out[0] is stmt or edit.same_code.get(id(out[0])) == i)
        todos = edit.todos.at.get(i, ())
        for code_i in dict.fromkeys(c for c, _ in todos):  # what an earlier run said with these codes, replaced
            out[0] = without_outdated_todos(out[0], code_i, [r for c, r in todos if c == code_i])
        if carried and out:
            out[0] = out[0].with_changes(leading_lines=[*out[0].leading_lines, *carried])
            carried = []
        if blank and out:
            lead = out[0].leading_lines
            if not (lead and lead[0].comment is None):
                out[0] = out[0].with_changes(leading_lines=[cst.EmptyLine(), *lead])
            blank = False
        for code_i, reason in todos:
            out[0] = with_todo_comment(out[0], code_i, reason)
            fw.ctx.todo(code_i, stmt, reason)
        if comment_only:
            edit.same_code[id(out[0])] = i
        new_body.extend(out)
    if fw.append_guard is not None:
        guard = fw.append_guard
        if carried:
            guard = guard.with_changes(leading_lines=[*guard.leading_lines, *carried])
            carried = []
        new_body.append(with_blank_lines(guard))
    if carried:
        module = module.with_changes(footer=[*carried, *module.footer])
    if not edit.replacements and not edit.removed and not edit.todos.at:
        return module
    # names each top-level statement uses: the input's counts where the statement is unchanged, counted afresh
    # where it is new (the import clean-up needs them; a full-module visit would cost more than the rule)
    original_ids = {id(st): i for i, st in enumerate(edit.body)}
    original_ids.update(edit.same_code)
    _settle_imports(fw, mp, edit, [st for st in new_body if id(st) not in original_ids])
    candidates = sorted(fw.replaced)
    fw.body_counts = [mp.counts[original_ids[id(st)]] if id(st) in original_ids
                      else candidate_uses(st, candidates, module) for st in new_body]
    module = module.with_changes(body=new_body)
    module = module_todos(module, fw, edit.created)
    return fw_finish(module, fw)


def _settle_imports(fw: Framework, mp: ModulePlan, edit: ModuleEdit, written: list[cst.BaseStatement]) -> None:
    """Imports follow the code written, not the plans: a name is imported only when a written statement uses it
    (a refused driver's planned placeholder must not leave an import behind — it would break the unmigrated
    program wherever osmosis-ai is not installed), and an import is removed only when the input's code used it
    (an import the program already did not use is not ours to remove)."""
    used_now: set[str] = set()
    for stmt in written:
        used_now |= fw.ctx.statement_names(stmt)
    fw.needed[:] = [(mod, name) for mod, name in fw.needed if name in used_now]
    used_before: set[str] = set()
    for stmt, counts in zip(edit.body, mp.counts):
        if not is_import_stmt(stmt):
            used_before.update(counts)
    fw.replaced &= used_before


def workflow_class(cls_name: str, inner: list[cst.BaseStatement], footer: Sequence[cst.EmptyLine],
                   leading: Sequence[cst.EmptyLine]) -> cst.ClassDef:
    """``class <cls_name>(AgentWorkflow)`` whose ``async def run(self, ctx: AgentWorkflowContext) -> None`` holds
    ``inner`` (its docstring, if any, becomes the class docstring)."""
    if inner:  # no blank line at the top of run() (dropped statements may have left theirs)
        first = inner[0]
        lines = list(first.leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        inner = [first.with_changes(leading_lines=lines), *inner[1:]]
    docstring: list[cst.BaseStatement] = []
    if inner and is_docstring(inner[0]):
        docstring, inner = [inner[0]], inner[1:]
    if not inner:
        inner = [cst.SimpleStatementLine([cst.Pass()])]
    run = cst.FunctionDef(
        name=cst.Name("run"),
        params=cst.Parameters(params=[
            cst.Param(cst.Name("self")),
            cst.Param(cst.Name("ctx"), annotation=cst.Annotation(cst.Name("AgentWorkflowContext"))),
        ]),
        returns=cst.Annotation(cst.Name("None")),
        asynchronous=cst.Asynchronous(),
        body=cst.IndentedBlock(body=inner, footer=list(footer)),
    )
    return cst.ClassDef(
        name=cst.Name(cls_name),
        bases=[cst.Arg(cst.Name("AgentWorkflow"))],
        body=cst.IndentedBlock(body=[*docstring, run]),
        leading_lines=list(leading),
    )

