"""Wrapping plain framework agents into an ``AgentWorkflow.run()`` — the engine the ``strands-agent`` and
``openai-agent`` rules share; each rule supplies a :class:`Framework` (how its agents are built and run).

What gets wrapped (everything else with a plain agent is left as it was, with a TODO marker):

* a **driver function** — a top-level ``def``/``async def`` that runs an agent (a *run site*: ``agent(...)`` /
  ``agent.invoke_async(...)`` for Strands, ``Runner.run(...)``/``Runner.run_sync(...)`` for OpenAI Agents) —
  becomes ``class <Name>Workflow(AgentWorkflow)`` whose ``async def run(self, ctx)`` holds the function's body:
  agents are built there (``ctx.prompt`` as their input), run sites are awaited, values of ``return`` are dropped
  (a workflow's result is its samples). Its parameters may only have been the prompt of the run sites.
* **module-level agents** (``X = Agent(...)``) a driver uses are moved into its ``run()`` (they must be built per
  rollout, inside the active RolloutContext) — only when nothing else in the module uses them;
* a ``run()`` of an existing ``AgentWorkflow`` subclass that still builds plain agents is migrated in place.

A driver used elsewhere in the module (other than by an ``if __name__ == "__main__":`` block, which gets a TODO),
agents built in methods of other classes, agents built in factories, streamed runs: TODO markers.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Optional, Sequence

import libcst as cst

from codemods.base import (
    ImportTable,
    RuleContext,
    add_imports,
    has_skip_marker,
    remove_unused_imports,
    used_names,
    with_todo_comment,
)

WORKFLOW_IMPORTS = [("osmosis_ai.rollout", "AgentWorkflow"), ("osmosis_ai.rollout", "AgentWorkflowContext")]
WORKFLOW_BASES = ("osmosis_ai.rollout.AgentWorkflow", "osmosis_ai.rollout.agent_workflow.AgentWorkflow")


class _NameRefs(cst.CSTVisitor):
    """Names used as references (not keyword-argument names, not attribute names after a dot)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def visit_Name(self, n: cst.Name) -> None:
        self.counts[n.value] = self.counts.get(n.value, 0) + 1

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        n.value.visit(self)
        return False

    def visit_Arg(self, n: cst.Arg) -> bool:
        n.value.visit(self)
        return False

    def visit_SimpleString(self, n: cst.SimpleString) -> None:
        # names in string annotations / __all__ count as uses (conservative: an import is never wrongly dropped)
        val = n.value.strip("\"'rbuRBU")
        if val.isidentifier():
            self.counts[val] = self.counts.get(val, 0) + 1


def name_counts(node: cst.CSTNode) -> dict[str, int]:
    v = _NameRefs()
    node.visit(v)
    return v.counts


def names_in(node: cst.CSTNode) -> set[str]:
    """All names referenced under ``node``."""
    return set(name_counts(node))


