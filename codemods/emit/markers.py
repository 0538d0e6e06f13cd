"""TODO markers the plain rules leave: on a plain agent that stays (why), and module-level notes (several
workflows in one module, no grader yet)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.body import code
from codemods.analysis.module import assigned_name, is_grader_class, is_main_guard, is_workflow_class
from codemods.base import has_skip_marker, with_todo_comment, without_outdated_todos
from codemods.framework import Framework
from codemods.osmosis_api import ROLLOUT_MODEL
from codemods.plan.model import Plan
from codemods.syntax import ascii_reason, kwarg
from codemods.visit import Transformer

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel


class TodoSlots:
    def __init__(self) -> None:
        self.at: dict[int, list[tuple[str, str]]] = {}

    def add(self, index: int, code_: str, reason: str) -> None:
        reason = ascii_reason(reason)
        items = self.at.setdefault(index, [])
        if (code_, reason) not in items:
            items.append((code_, reason))


class LeftoverMarker(Transformer):
    """TODO above each statement that still builds a plain agent, saying why it was left."""

    def __init__(self, fw: Framework, model: "ModuleModel", plans: list[Plan], var: Optional[str]) -> None:
        self.fw = fw
        self.model = model
        self.plans = plans
        self.var = var
        self.stack: list[bool] = []
        self.refused: dict[str, str] = {}
        self.scopes: list[str] = []
        self.decorated_tool: list[bool] = []
        self.marked = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if has_skip_marker(node):
            return False
        self.scopes.append(node.name.value)
        self.decorated_tool.append(self.fw.is_tool_decorator(node))
        return True

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        self.decorated_tool.pop()
        return updated

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if has_skip_marker(node):
            return False
        self.scopes.append(node.name.value)
        self.decorated_tool.append(False)
        return True

    def leave_ClassDef(self, original, updated):
        self.scopes.pop()
        self.decorated_tool.pop()
        return updated

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stack.append(False)

    def visit_Call(self, node: cst.Call) -> None:
        if self.stack and self.fw.is_agent_ctor(node) and not _on_rollout_model(node):
            self.stack[-1] = True

    def reason(self, original: cst.SimpleStatementLine) -> str:
        fw, model = self.fw, self.model
        label = f"this plain {fw.label} agent stays as it is"
        target = f"; to train it, build it inside an AgentWorkflow.run() as {fw.osmosis_agent[1]} with the rollout placeholder model"
        if not self.scopes:
            var = assigned_name(original)
            if var is None:
                held = _assign_target(original)
                where = f"it is kept in `{held}`, not a module-level name" if held else "it is not bound to a name"
                return f"{label}: {where}, so the migration cannot follow who runs it{target}"
            users = [model.body[j] for j in model.users(var, skip=[model.agents.get(var, -1)])] if var else []
            failed = [p.driver.name for p in self.plans if p.problems and var in p.deps]
            if failed:
                return f"{label}: it is used by {', '.join(f'`{n}`' for n in failed)}, which could not be migrated (see the TODO there){target}"
            ext = model.external.get(var or "", [])
            refused = self.refused.get(var or "")
            if ext and refused:
                return (f"{label}: `{var}` is used by other modules ({', '.join(ext)}), and no rollout version of "
                        f"it can be written: {refused}")
            if ext:
                return f"{label}: `{var}` is used by other modules ({', '.join(ext)}), which build or run it outside a rollout{target}"
            if not users:
                return f"{label}: `{var}` is not run anywhere in this module (nothing to wrap){target}"
            names = ", ".join(_scope_name(u) for u in users[:3])
            return f"{label}: `{var}` is also used by {names}, which is not a migrated workflow{target}"
        scope = ".".join(self.scopes)
        if self.decorated_tool and self.decorated_tool[0]:
            return f"{label}: {self.tool_reason(self.scopes[0])}"
        top = self.scopes[0]
        failed = [p for p in self.plans if p.problems and p.driver.name == top]
        if failed:
            return f"{label}: `{top}` could not be migrated (see the TODO there)"
        users = [p for p in self.plans
                 if p.problems and (top in p.class_plans or top in p.helper_plans or top in p.factory_plans)]
        if users:
            return (f"{label}: `{users[0].driver.name}`, which uses `{top}`, could not be migrated "
                    "(see the TODO there)")
        if top in model.classes:
            return (f"{label}: it is built in `{scope}` and kept on an object; objects built outside a rollout cannot "
                    f"register samples{target}")
        failed = [p for p in self.plans if p.problems and p.driver.name == top]
        if failed:
            return f"{label}: `{top}` could not be migrated (see the TODO there)"
        users = model.users(top, skip=[model.functions.get(top, -1)])
        if users:
            return (f"{label}: `{top}` builds it for callers that are not workflows "
                    f"({', '.join(_scope_name(model.body[j]) for j in users[:3])}){target}")
        return f"{label}: `{scope}` builds it but nothing in this module runs it{target}"

    def tool_reason(self, tool: str) -> str:
        """Why the agent a tool builds and runs for itself stays plain. osmosis-ai 0.3 takes one sample source per
        rollout and each OsmosisStrandsAgent is one, so (Strands, 0.3) the plan never converts it: it runs on its own
        model and is not part of the trained sample. Otherwise the plan converts it once every caller of the tool is
        a workflow. The text depends on nothing a migration changes (the workflow is not there yet on the first run,
        there on the next), so a re-run writes the same marker."""
        fw = self.fw
        osmosis = fw.osmosis_agent[1]
        head = (f"the tool `{tool}` builds and runs its own agent; it runs inside a rollout only when an agent calls "
                "it there")
        if not (fw.target.startswith("0.3") and fw.agent_is_sample_source):
            later = f"give it {osmosis} with the placeholder model once every caller of the tool is a workflow"
            if fw.target.startswith("0.3"):  # OpenAI Agents: the sample is the session's run, not an agent
                later += " (it then runs on the rollout's model without a session: not part of the sample)"
            elif fw.agent_is_sample_source:
                later += " (at 0.2 each call of the tool then records a sample of its own)"
            return f"{head} - {later}"
        return (f"{head}, and osmosis-ai 0.3 records one conversation per rollout, the one of the workflow's "
                f"{osmosis} (the rollout's sample), not this agent's: this one runs on its own model, and its "
                f"conversation is not part of the trained sample. To train it instead, make it the rollout's one "
                f"{osmosis} (model=OsmosisRolloutModel()) and the workflow's {osmosis} a plain Agent - only if the "
                f"tool runs at most once per rollout (a second {osmosis} in one rollout raises)")

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        flagged = self.stack.pop()
        if not flagged or has_skip_marker(original):
            return updated
        reason = ascii_reason(self.reason(original))
        code_ = self.fw.codes.agent_left.code
        self.fw.ctx.todo(code_, original, reason)
        # one reason per statement: a marker of this code with another text is an earlier run's, replaced
        new = with_todo_comment(without_outdated_todos(updated, code_, [reason]), code_, reason)
        if new is not updated:
            self.marked = True
        return new


def _on_rollout_model(ctor: cst.Call) -> bool:
    """The agent runs on the generated ``_rollout_model(...)``: an earlier run kept it plain on purpose (not the
    rollout's sample) and wrote its marker then."""
    model = kwarg(ctor, "model")
    return model is not None and isinstance(model.value, cst.Call) and isinstance(model.value.func, cst.Name) \
        and model.value.func.value == ROLLOUT_MODEL


def _scope_name(stmt: cst.CSTNode) -> str:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return f"`{stmt.name.value}`"
    if is_main_guard(stmt):
        return "the `__main__` block"
    return f"`{code(stmt, 40)}`"


def module_todos(module: cst.Module, fw: Framework, created: list[tuple[str, cst.CSTNode]]) -> cst.Module:
    """A module with several workflows, or a workflow and no grader, gets a TODO above its (first new) workflow."""
    table = fw.table
    workflows = [s for s in module.body if isinstance(s, cst.ClassDef) and is_workflow_class(s, table)]
    graders = [s for s in module.body if isinstance(s, cst.ClassDef) and is_grader_class(s, table)]
    if not created:
        return module  # the markers are written by the run that creates the workflows (re-runs find them there)
    names = [w.name.value for w in workflows]
    body = list(module.body)
    targets = [w for w in workflows if w.name.value in {c for c, _ in created}] or workflows
    if not targets:
        return module
    first = body.index(targets[0])
    reasons: list[tuple[str, str]] = []
    if len(workflows) > 1:
        reasons.append((fw.codes.several_workflows.code, f"this module now defines {len(workflows)} workflows "
                        f"({', '.join(f'`{n}`' for n in names)}): "
                        "discovery needs exactly one AgentWorkflow per entrypoint module — keep one here and move "
                        "the others to their own modules"))
    if created and not graders:
        if fw.target.startswith("0.3"):
            how = "`ctx.sample` (its `messages`) and `ctx.set_reward(value)`"
        else:
            how = "`ctx.samples` (each sample's `messages`) and `ctx.set_sample_reward(sample_id, value)`"
        reasons.append((fw.codes.no_grader.code, f"no Grader in this module: add `class …Grader(Grader)` whose `async def "
                        f"grade(self, ctx: GraderContext)` scores the rollout from `ctx.label` (the dataset's ground "
                        f"truth), `ctx.metadata` and {how}, and pass it to LocalBackend(grader=…)"))
    stmt = body[first]
    reasons = [(c, ascii_reason(r)) for c, r in reasons]
    origin = next((o for name, o in created if name == targets[0].name.value), None)
    for c, reason in reasons:
        stmt = with_todo_comment(stmt, c, reason)
        fw.ctx.todo(c, origin, reason)
    body[first] = stmt
    return module.with_changes(body=body)


def _assign_target(stmt: cst.SimpleStatementLine) -> str:
    """The code of the first assignment target of ``stmt`` (``st.session_state.agent``), or ""."""
    for small in stmt.body:
        if isinstance(small, cst.Assign) and small.targets:
            return code(small.targets[0].target)
        if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            return code(small.target)
    return ""