def assigned_name(stmt: cst.CSTNode) -> Optional[str]:
    """``X`` for a statement line ``X = <call>`` (single Name target), else None."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return small.targets[0].target.value
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
            return small.target.value
    return None


def assigned_value(stmt: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            return small.value
    return None


def is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If):
        return False
    test = stmt.test
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
    )


def camel(name: str) -> str:
    parts = [p for p in re.split(r"_+", name) if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Agent"


def kwarg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with keyword ``name=value`` (replaced if present, else appended, keeping the call's layout)."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(keyword=cst.Name(name), value=value, equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            # multi-line call with a trailing comma: the new argument takes the closing layout, the old last one
            # the layout between arguments
            between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else last.comma
            args[-1] = last.with_changes(comma=between)
            args.append(new.with_changes(comma=last.comma))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(new)
    else:
        args.append(new)
    return call.with_changes(args=args)


def without_kwarg(call: cst.Call, name: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == name)]
    if len(args) == len(call.args):
        return call
    if args and not any(isinstance(a.comma, cst.Comma) and a.comma.whitespace_after.__class__ is cst.ParenthesizedWhitespace for a in args[:-1]):
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


CTX_PROMPT = cst.Attribute(value=cst.Name("ctx"), attr=cst.Name("prompt"))


@dataclass
class BodyResult:
    """What converting one function body found."""

    body: Optional[cst.BaseSuite] = None
    run_sites: int = 0
    problems: list[str] = field(default_factory=list)
    dropped_args: list[cst.CSTNode] = field(default_factory=list)
    agents_built: int = 0


class Framework(ABC):
    """What a rule tells the engine about its framework."""

    code: str  # the rule's base code, e.g. "OM100"
    agent_ctors: tuple[str, ...]  # qualified names of the plain agent class
    osmosis_agent: tuple[str, str]  # (module, name) of the replacement class
    label: str  # "Strands" / "OpenAI Agents"

    def __init__(self, table: ImportTable, ctx: RuleContext) -> None:
        self.table = table
        self.ctx = ctx
        self.needed: list[tuple[str, str]] = []
        self.created_workflows: set[str] = set()
        self.replaced_locals: set[str] = set()
        self.replaced_count: dict[str, int] = {}

    def ctor_heads(self) -> set[str]:
        """Local names through which this framework's agent class can be reached (``Agent``, ``s`` of ``s.Agent``,
        any name when a star import could bind it): a statement that mentions none of them builds no agent."""
        heads: set[str] = set()
        for q in self.agent_ctors:
            heads.update(self.table.local_names_for(q))
            mod, _, name = q.rpartition(".")
            if mod in self.table.stars:
                heads.add(name)
        for local, mod in self.table.modules.items():
            if any(q.startswith(mod + ".") for q in self.agent_ctors):
                heads.add(local)
        return heads

    where: Optional[cst.CSTNode] = None  # the statement being converted: where edits on expressions are reported

    def is_agent_ctor(self, call: cst.Call) -> bool:
        return self.table.matches(call.func, self.agent_ctors) is not None

    def note_replaced(self, func: cst.BaseExpression) -> None:
        """Remember that one reference to a local name went (a replaced call's function), so its import can go
        when no reference is left: uses = references counted in the input − references replaced."""
        head = func
        while isinstance(head, cst.Attribute):
            head = head.value
        if isinstance(head, cst.Name):
            self.replaced_locals.add(head.value)
            self.replaced_count[head.value] = self.replaced_count.get(head.value, 0) + 1

    def snapshot(self) -> tuple:
        """State to roll back to when a conversion is abandoned (its edits/imports must not be reported)."""
        return (len(self.ctx.edits), len(self.ctx.todos), len(self.needed), frozenset(self.replaced_locals),
                dict(self.replaced_count))

    def restore(self, snap: tuple) -> None:
        del self.ctx.edits[snap[0]:]
        del self.ctx.todos[snap[1]:]
        del self.needed[snap[2]:]
        self.replaced_locals = set(snap[3])
        self.replaced_count = dict(snap[4])

    def begin_body(self) -> None:
        """Called before converting each function body (per-run state such as session names)."""
        self.stmt_todos = []

    stmt_todos: list[str]

    def convert_call(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """Other calls a converted body needs changed (e.g. a model constructor); None = unchanged."""
        return None

    def swap_ctor(self, call: cst.Call, in_run: bool, original: Optional[cst.Call] = None) -> cst.Call:
        """``Agent(...)`` → the Osmosis class with the placeholder model (and the prompt when built in run())."""
        self.note_replaced(call.func)
        self.needed.append(self.osmosis_agent)
        new = call.with_changes(func=cst.Name(self.osmosis_agent[1]))
        new = self.fix_model(new)
        if in_run:
            new = self.add_prompt(new)
        self.ctx.edit(self.code[:3] + "02", self.where or original or call, f"{self.label} Agent → {self.osmosis_agent[1]}")
        return new

    @abstractmethod
    def fix_model(self, call: cst.Call) -> cst.Call:
        """Put the rollout placeholder model on a swapped agent call."""

    def add_prompt(self, call: cst.Call) -> cst.Call:
        return call

    @abstractmethod
    def run_site_agent(self, call: cst.Call, agents: set[str]) -> Optional[cst.BaseExpression]:
        """The agent expression a call runs, if ``call`` is a run site not yet migrated, else None.
        ``agents``: names bound to plain agents in the body being converted."""

    @abstractmethod
    def rewrite_run_site(self, call: cst.Call, agent_var: str) -> tuple[cst.BaseExpression, list[cst.BaseStatement], Optional[str]]:
        """(awaited replacement of a run site, statements to insert before its statement, problem or None)."""


class BodyConverter(cst.CSTTransformer):
    """Migrates a function body so it can be the body of ``AgentWorkflow.run(self, ctx)``."""

    def __init__(self, fw: Framework, local_agents: set[str], drop_returns: bool) -> None:
        self.fw = fw
        self.agents = set(local_agents)
        self.drop_returns = drop_returns
        self.result = BodyResult()
        self.pending: list[list[cst.BaseStatement]] = []
        self.where_stack: list[Optional[cst.CSTNode]] = []
        self._impure_values: list[cst.BaseExpression] = []
        fw.begin_body()

    # nested defs/classes/lambdas have their own scope: leave them alone
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.where_stack.append(self.fw.where)
            self.fw.where = node
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.fw.where = self.where_stack.pop()
        return result

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.pending.append([])
        name = assigned_name(node)
        value = assigned_value(node)
        if name and isinstance(value, cst.Call) and self.fw.is_agent_ctor(value):
            self.agents.add(name)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        before = self.pending.pop()
        for reason in self.fw.stmt_todos:
            updated = with_todo_comment(updated, self.fw.code[:3] + "92", reason)
            self.fw.ctx.todo(self.fw.code[:3] + "92", self.fw.where or original, reason)
        self.fw.stmt_todos.clear()
        if (
            self._impure_values
            and len(updated.body) == 1
            and isinstance(updated.body[0], cst.Return)
            and updated.body[0].value is None
        ):
            value = self._impure_values.pop()
            before = [*before, updated.with_changes(body=[cst.Expr(value=value)])]
            updated = updated.with_changes(leading_lines=[])
        elif self._impure_values:  # `x = 1; return f()` on one line: keep the effect on that line
            values, self._impure_values = self._impure_values, []
            small = list(updated.body)
            small[-1:-1] = [cst.Expr(value=v) for v in values]
            updated = updated.with_changes(body=small)
        if before:
            return cst.FlattenSentinel([*before, updated])
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return):
        if self.drop_returns and updated.value is not None:
            # a workflow's result is its samples: values go, effects stay (`return agent(q)` still runs the agent)
            if not _is_pure(updated.value):
                self._impure_values.append(updated.value)
            return updated.with_changes(value=None)
        return updated

    def leave_Await(self, original: cst.Await, updated: cst.Await):
        # `await <run site>` was already rewritten to an Await by leave_Call: unwrap the doubled await
        if isinstance(updated.expression, cst.Await):
            return updated.expression
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if self.fw.is_agent_ctor(original):
            self.result.agents_built += 1
            return self.fw.swap_ctor(updated, in_run=True, original=original)
        if (
            self.fw.table.resolve(original.func) == "asyncio.run"
            and len(updated.args) == 1
            and isinstance(updated.args[0].value, cst.Await)
        ):
            # asyncio.run(<run site>) inside what is now a coroutine: just await it
            self.fw.note_replaced(original.func)
            return updated.args[0].value
        agent = self.fw.run_site_agent(original, self.agents)
        if agent is None:
            converted = self.fw.convert_call(updated)
            return updated if converted is None else converted
        if not isinstance(agent, cst.Name) or agent.value not in self.agents:
            self.result.problems.append(
                f"it runs `{cst.Module([]).code_for_node(agent)}`, which is not a plain agent built here"
            )
            return updated
        expr, before, problem = self.fw.rewrite_run_site(updated, agent_var=agent.value)
        if problem:
            self.result.problems.append(problem)
            return updated
        self.result.run_sites += 1
        self.result.dropped_args.extend(a.value for a in original.args)
        self.fw.ctx.edit(self.fw.code[:3] + "05", self.fw.where or original, f"run of `{agent.value}` awaited with the rollout prompt")
        if self.pending:
            self.pending[-1].extend(before)
        return expr


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}{n}" in taken:
        n += 1
    return f"{name}{n}"


def migrate_module(module: cst.Module, fw: Framework) -> cst.Module:
    """Run the wrapping engine for one framework over ``module`` (see the module docstring).

    Cost: one name-index pass over the module (per top-level statement), then transforms only of the
    statements that change; untouched statements keep their identity (and so their line numbers).
    """
    ctx = fw.ctx
    table = fw.table
    code = fw.code[:3]
    body = list(module.body)
    counts = ctx.top_level_name_counts(module) or [name_counts(stmt) for stmt in body]  # the one full pass
    ctor_heads = fw.ctor_heads()
    top_names = {assigned_name(s) for s in body} | {
        s.name.value for s in body if isinstance(s, (cst.FunctionDef, cst.ClassDef))
    }

    def users_of(name: str, skip: set[int]) -> list[int]:
        return [i for i, c in enumerate(counts) if i not in skip and name in c]

    # module-level agents: X = Agent(...)
    module_agents: dict[str, int] = {}
    for i, stmt in enumerate(body):
        if not ctor_heads & counts[i].keys():
            continue
        name, value = assigned_name(stmt), assigned_value(stmt)
        if name and isinstance(value, cst.Call) and fw.is_agent_ctor(value) and not has_skip_marker(stmt):
            module_agents[name] = i

    def agent_deps(names: set[str]) -> set[str]:
        """Module-level agents reachable from ``names`` through other module agents' arguments (handoffs)."""
        out: set[str] = set()
        todo = [n for n in names if n in module_agents]
        while todo:
            n = todo.pop()
            if n in out:
                continue
            out.add(n)
            todo.extend(m for m in counts[module_agents[n]] if m in module_agents and m != n)
        return out

    # drivers: top-level functions with a run site
    replacements: dict[int, list[cst.BaseStatement]] = {}
    source_counts: dict[int, dict[str, int]] = {}  # references of the input statements a replacement was made from
    moved: set[int] = set()
    todo_at: dict[int, str] = {}
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.FunctionDef) or has_skip_marker(stmt):
            continue
        mentioned = counts[i]
        deps = agent_deps(set(mentioned) & set(module_agents))
        if not deps and not (ctor_heads & mentioned.keys()):
            continue  # neither builds nor uses an agent: cannot be a driver
        snap = fw.snapshot()
        conv = BodyConverter(fw, set(deps), drop_returns=True)
        new_body = stmt.body.visit(conv)
        if conv.result.run_sites == 0 and not (conv.result.problems and (deps or conv.result.agents_built)):
            fw.restore(snap)
            continue
        problems = list(conv.result.problems)
        params = [p.name.value for p in (*stmt.params.posonly_params, *stmt.params.params, *stmt.params.kwonly_params)]
        if isinstance(stmt.params.star_arg, cst.Param) or stmt.params.star_kwarg is not None:
            problems.append("it takes *args/**kwargs")
        for p in params if not problems else ():
            # references in the body = in the whole def minus the parameter itself (over-counting a default
            # or annotation that names it only makes the check stricter)
            uses = mentioned.get(p, 0) - 1
            uses_in_prompt = sum(_count_name(a, p) for a in conv.result.dropped_args)
            if uses > uses_in_prompt:
                problems.append(f"the parameter `{p}` is used beyond the prompt")
        if "ctx" in mentioned:
            problems.append("it already uses a name `ctx`")
        used_by = users_of(stmt.name.value, {i})
        if any(not is_main_guard(body[j]) for j in used_by):
            problems.append(f"`{stmt.name.value}` is used elsewhere in the module")
        for dep in sorted(deps):
            if users_of(dep, {i, module_agents[dep]} | {module_agents[d] for d in deps}):
                problems.append(f"module-level agent `{dep}` is also used elsewhere")
        if problems:
            fw.restore(snap)
            todo_at[i] = (
                f"wrap `{stmt.name.value}` in an AgentWorkflow.run() by hand: " + "; ".join(sorted(set(problems)))
            )
            continue
        cls_name = _unique(camel(stmt.name.value) + "Workflow", top_names)
        top_names.add(cls_name)
        # the moved module-level agents are built first, in their original order
        moved_stmts: list[cst.BaseStatement] = []
        for dep in sorted(deps, key=lambda d: module_agents[d]):
            j = module_agents[dep]
            moved.add(j)
            dep_stmt = body[j].visit(BodyConverter(fw, set(), drop_returns=False))
            moved_stmts.append(dep_stmt)
            ctx.edit(code + "03", body[j], f"module-level agent `{dep}` now built per rollout in {cls_name}.run()")
        inner = list(new_body.body) if isinstance(new_body, cst.IndentedBlock) else [
            cst.SimpleStatementLine(body=list(new_body.body))
        ]
        docstring = inner[:1] if inner and _is_docstring(inner[0]) else []
        inner = _strip_trailing_bare_return([*docstring, *_tidy_moved(moved_stmts), *inner[len(docstring):]])
        fw.needed.extend(WORKFLOW_IMPORTS)
        fw.created_workflows.add(cls_name)
        replacements[i] = [_workflow_class(stmt, cls_name, inner, module)]
        source_counts[i] = _merge_counts([counts[i], *(counts[module_agents[d]] for d in deps)])
        ctx.edit(code + "03", stmt, f"`{stmt.name.value}` wrapped as {cls_name}(AgentWorkflow).run()")
        for j in used_by:
            todo_at[j] = (
                f"`{stmt.name.value}` became {cls_name}: serve it (LocalBackend(workflow={cls_name}) + "
                "create_rollout_server) or run it with `osmosis-compat eval` instead of calling it here"
            )

    # existing AgentWorkflow subclasses whose run() still builds or runs plain agents
    for i, stmt in enumerate(body):
        if (
            isinstance(stmt, cst.ClassDef)
            and i not in replacements
            and ctor_heads & counts[i].keys()
            and not has_skip_marker(stmt)
            and _is_workflow_class(stmt, table)
        ):
            new_cls = _migrate_workflow_class(stmt, fw)
            if new_cls is not stmt:
                replacements[i] = [new_cls]

    # whatever plain agent is still built anywhere: TODO where it is (never code that raises)
    for i, stmt in enumerate(body):
        if i in moved or i in replacements or not (ctor_heads & counts[i].keys()) or has_skip_marker(stmt):
            continue
        marker = _LeftoverMarker(fw)
        marked = stmt.visit(marker)
        if marker.marked:
            replacements[i] = [marked]

    new_body: list[cst.BaseStatement] = []
    new_counts: list[dict[str, int]] = []
    for i, stmt in enumerate(body):
        if i in moved:
            continue
        out = replacements.get(i, [stmt])
        if i in todo_at:
            out = [with_todo_comment(out[0], code + "90", todo_at[i]), *out[1:]]
            ctx.todo(code + "90", stmt, todo_at[i])
        new_body.extend(out)
        new_counts.append(source_counts.get(i, counts[i]))
        new_counts.extend({} for _ in out[1:])
    if not replacements and not todo_at and not moved:
        return module
    module = module.with_changes(body=new_body)
    fw.body_counts = new_counts
    return fw_finish(module, fw)


def fw_finish(module: cst.Module, fw: Framework) -> cst.Module:
    """Framework hook (e.g. module-level models), then the imports: needed ones added, replaced ones dropped."""
    finish = getattr(fw, "finish", None)
    if finish is not None:
        module = finish(module)
    counts = getattr(fw, "body_counts", None)
    if counts is None or len(counts) != len(module.body):
        used = used_names(module)
    else:
        total: dict[str, int] = {}
        for stmt, c in zip(module.body, counts):
            if not _is_import_line(stmt):
                for name, n in c.items():
                    total[name] = total.get(name, 0) + n
        used = {name for name, n in total.items() if n > fw.replaced_count.get(name, 0)}
    if fw.needed:
        module = add_imports(module, fw.needed)
    module, removed = remove_unused_imports(module, fw.replaced_locals, used=used)
    for name in removed:
        fw.ctx.edit(fw.code[:3] + "04", None, f"removed unused import `{name}`")
    return module


_PURE_CALLS = {"str", "repr", "len", "bool", "int", "float", "dict", "list", "tuple"}


def _is_pure(expr: cst.BaseExpression) -> bool:
    """An expression whose value can be dropped without losing an effect (names, literals, str(result), …)."""
    if isinstance(expr, (cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Attribute):
        return _is_pure(expr.value)
    if isinstance(expr, cst.FormattedString):
        return all(_is_pure(p.expression) for p in expr.parts if isinstance(p, cst.FormattedStringExpression))
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_is_pure(e.value) for e in expr.elements)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _PURE_CALLS:
        return all(_is_pure(a.value) for a in expr.args)
    return False


def _merge_counts(parts: Sequence[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for name, n in part.items():
            out[name] = out.get(name, 0) + n
    return out


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body
    )


def _count_name(node: cst.CSTNode, name: str) -> int:
    if isinstance(node, cst.Name):  # the usual prompt argument: no visit needed
        return int(node.value == name)
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)):
        return 0
    return name_counts(node).get(name, 0)


def _strip_trailing_bare_return(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    if stmts:
        last = stmts[-1]
        if (
            isinstance(last, cst.SimpleStatementLine)
            and len(last.body) == 1
            and isinstance(last.body[0], cst.Return)
            and last.body[0].value is None
            and len(stmts) > 1
        ):
            return stmts[:-1]
    return stmts


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _tidy_moved(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Moved statements keep their comments but not the blank lines that separated them at module level."""
    out = []
    for stmt in stmts:
        lines = [l for l in stmt.leading_lines if l.comment is not None]
        out.append(stmt.with_changes(leading_lines=[l.with_changes(indent=True, whitespace=cst.SimpleWhitespace("")) for l in lines]))
    return out


def _workflow_class(func: cst.FunctionDef, cls_name: str, inner: list[cst.BaseStatement], module: cst.Module) -> cst.ClassDef:
    indent = module.default_indent
    run = cst.FunctionDef(
        name=cst.Name("run"),
        params=cst.Parameters(params=[
            cst.Param(cst.Name("self")),
            cst.Param(cst.Name("ctx"), annotation=cst.Annotation(cst.Name("AgentWorkflowContext"))),
        ]),
        returns=cst.Annotation(cst.Name("None")),
        asynchronous=cst.Asynchronous(),
        body=cst.IndentedBlock(body=inner, indent=None),
    )
    docstring: list[cst.BaseStatement] = []
    if inner and _is_docstring(inner[0]):
        docstring = [inner[0]]
        run = run.with_changes(body=run.body.with_changes(body=inner[1:] or [cst.SimpleStatementLine([cst.Pass()])]))
    del indent
    return cst.ClassDef(
        name=cst.Name(cls_name),
        bases=[cst.Arg(cst.Name("AgentWorkflow"))],
        body=cst.IndentedBlock(body=[*docstring, run]),
        leading_lines=func.leading_lines,
        decorators=[],
    )


def _is_workflow_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    """A subclass of the osmosis ``AgentWorkflow`` — also when the name is not imported (yet): a rule may add
    that import itself, and the answer must not change between runs (fixed point)."""
    for base in cls.bases:
        if table.matches(base.value, WORKFLOW_BASES) is not None:
            return True
        if isinstance(base.value, cst.Name) and base.value.value == "AgentWorkflow" and "AgentWorkflow" not in table.names:
            return True
    return False


def _migrate_workflow_class(cls: cst.ClassDef, fw: Framework) -> cst.ClassDef:
    class _Run(cst.CSTTransformer):
        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return node is cls

        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
            if original.name.value != "run" or original.asynchronous is None or has_skip_marker(original):
                return updated
            snap = fw.snapshot()
            conv = BodyConverter(fw, set(), drop_returns=False)
            new_body = original.body.visit(conv)
            if conv.result.problems or (conv.result.agents_built == 0 and conv.result.run_sites == 0):
                fw.restore(snap)
                return updated
            return updated.with_changes(body=new_body)

    return cls.visit(_Run())


class _LeftoverMarker(cst.CSTTransformer):
    """TODO above each statement that still builds a plain agent."""

    def __init__(self, fw: Framework) -> None:
        self.fw = fw
        self.stack: list[bool] = []
        self.marked = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not has_skip_marker(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return not has_skip_marker(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stack.append(False)

    def visit_Call(self, node: cst.Call) -> None:
        if self.stack and self.fw.is_agent_ctor(node):
            self.stack[-1] = True

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        flagged = self.stack.pop()
        if not flagged or has_skip_marker(original):
            return updated
        reason = (
            f"build this {self.fw.label} agent inside an AgentWorkflow.run() as {self.fw.osmosis_agent[1]} "
            "with the rollout placeholder model (the migration could not move it safely)"
        )
        self.fw.ctx.todo(self.fw.code[:3] + "91", original, reason)
        new = with_todo_comment(updated, self.fw.code[:3] + "91", reason)
        if new is not updated:
            self.marked = True
        return new
