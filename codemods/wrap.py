"""Writing plain framework code as an ``AgentWorkflow`` — the emitter the ``strands-agent`` and ``openai-agent``
rules share. Each rule supplies a :class:`Framework` (how its agents are built and run, and how the Osmosis
versions are written); the decisions come from the program model (:mod:`codemods.analysis.program`): this module
writes what a plan allows and turns every refusal into a TODO that names the reason.

What gets written, per driver the model found:

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

import re
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods.analysis.body import NameReferences, code
from codemods.analysis.drivers import Driver, find_drivers
from codemods.analysis.module import assigned_name, assigned_value, is_main_guard, module_model
from codemods.plan.model import CtorPlan, Plan, SessionPlan
from codemods.plan.planner import plan_driver
from codemods.base import (
    ImportTable,
    RuleContext,
    add_imports,
    has_skip_marker,
    remove_unused_imports,
    with_todo_comment,
)
from codemods.visit import children as visit_children
from codemods.visit import visit as fast_visit
from codemods.syntax import ascii_reason, assign_stmt, block_statements, camel, comments_of, is_docstring, is_import_stmt, keep_comments, kwarg, replace_method, run_method, strip_comments, strip_trailing_bare_return, tidy_moved, unique_name, with_blank_lines, with_kwarg
from codemods.framework import Framework
from codemods.osmosis_api import GRADER_BASES, PROMPT_TEXT, WORKFLOW_BASES, WORKFLOW_IMPORTS, prompt_helper_node, prompt_text_expr

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel


# ------------------------------------------------------------------------------------------------ emitting


def _mark_hot(node: cst.CSTNode, hot: set[int], ids: set[int], names: set[str], types: tuple[type, ...],
              fw: Framework, p: Plan) -> bool:
    """Add to ``hot`` the ids of the nodes under ``node`` (itself included) that a handler of :class:`_Emit` may
    change, and of their ancestors; whether ``node`` is one (see :meth:`_Emit.prepare`)."""
    # exact type checks: these node classes have no subclasses (and isinstance on libcst's ABCs is slow);
    # whitespace is never hot (no handler changes it, a plan keys no whitespace node): not walked
    found = False
    for child in visit_children(node, False):
        if _mark_hot(child, hot, ids, names, types, fw, p):
            found = True
    if not found:
        kind = type(node)
        if id(node) in ids or kind in types:
            found = True
        elif kind is cst.Name:
            found = node.value in names
        elif kind is cst.Call:
            func = node.func
            found = (type(func) is cst.Name and func.value in p.factories) \
                or fw.table.resolve(func) == "asyncio.run"
    if found:
        hot.add(id(node))
    return found


class _Emit(cst.CSTTransformer):
    """Applies one plan to the statements of a driver (identities of the input nodes key the plan)."""

    def __init__(self, fw: Framework, plan: Plan, drop_returns: bool) -> None:
        self.fw = fw
        self.p = plan
        self.drop_returns = drop_returns
        self.runs = {id(r.call): r for r in plan.facts.runs}
        self.before: dict[int, list[SessionPlan]] = {}
        for sp in plan.sessions:
            if sp.before is not None:
                self.before.setdefault(id(sp.before), []).append(sp)
        self.session_ctors = {id(sp.replaces): sp for sp in plan.sessions if sp.replaces is not None}
        self.impure: list[cst.BaseExpression] = []
        self.where: list[cst.CSTNode] = []
        self.nested = 0
        self.not_refs: set[int] = set()  # attribute and keyword names: never renamed
        self.lost: list[cst.EmptyLine] = []  # comments of parts the rewrite of the current line dropped
        # the nodes a handler may change, and their ancestors (see prepare): the rest is not rebuilt
        self.hot: set[int] = set()
        self.hot_ids = {*plan.drop, *self.before, *self.session_ctors, *plan.model_assigns, *plan.ctors,
                        *(k for k in self.runs if k in plan.runs), *plan.thread_calls, *plan.exits, *plan.text_nodes}
        if plan.bind_at is not None:
            self.hot_ids.add(id(plan.bind_at))
        self.hot_names = set(plan.renames) | set(plan.agent_calls)
        self.hot_types: tuple[type, ...] = ((cst.Return,) if drop_returns else ()) + (
            (cst.Attribute, cst.Subscript, cst.Call) if plan.subst is not None or plan.subst_map else ())

    def prepare(self, stmt: cst.CSTNode) -> None:
        """Mark the nodes of ``stmt`` that a handler below may change, and their ancestors. A node outside that set
        is not descended into (``on_visit`` returns False): libcst then keeps it as it is instead of rebuilding it
        node by node, which was most of the emitter's cost. A handler still runs on such a node itself, and finds
        nothing to do there (that is what unmarked means)."""
        _mark_hot(stmt, self.hot, self.hot_ids, self.hot_names, self.hot_types, self.fw, self.p)

    def lose(self, node: cst.CSTNode) -> None:
        """``node`` is dropped from the line being rewritten: its comments go above the line."""
        self.lost.extend(comments_of(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.nested += 1  # nested defs: their agents and runs were planned too; their returns are theirs
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.nested -= 1
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.nested += 1
        return True

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda):
        self.nested -= 1
        return updated

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.where.append(node)
            self.fw.where = node
        # a subtree with nothing to change is kept as it is — unless a dropped part's comments are waiting for the
        # next line to leave (they must land where the full walk puts them)
        return super().on_visit(node) and (id(node) in self.hot or bool(self.lost))

    def on_leave(self, original_node, updated_node):
        if isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.fw.where = original_node
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.where.pop()
            result = self._statement(original_node, result)
            self.fw.where = self.where[-1] if self.where else None
        return result

    def _statement(self, original, updated):
        p = self.p
        if id(original) in p.drop:
            # the line goes; its comments stay (moved onto the next statement by _settle); the imports it used may go
            self.fw.replaced.update(name_counts(original))
            return _dropped(comments_of(original))
        out: list = []
        if isinstance(updated, cst.RemovalSentinel):
            return updated
        if self.lost and isinstance(original, cst.SimpleStatementLine):
            # an argument or expression a rewrite dropped from this line: its comments stay, above the line
            have = {l.comment.value for l in comments_of(updated)}
            lost = [l for l in self.lost if l.comment.value not in have]
            self.lost = []
            if lost:
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *lost])
        if p.bind_at is not None and original is p.bind_at and isinstance(updated, cst.SimpleStatementLine):
            small = updated.body[0]
            updated = updated.with_changes(body=[small.with_changes(value=prompt_text_expr())])
        if isinstance(updated, cst.SimpleStatementLine) and self.impure and self.drop_returns:
            small = updated.body[-1]
            if isinstance(small, cst.Return) and small.value is None:
                values, self.impure = self.impure, []
                effects = [updated.with_changes(body=[cst.Expr(value=v)]) for v in values]
                updated = updated.with_changes(leading_lines=[])
                out.extend(effects)
        self.fw.where = original
        before = [self.fw.session_stmt(sp) for sp in self.before.get(id(original), [])]
        if before:
            # new statements go above the statement, under its comments (they belong to it)
            lead = list(updated.leading_lines) if not out else list(out[0].leading_lines)
            if out:
                out[0] = out[0].with_changes(leading_lines=[])
            else:
                updated = updated.with_changes(leading_lines=[])
            before = [before[0].with_changes(leading_lines=lead), *before[1:]]
        if before or out:
            return cst.FlattenSentinel([*before, *out, updated])
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        body, footer = _settle(list(updated.body), list(updated.footer))
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body, footer=footer)

    def leave_Return(self, original: cst.Return, updated: cst.Return):
        if self.drop_returns and updated.value is not None and not self.nested:
            # a workflow's result is its samples: values go, effects stay (`return agent(q)` still runs the agent)
            if not _is_pure(updated.value):
                self.impure.append(updated.value)
            return updated.with_changes(value=None, whitespace_after_return=cst.MaybeSentinel.DEFAULT)
        return updated

    def leave_Await(self, original: cst.Await, updated: cst.Await):
        if isinstance(updated.expression, cst.Await):
            return updated.expression
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        p, fw = self.p, self.fw
        if id(original) in self.session_ctors:
            fw.note_replaced(original.func)
            self.lose(original)
            return fw.session_ctor(self.session_ctors[id(original)])
        if id(original) in p.model_assigns:
            fw.note_replaced(original.func)
            self.lose(original)
            return p.model_assigns[id(original)]
        plan = p.ctors.get(id(original))
        if plan is not None:
            if plan.model is not None:  # the old model argument goes: its comments stay
                old = kwarg(original, "model") or (original.args[0] if fw.positional_model(original) is not None else None)
                if old is not None:
                    self.lose(old)
            return fw.write_ctor(updated, plan)
        run = self.runs.get(id(original))
        if run is not None and id(original) in p.runs:
            rp = p.runs[id(original)]
            if rp.input in ("prompt", "text", "drop") and run.shape.input_arg is not None:
                self.lose(run.shape.input_arg)
            if rp.drop_run_config_model:
                cfg = kwarg(original, "run_config")
                if cfg is not None and isinstance(cfg.value, cst.Call) and kwarg(cfg.value, "model") is not None:
                    self.lose(kwarg(cfg.value, "model"))
            return fw.write_run(updated, run, rp, p.subst)
        if (
            fw.table.resolve(original.func) == "asyncio.run"
            and len(updated.args) == 1
            and isinstance(updated.args[0].value, cst.Await)
        ):
            # asyncio.run(<run site>) inside what is now a coroutine: just await it
            fw.note_replaced(original.func)
            return updated.args[0].value
        if p.factories and isinstance(original.func, cst.Name) and original.func.value in p.factories:
            return updated.with_changes(func=cst.Name(p.factories[original.func.value]))
        if id(original) in p.thread_calls:
            # sync code that runs agents: off the event loop (asyncio.to_thread copies the rollout context)
            fw.needs_asyncio = True
            return cst.Await(expression=cst.Call(
                func=cst.Attribute(value=cst.Name("asyncio"), attr=cst.Name("to_thread")),
                args=[cst.Arg(updated.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                      if updated.args else cst.Arg(updated.func), *updated.args],
            ))
        return self._subst(original, updated)  # a handler's `event.get("prompt")` read outside a run's input

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr):
        if id(original.value) in self.p.exits:
            # `exit(0)` ended the script; in a workflow it ends the rollout
            return cst.Return(value=None, semicolon=updated.semicolon)
        return updated

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_refs.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_refs.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        if id(original) in self.p.text_nodes:
            return prompt_text_expr()
        if id(original) in self.not_refs:
            return updated
        factory = self.p.agent_calls.get(original.value)
        if factory is not None:  # an agent another file defines: its rollout factory builds it here
            self.fw.import_aliases.add((original.value, factory))
            self.fw.replaced.add(original.value)
            return cst.Call(func=cst.Name(factory))
        new = self.p.renames.get(original.value)
        if new is not None:
            if original.value in self.fw.imported_names:
                self.fw.import_aliases.add((original.value, new))
            self.fw.replaced.add(original.value)  # its import may go if nothing else uses it
            return updated.with_changes(value=new)
        return updated

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString):
        return prompt_text_expr() if id(original) in self.p.text_nodes else updated

    def leave_ConcatenatedString(self, original: cst.ConcatenatedString, updated: cst.ConcatenatedString):
        return prompt_text_expr() if id(original) in self.p.text_nodes else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        return self._subst(original, updated)

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript):
        return self._subst(original, updated)

    def _subst(self, original, updated):
        if self.p.subst is None and not self.p.subst_map:
            return updated
        text = code(original, 400)
        if text == self.p.subst:
            return prompt_text_expr()
        if text in self.p.subst_map:
            return self.p.subst_map[text]
        return updated


_DROPPED = "__osmosis_migrate_dropped__"


def _dropped(comments: list[cst.EmptyLine]) -> cst.SimpleStatementLine:
    """A placeholder for a removed statement that carries its comments until :func:`_settle` places them."""
    return cst.SimpleStatementLine(body=[cst.Expr(cst.Name(_DROPPED))], leading_lines=comments)


def _is_dropped(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Name)
        and stmt.body[0].value.value == _DROPPED
    )


def _settle(body: list, footer: list) -> tuple[list, list]:
    """Remove the placeholders of dropped statements; their comments go onto the next statement (or the footer)."""
    if not any(_is_dropped(s) for s in body):
        return body, footer
    out: list = []
    carried: list[cst.EmptyLine] = []
    for stmt in body:
        if _is_dropped(stmt):
            carried.extend(stmt.leading_lines)
            continue
        if carried:
            stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
            carried = []
        out.append(stmt)
    if carried:
        footer = [*carried, *footer]
    return out, footer


_PURE_CALLS = {"str", "repr", "len", "bool", "int", "float", "dict", "list", "tuple"}
_PURE_METHODS = {"strip", "lstrip", "rstrip", "lower", "upper", "title", "casefold", "split", "splitlines",
                 "replace", "format", "join", "startswith", "endswith", "final_output_as"}


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
    if isinstance(expr, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _is_pure(e.key) and _is_pure(e.value) for e in expr.elements)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _PURE_CALLS:
        return all(_is_pure(a.value) for a in expr.args)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _PURE_METHODS:
        return _is_pure(expr.func.value) and all(_is_pure(a.value) for a in expr.args)
    return False


# ------------------------------------------------------------------------------------------------ the module


class _NameRefs(NameReferences):
    """Names used as references (not keyword-argument names, not attribute names after a dot)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def visit_Name(self, n: cst.Name) -> None:
        self.counts[n.value] = self.counts.get(n.value, 0) + 1

    def visit_SimpleString(self, n: cst.SimpleString) -> None:
        val = n.value.strip("\"'rbuRBU")
        if val.isidentifier():
            self.counts[val] = self.counts.get(val, 0) + 1


def name_counts(node: cst.CSTNode) -> dict[str, int]:
    v = _NameRefs()
    fast_visit(node, v)
    return v.counts


def _candidate_uses(stmt: cst.CSTNode, candidates: Sequence[str], module: cst.Module) -> dict[str, int]:
    """Which of the import ``candidates`` a new statement mentions as a word of its code (a name in a string or
    comment counts too, which only ever keeps an import).

    Read from the text of the statement's tokens instead of generating its code: an identifier can only be a word
    of the code inside one token (tokens made of word characters never touch), and the tokens that hold word
    characters are names, numbers, strings, comments and keywords — no candidate is a keyword; the soft keywords
    (``match``, ``case``, ``type``, ``_``) are checked on the generated code."""
    if not candidates:
        return {}
    if _SOFT_KEYWORDS & set(candidates):
        text = module.code_for_node(stmt)
    else:
        collector = _TokenText()
        fast_visit(stmt, collector)
        text = " ".join(collector.parts)
    return {name: 1 for name in candidates if re.search(rf"\b{re.escape(name)}\b", text)}


_SOFT_KEYWORDS = {"match", "case", "type", "_"}


class _TokenText(cst.CSTVisitor):
    """The texts of the tokens of a tree that can hold word characters (keywords aside)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.parts.append(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.parts.append(node.value)

    def visit_Integer(self, node: cst.Integer) -> None:
        self.parts.append(node.value)

    def visit_Float(self, node: cst.Float) -> None:
        self.parts.append(node.value)

    def visit_Imaginary(self, node: cst.Imaginary) -> None:
        self.parts.append(node.value)

    def visit_Comment(self, node: cst.Comment) -> None:
        self.parts.append(node.value)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.parts += [node.start, node.end]

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.parts.append(node.value)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if node.conversion:
            self.parts.append(node.conversion)

    def visit_TemplatedString(self, node) -> None:
        self.parts += [node.start, node.end]

    def visit_TemplatedStringText(self, node) -> None:
        self.parts.append(node.value)

    def visit_TemplatedStringExpression(self, node) -> None:
        if node.conversion:
            self.parts.append(node.conversion)


def _is_workflow_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    """A subclass of the osmosis ``AgentWorkflow`` — also when the name is not imported (yet): a rule may add
    that import itself, and the answer must not change between runs (fixed point)."""
    for base in cls.bases:
        if table.matches(base.value, WORKFLOW_BASES) is not None:
            return True
        if isinstance(base.value, cst.Name) and base.value.value == "AgentWorkflow" and "AgentWorkflow" not in table.names:
            return True
    return False


def _is_grader_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    for base in cls.bases:
        if table.matches(base.value, GRADER_BASES) is not None:
            return True
        if isinstance(base.value, cst.Name) and base.value.value == "Grader":
            return True
    return False


def _workflow_class(cls_name: str, inner: list[cst.BaseStatement], footer: Sequence[cst.EmptyLine],
                    leading: Sequence[cst.EmptyLine]) -> cst.ClassDef:
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


class _Todo:
    def __init__(self) -> None:
        self.at: dict[int, list[tuple[str, str]]] = {}

    def add(self, index: int, code_: str, reason: str) -> None:
        reason = ascii_reason(reason)
        items = self.at.setdefault(index, [])
        if (code_, reason) not in items:
            items.append((code_, reason))


def migrate_module(module: cst.Module, fw: Framework) -> cst.Module:
    """Run the emitter for one framework over ``module`` (see the module docstring).

    Cost: one name-index pass over the top level (from the ``ast`` while the tree is unchanged), the body facts of
    the statements that run agents, and transforms of only the statements that change; untouched statements keep
    their identity (and so their line numbers).
    """
    ctx = fw.ctx
    body = list(module.body)
    counts = ctx.top_level_name_counts(module) or [name_counts(stmt) for stmt in body]
    repo = ctx.repo
    external = repo.external_uses(ctx.filename) if repo is not None else {}
    model = module_model(module, fw, counts, ctx.filename, external,
                         tree=ctx.tree if module is ctx.origin else None)
    code_ = fw.code[:3]
    heads = fw.ctor_heads()
    offered: dict = {}
    refused: dict[str, str] = {}  # names other files use whose rollout version cannot be written: why
    if repo is not None:
        fw.imported_names |= _apply_imported(model, fw, repo)
        offered = {n: v for n, v in repo.offered(ctx.filename).items() if v.rule == fw.code and v.rollout}
        refused = {n: v.problem for n, v in repo.offered(ctx.filename).items() if v.rule == fw.code and not v.rollout}
    run_heads = fw.run_heads()
    if not any((heads | run_heads) & c.keys() for c in counts) and not model.agents and not fw.imported_names:
        return module

    drivers = find_drivers(model, fw)
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.ClassDef) and heads & counts[i].keys() and not has_skip_marker(stmt) \
                and _is_workflow_class(stmt, fw.table):
            run = run_method(stmt)
            if run is not None and not has_skip_marker(run):
                drivers.append(Driver("workflow", stmt.name.value, [i], list(block_statements(run.body)), run))
    # a function kept for its callers whose workflow was already added beside it (a previous run) is done
    done_beside = [d for d in drivers if d.kind == "function" and _has_workflow_beside(model, d, fw.table)]
    drivers = [d for d in drivers if d not in done_beside]
    plans = [plan_driver(model, fw, d, fw.target) for d in drivers]
    ok = [p for p in plans if not p.problems]
    todos = _Todo()
    replacements: dict[int, list[cst.BaseStatement]] = {}
    removed: set[int] = set()  # top-level statements that leave (moved into run(), or dropped)
    dropped: set[int] = set()  # …of which deleted (their comments stay)
    top_names = set(model.bindings) | {"AgentWorkflow", "AgentWorkflowContext", "Grader", "GraderContext"}

    # which module-level agents leave the module level: used only by drivers converted in place (and by agents
    # that leave too)
    inplace_idx: set[int] = set()
    for p in ok:
        if p.mode == "inplace" and p.driver.kind != "workflow":
            inplace_idx.update(p.driver.indices)
    dep_of = {name for p in ok for name in p.deps}
    moved: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name in dep_of - moved:
            idx = model.agents[name]
            users = model.users(name, skip=[idx])
            if model.external.get(name):
                continue
            if all(j in inplace_idx or any(model.agents.get(m) == j for m in moved) for j in users):
                moved.add(name)
                changed = True
    owner: dict[str, Plan] = {}
    for p in ok:
        for name in p.deps:
            owner.setdefault(name, p)

    # module-level models the migrated agents use: the placeholder where they are when only those agents use them,
    # else each migrated agent gets its own placeholder (the plain code keeps its model)
    moved_idx = {model.agents[n] for n in moved}
    module_vars: dict[str, list[CtorPlan]] = {}
    for p in ok:
        for cp in p.ctors.values():
            if cp.module_var:
                module_vars.setdefault(cp.module_var, []).append(cp)
    for var, cps in module_vars.items():
        idx = model.models[var]
        users = model.users(var, skip=[idx])
        stmt = body[idx]
        value = assigned_value(stmt)
        if all(j in inplace_idx or j in moved_idx for j in users) and not model.external.get(var) \
                and isinstance(stmt, cst.SimpleStatementLine) and isinstance(value, cst.Call):
            small = stmt.body[0]
            replacements[idx] = [keep_comments(stmt, stmt.with_changes(body=[small.with_changes(value=cps[0].fallback)]))]
            fw.note_replaced(value.func)
            ctx.edit(code_ + "01", stmt, f"module-level model `{var}` → {code(cps[0].fallback, 60)} "
                     "(only migrated agents use it)")
            for cp in cps:
                cp.model = None  # `model=VAR` stays: VAR is the placeholder now

    # factories the workflows get their agents from: converted in place when only migrated code calls them, else a
    # rollout version is added beside them (the plain callers keep theirs)
    factory_users: dict[str, list[Plan]] = {}
    for p in ok:
        for name in p.factory_plans:
            factory_users.setdefault(name, []).append(p)
    for name, users_plans in factory_users.items():
        fplan = users_plans[0].factory_plans[name]
        idx = model.functions[name]
        func = body[idx]
        assert isinstance(func, cst.FunctionDef)
        new_body = _emit_body(fw, fplan, block_statements(func.body), drop_returns=False)
        block = func.body.with_changes(body=new_body, footer=[*plan_tail(fplan), *func.body.footer])
        in_place = not func.decorators and all(j in inplace_idx for j in model.users(name, skip=[idx])) \
            and not model.external.get(name)
        _place_rollout_version(fw, ctx, replacements, top_names, users_plans, func, idx, name, block, in_place,
                               kind="factory")

    # helpers (functions that run agents for a driver: tools, guardrails, sub-steps): converted in place when only
    # migrated code uses them, else a rollout version beside them; module-level agents only they use move in
    helper_users: dict[str, list[Plan]] = {}
    for p in ok:
        for name in p.helper_plans:
            helper_users.setdefault(name, []).append(p)
    for name, users_plans in helper_users.items():
        hplan = users_plans[0].helper_plans[name]
        idx = model.functions[name]
        func = body[idx]
        assert isinstance(func, cst.FunctionDef)
        users = model.users(name, skip=[idx])
        in_place = all(j in inplace_idx or j in moved_idx for j in users) and not model.external.get(name)
        dep_stmts: list[cst.BaseStatement] = []
        for dep in hplan.deps:
            j = model.agents[dep]
            stmt = _emit_stmt(fw, hplan, body[j])
            if in_place and not model.external.get(dep) and set(model.users(dep, skip=[j])) <= {idx} | moved_idx:
                dep_stmts.extend(tidy_moved([stmt]))
                removed.add(j)
                ctx.edit(code_ + "03", body[j], f"module-level agent `{dep}` now built where `{name}` runs it")
            else:
                dep_stmts.append(strip_comments(stmt.with_changes(leading_lines=[])))
        inner = _emit_body(fw, hplan, block_statements(func.body), drop_returns=False)
        docstring = inner[:1] if inner and is_docstring(inner[0]) else []
        inner = [*docstring, *dep_stmts, *inner[len(docstring):]]
        block = func.body.with_changes(body=inner, footer=[*plan_tail(hplan), *func.body.footer])
        _place_rollout_version(fw, ctx, replacements, top_names, users_plans, func, idx, name, block, in_place,
                               kind="helper")

    # classes whose methods run agents: converted in place when only migrated code uses them, else a rollout copy
    class_users: dict[str, list[Plan]] = {}
    for p in ok:
        for name in p.class_plans:
            class_users.setdefault(name, []).append(p)
    for name, users_plans in class_users.items():
        mplans = {id(mp.driver.func): mp for mp in users_plans[0].class_plans[name]}
        idx = model.classes[name]
        cls = body[idx]
        assert isinstance(cls, cst.ClassDef)
        users = model.users(name, skip=[idx])
        in_place = all(j in inplace_idx for j in users) and not model.external.get(name)
        new_methods = []
        only_here = {d for mp in mplans.values() for d in mp.deps
                     if in_place and not model.external.get(d)
                     and set(model.users(d, skip=[model.agents[d]])) <= {idx}}
        for stmt in block_statements(cls.body):
            mp = mplans.get(id(stmt))
            if mp is None:
                new_methods.append(stmt)
                continue
            deps = []
            for d in mp.deps:
                j = model.agents[d]
                dep_stmt = _emit_stmt(fw, mp, body[j])
                if d in only_here and j not in removed:  # the first method that builds it takes its comments
                    removed.add(j)
                    deps.extend(tidy_moved([dep_stmt]))
                    ctx.edit(code_ + "03", body[j], f"module-level agent `{d}` now built where `{name}` runs it")
                else:
                    deps.append(strip_comments(dep_stmt.with_changes(leading_lines=[])))
            inner = _emit_body(fw, mp, block_statements(stmt.body), drop_returns=False)
            docstring = inner[:1] if inner and is_docstring(inner[0]) else []
            inner = [*docstring, *deps, *inner[len(docstring):]]
            new_methods.append(stmt.with_changes(body=stmt.body.with_changes(
                body=inner, footer=[*plan_tail(mp), *stmt.body.footer])))
        new_cls = cls.with_changes(body=cls.body.with_changes(body=new_methods))
        if in_place:
            replacements[idx] = [new_cls]
            ctx.edit(code_ + "03", cls, f"class `{name}` now builds and runs {fw.osmosis_agent[1]} (only workflows "
                     "use it)")
        else:
            new_name = unique_name(f"{name}ForRollout", top_names)
            top_names.add(new_name)
            copy = strip_comments(new_cls.with_changes(name=cst.Name(new_name),
                                                        leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
            replacements[idx] = [cls, copy]
            for p in users_plans:
                p.renames[name] = new_name
            ctx.edit(code_ + "03", cls, f"class `{name}` kept for its other users; `{new_name}` runs "
                     f"{fw.osmosis_agent[1]} for the workflows")
        for mp in mplans.values():
            dep_of.update(mp.deps)

    # what other files of the run use from this one: their rollout versions, beside the originals
    for name, verdict in offered.items():
        if verdict.rollout in model.bindings:
            continue  # written by a previous run
        if verdict.kind == "agent" and name in model.agents:
            idx = model.agents[name]
            factory = _agent_factory(model, fw, name, verdict.rollout)
            if factory is not None:
                replacements[idx] = [*replacements.get(idx, [body[idx]]), factory]
                ctx.edit(code_ + "03", body[idx], f"`{verdict.rollout}()` builds `{name}` as {fw.osmosis_agent[1]} "
                         "for the workflows of other modules (the plain agent stays for its other users)")
        elif verdict.kind in ("class", "helper") and name not in class_users and name not in helper_users:
            copy = _offered_copy(model, fw, name, verdict.rollout, verdict.kind)
            if copy is not None:
                idx = model.classes.get(name, model.functions.get(name))
                replacements[idx] = [*replacements.get(idx, [body[idx]]), copy]
                ctx.edit(code_ + "03", body[idx], f"`{verdict.rollout}` runs {fw.osmosis_agent[1]} for the workflows "
                         f"of other modules (`{name}` stays for its other users)")

    created: list[tuple[str, cst.CSTNode]] = []  # (workflow class, the input statement it was made from)
    same_code: dict[int, int] = {}  # id(new statement) → index of the input statement with the same code
    for p in plans:
        d = p.driver
        first = d.indices[0]
        if p.problems:
            what = {"function": f"`{d.name}`", "script": "the module-level code that runs the agent",
                    "main": "the `__main__` block", "workflow": f"`{d.name}.run()`"}[d.kind]
            where = first
            if d.kind == "script":
                where = next((j for j in d.indices if fw.has_run_site(body[j], set(model.agents))), first)
            todos.add(where, code_ + "90", f"{what} is not migrated: " + "; ".join(p.problems))
            continue
        if d.kind == "workflow":
            if not p.runs and not p.ctors and not p.model_assigns and not p.sessions:
                continue  # nothing plain left in it
            cls = body[first]
            run = run_method(cls)
            new_body = _emit_body(fw, p, list(block_statements(run.body)), drop_returns=False)
            new_run = run.with_changes(body=run.body.with_changes(body=new_body, footer=[*plan_tail(p), *run.body.footer]))
            replacements[first] = [replace_method(cls, run, new_run)]
            ctx.edit(code_ + "03", cls, f"`{d.name}.run()` migrated in place")
            continue
        cls_name = unique_name(camel(d.name) + "Workflow", top_names)
        top_names.add(cls_name)
        p.cls_name = cls_name
        # module-level agents built per rollout in run(), in module order
        dep_stmts: list[cst.BaseStatement] = []
        for name in p.deps:
            j = model.agents[name]
            stmt = _emit_stmt(fw, p, body[j])
            if name in moved and owner[name] is p and p.mode == "inplace":
                dep_stmts.extend(tidy_moved([stmt]))
                removed.add(j)
                ctx.edit(code_ + "03", body[j], f"module-level agent `{name}` now built per rollout in {cls_name}.run()")
            else:
                dep_stmts.append(strip_comments(stmt.with_changes(leading_lines=[])))
        prefix: list[cst.BaseStatement] = []
        for var, default in p.defaults:
            prefix.append(assign_stmt(var, default))
        if p.bind:
            prefix.append(assign_stmt(p.bind, prompt_text_expr()))
        inner = _emit_body(fw, p, d.stmts, drop_returns=True)
        if d.kind == "script":
            inner = tidy_moved(inner)
        docstring = inner[:1] if inner and is_docstring(inner[0]) else []
        inner = strip_trailing_bare_return([*docstring, *prefix, *dep_stmts, *inner[len(docstring):]])
        footer = [*plan_tail(p), *(d.func.body.footer if d.func is not None and isinstance(d.func.body, cst.IndentedBlock) else [])]
        if p.mode == "beside":
            inner = [strip_comments(s) for s in inner]
            footer = []
            cls = _workflow_class(cls_name, inner, footer, [cst.EmptyLine(), cst.EmptyLine()])
            replacements[first] = [body[first], cls]
            ctx.edit(code_ + "03", body[first], f"`{d.name}` wrapped as {cls_name}(AgentWorkflow).run() beside it "
                     f"({'; '.join(p.notes)})")
        elif d.kind == "function":
            cls = _workflow_class(cls_name, inner, footer, body[first].leading_lines)
            replacements[first] = [cls]
            ctx.edit(code_ + "03", body[first], f"`{d.name}` wrapped as {cls_name}(AgentWorkflow).run()")
        elif d.kind == "script":
            cls = _workflow_class(cls_name, inner, [], [cst.EmptyLine(), cst.EmptyLine()])
            replacements[first] = [cls]
            for j in d.indices[1:]:
                removed.add(j)
            ctx.edit(code_ + "03", body[first], f"the module-level code that runs the agent wrapped as "
                     f"{cls_name}(AgentWorkflow).run()")
        else:  # the __main__ block runs the agent itself
            cls = _workflow_class(cls_name, tidy_moved(inner), [], [cst.EmptyLine(), cst.EmptyLine()])
            replacements[first] = [cls, _serving_guard(fw, body[first], cls_name, None, model)]
            ctx.edit(code_ + "03", body[first], f"the `__main__` block wrapped as {cls_name}(AgentWorkflow).run()")
        created.append((cls_name, body[first]))
        fw.needed[:0] = [x for x in WORKFLOW_IMPORTS if x not in fw.needed]
        if p.prompt_text:
            fw.prompt_text_needed = True
        # the callers: the `__main__` block serves the workflow; module-level calls go
        for j in p.callers:
            stmt = replacements.get(j, [body[j]])[-1] if j in replacements else body[j]
            if is_main_guard(body[j]):
                new_guard = _serving_guard(fw, stmt, cls_name, d.name, model)
                replacements[j] = [new_guard]
                ctx.edit(code_ + "07", body[j], f"the `__main__` block now serves {cls_name} "
                         "(`python` on this file starts the rollout server, as `osmosis rollout init` scaffolds do)")
            else:
                removed.add(j)
                dropped.add(j)
                replacements.pop(j, None)
                fw.replaced.update(counts[j])
                ctx.edit(code_ + "07", body[j], f"module-level call of `{d.name}` removed (it would run at import); "
                         f"the `__main__` block serves {cls_name}")
                if model.main_guard is None and not any(is_main_guard(s) for r in replacements.values() for s in r):
                    fw.append_guard = _serving_guard(fw, None, cls_name, d.name, model)

    # whatever plain agent is still built outside what was migrated: a TODO saying why it stays
    migrated_idx = {j for p in ok for j in p.driver.indices} | removed
    beside_idx = {p.driver.indices[0] for p in ok if p.mode == "beside"} | {d.indices[0] for d in done_beside}
    for d in done_beside:  # its module-level agents stay for it, as when the workflow was added
        dep_of |= _module_agent_deps(model, set(counts[d.indices[0]]))
    for name, i in model.functions.items():  # kept for plain callers beside its rollout version
        if f"{name}_for_rollout" in model.functions:
            beside_idx.add(i)
    for name in helper_users:  # kept for other users beside its rollout version: its agents stay on purpose
        if name in {n for p in ok for n in p.renames}:
            beside_idx.add(model.functions[name])
            dep_of |= set(helper_users[name][0].helper_plans[name].deps)
    for i, stmt in enumerate(body):
        if i in migrated_idx and i not in beside_idx:
            continue
        if i in beside_idx or i in replacements or not (heads & counts[i].keys()) or has_skip_marker(stmt):
            continue
        name = assigned_name(stmt)
        if name in dep_of and name not in moved:
            continue  # kept on purpose for its other users; the workflows build their own copies
        if name in offered or (isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value in offered):
            continue  # other files' workflows use its rollout version, written beside it
        marker = _LeftoverMarker(fw, model, plans, name)
        marker.refused = refused
        marked = stmt.visit(marker)
        if marker.marked:
            replacements[i] = [marked]
            same_code[id(marked)] = i  # only comments were added: the statement uses the names it used

    new_body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for i, stmt in enumerate(body):
        if i in removed:
            if i in dropped:  # a deleted line's comments stay at module level (a moved statement took its own)
                carried.extend(l for l in stmt.leading_lines if l.comment is not None)
            if i not in replacements:
                continue
        out = list(replacements.get(i, [stmt]))
        if i in removed and i in replacements and not out:
            continue
        # the first statement keeps the input's code when it is the input statement or its comment-marked self
        comment_only = bool(out) and (out[0] is stmt or same_code.get(id(out[0])) == i)
        if carried and out:
            out[0] = out[0].with_changes(leading_lines=[*out[0].leading_lines, *carried])
            carried = []
        for code_i, reason in todos.at.get(i, ()):
            out[0] = with_todo_comment(out[0], code_i, reason)
            ctx.todo(code_i, stmt, reason)
        if comment_only:
            same_code[id(out[0])] = i
        new_body.extend(out)
    guard = fw.append_guard
    if guard is not None:
        if carried:
            guard = guard.with_changes(leading_lines=[*guard.leading_lines, *carried])
            carried = []
        new_body.append(with_blank_lines(guard))
    if carried:
        module = module.with_changes(footer=[*carried, *module.footer])
    if not replacements and not removed and not todos.at:
        return module
    # names each top-level statement uses: the input's counts where the statement is unchanged, counted afresh
    # where it is new (the import clean-up needs them; a full-module visit would cost more than the rule)
    original_ids = {id(st): i for i, st in enumerate(body)}
    original_ids.update(same_code)
    candidates = sorted(fw.replaced)
    fw.body_counts = [
        counts[original_ids[id(st)]] if id(st) in original_ids else _candidate_uses(st, candidates, module)
        for st in new_body
    ]
    module = module.with_changes(body=new_body)
    module = _module_todos(module, fw, created)
    return fw_finish(module, fw)


def _module_agent_deps(model: "ModuleModel", names: set[str]) -> set[str]:
    out: set[str] = set()
    todo = [n for n in names if n in model.agents]
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(x for x in model.counts[model.agents[n]] if x in model.agents and x != n)
    return out


def _place_rollout_version(fw: Framework, ctx: RuleContext, replacements: dict, top_names: set[str],
                           users_plans: list[Plan], func: cst.FunctionDef, idx: int, name: str,
                           block: cst.BaseSuite, in_place: bool, kind: str) -> None:
    """A factory or helper whose converted body is ``block``: in place when only migrated code uses it, else a
    comment-free rollout copy ``<name>_for_rollout`` beside it (a tool copy keeps the tool's name) that the
    workflows call instead."""
    code_ = fw.code[:3]
    if in_place:
        replacements[idx] = [func.with_changes(body=block)]
        ctx.edit(code_ + "03", func, f"{'factory ' if kind == 'factory' else ''}`{name}` now "
                 f"{'builds' if kind == 'factory' else 'runs'} {fw.osmosis_agent[1]} (only migrated code uses it)")
        return
    new_name = unique_name(f"{name}_for_rollout", top_names)
    top_names.add(new_name)
    decorators = [] if kind == "factory" else _tool_named(fw, func, name)
    copy = strip_comments(func.with_changes(name=cst.Name(new_name), body=block, decorators=decorators,
                                             leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    replacements[idx] = [func, copy]
    for p in users_plans:
        (p.factories if kind == "factory" else p.renames)[name] = new_name
    ctx.edit(code_ + "03", func, f"`{name}` kept for its other users; `{new_name}` "
             f"{'builds' if kind == 'factory' else 'runs'} {fw.osmosis_agent[1]} for the workflows")


def _has_workflow_beside(model: "ModuleModel", d: Driver, table: ImportTable) -> bool:
    i = d.indices[0]
    nxt = model.body[i + 1] if i + 1 < len(model.body) else None
    return isinstance(nxt, cst.ClassDef) and nxt.name.value.startswith(camel(d.name) + "Workflow") \
        and _is_workflow_class(nxt, table)


def _emit_body(fw: Framework, plan: Plan, stmts: Sequence[cst.BaseStatement], drop_returns: bool) -> list:
    """The statements of a driver, converted; comments of dropped trailing statements land in ``plan.tail``."""
    emitter = _Emit(fw, plan, drop_returns)
    out: list = []
    for stmt in stmts:
        emitter.prepare(stmt)
        new = stmt.visit(emitter)
        if isinstance(new, cst.FlattenSentinel):
            out.extend(new.nodes)
        elif not isinstance(new, cst.RemovalSentinel):
            out.append(new)
    body, tail = _settle(out, [])
    plan.tail = tail
    return body


def plan_tail(plan: Plan) -> list:
    return list(getattr(plan, "tail", []) or [])


def _emit_stmt(fw: Framework, plan: Plan, stmt: cst.BaseStatement) -> cst.BaseStatement:
    emitter = _Emit(fw, plan, drop_returns=False)
    emitter.prepare(stmt)
    new = stmt.visit(emitter)
    assert isinstance(new, cst.BaseStatement)
    return new


def _serving_guard(fw: Framework, guard: Optional[cst.CSTNode], cls_name: str, driver_name: Optional[str],
                   model: "ModuleModel") -> cst.If:
    """The ``__main__`` block that serves the workflow (the statements that called the driver, and those that only
    fed them, replaced; their comments kept above the serving lines; other statements kept)."""
    imports_os = "os" in model.table.modules
    grader = next((s.name.value for s in model.body if isinstance(s, cst.ClassDef) and _is_grader_class(s, model.table)), None)
    backend = f"LocalBackend(workflow={cls_name}" + (f", grader={grader}" if grader else "") + ")"
    keep_alive = (
        "        # Outlive the Osmosis platform load balancer's 2100s idle timeout.\n"
        "        timeout_keep_alive=2160,\n" if fw.target.startswith("0.3") else ""
    )
    text = (
        ("import os\n\n" if not imports_os else "")
        + "import uvicorn\n"
        "from osmosis_ai.rollout.backend.local import LocalBackend\n"
        "from osmosis_ai.rollout.server import create_rollout_server\n\n"
        f"# `python` on this file serves {cls_name} to a rollout controller (as `osmosis rollout init` scaffolds do)\n"
        "uvicorn.run(\n"
        f"    create_rollout_server(backend={backend}),\n"
        '    host="0.0.0.0",\n'
        '    port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")),\n'
        + keep_alive.replace("        ", "    ")
        + ")\n"
    )
    serving = list(_parsed_statements(text))
    if guard is None:
        return cst.If(
            test=cst.parse_expression('__name__ == "__main__"'),
            body=cst.IndentedBlock(body=serving),
        )
    assert isinstance(guard, cst.If)
    stmts = block_statements(guard.body)
    if driver_name is None:
        replaced = list(range(len(stmts)))  # the block ran the agent itself: all of it moved into run()
    else:
        replaced = [k for k, s in enumerate(stmts) if driver_name in name_counts(s)]
    feeders = _feeders(stmts, set(replaced))
    gone = set(replaced) | feeders
    for k in gone:  # the imports only those lines used may go (`asyncio` of `asyncio.run(main())`, `sys`…)
        fw.replaced.update(name_counts(stmts[k]))
    carried: list[cst.EmptyLine] = []
    new: list[cst.BaseStatement] = []
    placed = False
    for k, s in enumerate(stmts):
        if k in gone:
            if driver_name is not None:
                carried.extend(comments_of(s))
            if not placed and k in replaced:
                placed = True
                new.append(None)  # type: ignore[arg-type]  # the serving lines go here
            continue
        new.append(s)
    if not placed:
        new.append(None)  # type: ignore[arg-type]
    at = new.index(None)  # type: ignore[arg-type]
    if carried:
        serving[0] = serving[0].with_changes(leading_lines=[*carried, *serving[0].leading_lines])
    new[at:at + 1] = serving
    return guard.with_changes(body=guard.body.with_changes(body=new))


_PARSED: dict[str, tuple] = {}


def _parsed_statements(text: str) -> tuple:
    """``text`` parsed into statements (blank lines without indentation), cached per process."""
    if text not in _PARSED:
        if len(_PARSED) > 64:
            _PARSED.clear()
        _PARSED[text] = tuple(_no_blank_indent(s) for s in cst.parse_module(text).body)
    return _PARSED[text]


def _no_blank_indent(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Blank lines that do not carry their block's indentation (no trailing spaces once indented)."""
    lines = [l.with_changes(indent=False) if l.comment is None else l for l in stmt.leading_lines]
    return stmt.with_changes(leading_lines=lines)


def _feeders(stmts: Sequence[cst.BaseStatement], callers: set[int]) -> set[int]:
    """Statements of a block whose only purpose is to feed ``callers`` (``q = input()``, argparse setup)."""
    bound: dict[int, set[str]] = {}
    loads: dict[int, dict[str, int]] = {}
    for k, s in enumerate(stmts):
        loads[k] = name_counts(s)
        names: set[str] = set()
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    for t in targets:
                        if isinstance(t, cst.Name):
                            names.add(t.value)
        bound[k] = names
    gone = set(callers)
    feeders: set[int] = set()
    changed = True
    while changed:
        changed = False
        for k, s in enumerate(stmts):
            if k in gone or k in feeders:
                continue
            names = bound[k]
            if names:
                readers = [j for j in range(len(stmts)) if j != k and names & (loads[j].keys() - bound[j])]
                if readers and all(j in gone or j in feeders for j in readers):
                    feeders.add(k)
                    changed = True
            elif isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr):
                heads = set(loads[k])
                if heads and any(heads & bound[j] for j in feeders):
                    # `parser.add_argument(...)` on a parser that only feeds the callers
                    if all(any(h in bound[j] for j in feeders) or h in ("print",) for h in heads if h not in ("True", "False", "None")):
                        feeders.add(k)
                        changed = True
    return feeders


class _LeftoverMarker(cst.CSTTransformer):
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
        if self.stack and self.fw.is_agent_ctor(node):
            self.stack[-1] = True

    def reason(self, original: cst.SimpleStatementLine) -> str:
        fw, model = self.fw, self.model
        label = f"this plain {fw.label} agent stays as it is"
        target = f"; to train it, build it inside an AgentWorkflow.run() as {fw.osmosis_agent[1]} with the rollout placeholder model"
        if not self.scopes:
            var = assigned_name(original)
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
            return (f"{label}: the tool `{self.scopes[0]}` builds and runs its own agent; it runs inside a rollout only when "
                    f"an agent calls it there — give it {fw.osmosis_agent[1]} with the placeholder model once every "
                    "caller of the tool is a workflow")
        top = self.scopes[0]
        failed = [p for p in self.plans if p.problems and p.driver.name == top]
        if failed:
            return f"{label}: `{top}` could not be migrated (see the TODO there)"
        users = [p for p in self.plans if p.problems and (top in p.class_plans or top in p.helper_plans)]
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

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        flagged = self.stack.pop()
        if not flagged or has_skip_marker(original):
            return updated
        reason = ascii_reason(self.reason(original))
        self.fw.ctx.todo(self.fw.code[:3] + "91", original, reason)
        new = with_todo_comment(updated, self.fw.code[:3] + "91", reason)
        if new is not updated:
            self.marked = True
        return new


def _scope_name(stmt: cst.CSTNode) -> str:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return f"`{stmt.name.value}`"
    if is_main_guard(stmt):
        return "the `__main__` block"
    return f"`{code(stmt, 40)}`"


def _module_todos(module: cst.Module, fw: Framework, created: list[tuple[str, cst.CSTNode]]) -> cst.Module:
    """A module with several workflows, or a workflow and no grader, gets a TODO above its (first new) workflow."""
    table = fw.table
    workflows = [s for s in module.body if isinstance(s, cst.ClassDef) and _is_workflow_class(s, table)]
    graders = [s for s in module.body if isinstance(s, cst.ClassDef) and _is_grader_class(s, table)]
    if not created:
        return module  # the markers are written by the run that creates the workflows (re-runs find them there)
    code_ = fw.code[:3]
    names = [w.name.value for w in workflows]
    body = list(module.body)
    targets = [w for w in workflows if w.name.value in {c for c, _ in created}] or workflows
    if not targets:
        return module
    first = body.index(targets[0])
    reasons: list[tuple[str, str]] = []
    if len(workflows) > 1:
        reasons.append((code_ + "94", f"this module now defines {len(workflows)} workflows "
                        f"({', '.join(f'`{n}`' for n in names)}): "
                        "discovery needs exactly one AgentWorkflow per entrypoint module — keep one here and move "
                        "the others to their own modules"))
    if created and not graders:
        if fw.target.startswith("0.3"):
            how = "`ctx.sample` (its `messages`) and `ctx.set_reward(value)`"
        else:
            how = "`ctx.samples` (each sample's `messages`) and `ctx.set_sample_reward(sample_id, value)`"
        reasons.append((code_ + "95", f"no Grader in this module: add `class …Grader(Grader)` whose `async def "
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


def migrate_plain(module: cst.Module, ctx: RuleContext, rule_code: str, framework, fallback) -> cst.Module:
    """A plain-framework rule's ``transform``: the module's framework (``framework(table, ctx)``, None when the
    module does not import it) — or ``fallback`` when the module only imports what another file of the run offers
    for this rule — then :func:`migrate_module`."""
    table = ImportTable.of(module)
    fw = framework(table, ctx)
    if fw is None:
        repo = ctx.repo
        if repo is None or not any(v.rule == rule_code for v in repo.imported(ctx.filename).values()):
            return module
        fw = fallback(table, ctx)
    return migrate_module(module, fw)


def fw_finish(module: cst.Module, fw: Framework) -> cst.Module:
    """Framework hook (e.g. module-level models), the prompt helper, then the imports."""
    if fw.prompt_text_needed:
        module = _add_prompt_helper(module, fw)
    # the names the module's statements use, taken before imports are added (new imports shift the statements)
    used = None
    body_counts = fw.body_counts
    if fw.replaced and body_counts is not None and len(body_counts) == len(module.body):
        used = set()
        for stmt, c in zip(module.body, body_counts):
            if not is_import_stmt(stmt):
                used.update(c)
    if fw.needs_asyncio and ImportTable.of(module).modules.get("asyncio") != "asyncio":
        module = _add_plain_import(module, "asyncio")
    for local, new in sorted(fw.import_aliases):
        module = _import_beside(module, local, new)
    if fw.needed:
        module = add_imports(module, fw.needed)
    if fw.replaced:
        module, removed = remove_unused_imports(module, fw.replaced, used=used)
        for name in removed:
            fw.ctx.edit(fw.code[:3] + "04", None, f"removed unused import `{name}`")
        if removed and module.body and not module.header:
            # an import removed from the very top leaves no blank line at the start of the file
            first = module.body[0]
            lines = list(first.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            if len(lines) != len(first.leading_lines):
                module = module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])
    return module


def _add_prompt_helper(module: cst.Module, fw: Optional["Framework"] = None) -> cst.Module:
    """Generate ``_prompt_text`` into the module (once) before its first class or function."""
    body = list(module.body)
    if any(isinstance(s, cst.FunctionDef) and s.name.value == PROMPT_TEXT for s in body):
        return module
    helper = prompt_helper_node()
    at = next((i for i, s in enumerate(body) if isinstance(s, (cst.FunctionDef, cst.ClassDef)) or (
        isinstance(s, cst.SimpleStatementLine) and assigned_name(s) is None and not is_import_stmt(s)
        and not is_docstring(s))), len(body))
    # after the imports at least
    last_import = max((i for i, s in enumerate(body) if is_import_stmt(s)), default=-1)
    at = max(at, last_import + 1)
    helper = with_blank_lines(helper.with_changes(leading_lines=[]))
    body.insert(at, helper)
    if fw is not None and fw.body_counts is not None:
        fw.body_counts.insert(at, {})  # the helper uses no import the clean-up could remove
    if at + 1 < len(body):
        body[at + 1] = with_blank_lines(body[at + 1])
    return module.with_changes(body=body)


def _apply_imported(model: "ModuleModel", fw: Framework, repo) -> set[str]:
    """What other files of the run offer for the names this module imports (their rollout versions, or why there
    is none) into ``model``; returns the local names concerned."""
    names: set[str] = set()
    for local, verdict in repo.imported(fw.ctx.filename).items():
        if verdict.rule != fw.code:
            continue
        names.add(local)
        kinds = {"agent": model.imported_agents, "class": model.imported_classes, "helper": model.imported_helpers}
        if verdict.rollout is None:
            model.imported_problems[local] = (
                f"it uses `{local}` from `{verdict.module}`, which cannot be migrated: {verdict.problem}")
            kinds.get(verdict.kind, {})[local] = ""  # still a runner for finding drivers: they get that TODO
        elif verdict.kind in kinds:
            kinds[verdict.kind][local] = verdict.rollout
    return names


def _import_beside(module: cst.Module, local: str, new: str) -> cst.Module:
    """Add ``new`` to the ``from … import`` statement that binds ``local`` (same module, relative dots kept)."""
    body = list(module.body)
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for j, small in enumerate(stmt.body):
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            bound = [a.evaluated_alias or a.evaluated_name for a in small.names]
            if new in bound:
                return module
            if local not in bound:
                continue
            names = list(small.names)
            if small.lpar is not None and isinstance(names[-1].comma, cst.Comma):
                names.append(cst.ImportAlias(name=cst.Name(new), comma=names[-1].comma))
            else:
                names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                names.append(cst.ImportAlias(name=cst.Name(new)))
            smalls = list(stmt.body)
            smalls[j] = small.with_changes(names=names)
            body[i] = stmt.with_changes(body=smalls)
            return module.with_changes(body=body)
    return module


def _agent_factory(model: "ModuleModel", fw: Framework, name: str, factory: str) -> Optional[cst.FunctionDef]:
    """``def <factory>(): …; return OsmosisAgent(...)``: the module-level agent ``name`` (and the module agents it
    references, e.g. handoffs) built per call as the Osmosis class on the placeholder model."""
    from codemods.plan.planner import DriverPlanner

    deps = sorted(_module_agent_deps(model, {name}) - {name}, key=lambda n: model.agents[n])
    stmts = [model.body[model.agents[d]] for d in (*deps, name)]
    plan = DriverPlanner(model, fw, Driver("factory", factory, [model.agents[name]], stmts, None), fw.target).run()
    fw.factory_problems[name] = "; ".join(plan.problems)
    if plan.problems:
        return None
    converted = [strip_comments(_emit_stmt(fw, plan, s).with_changes(leading_lines=[])) for s in stmts]
    last = assigned_value(converted[-1])
    body = [*converted[:-1], cst.SimpleStatementLine(body=[cst.Return(value=last)])]
    return cst.FunctionDef(
        name=cst.Name(factory),
        params=cst.Parameters(),
        body=cst.IndentedBlock(body=body),
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
    )


def _offered_copy(model: "ModuleModel", fw: Framework, name: str, new_name: str, kind: str) -> Optional[cst.CSTNode]:
    """The rollout version of a class or helper function another file uses (a comment-free converted copy)."""
    from codemods.plan.planner import DriverPlanner

    stub = DriverPlanner(model, fw, Driver("function", "__offer__", [], [], None), fw.target)
    stub.p = Plan(driver=stub.d, facts=body_facts_empty())
    if kind == "class":
        stub.plan_class(name)
        plans = stub.p.class_plans.get(name, [])
        if stub.p.problems or not plans:
            return None
        cls = model.body[model.classes[name]]
        by_id = {id(mp.driver.func): mp for mp in plans}
        methods = []
        for stmt in block_statements(cls.body):
            mp = by_id.get(id(stmt))
            if mp is None:
                methods.append(stmt)
                continue
            deps = [strip_comments(_emit_stmt(fw, mp, model.body[model.agents[d]]).with_changes(leading_lines=[]))
                    for d in mp.deps]
            inner = _emit_body(fw, mp, block_statements(stmt.body), drop_returns=False)
            methods.append(stmt.with_changes(body=stmt.body.with_changes(body=[*deps, *inner])))
        new = cls.with_changes(name=cst.Name(new_name), body=cls.body.with_changes(body=methods))
    else:
        func = model.body[model.functions[name]]
        driver = Driver("helper", name, [model.functions[name]], list(block_statements(func.body)), func)
        hplan = DriverPlanner(model, fw, driver, fw.target).run()
        if hplan.problems:
            return None
        deps = [strip_comments(_emit_stmt(fw, hplan, model.body[model.agents[d]]).with_changes(leading_lines=[]))
                for d in hplan.deps]
        inner = _emit_body(fw, hplan, block_statements(func.body), drop_returns=False)
        new = func.with_changes(name=cst.Name(new_name), body=func.body.with_changes(body=[*deps, *inner]),
                                decorators=_tool_named(fw, func, name))
    return strip_comments(new.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))


def _tool_named(fw: Framework, func: cst.FunctionDef, name: str) -> list:
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


def body_facts_empty():
    from codemods.analysis.body import BodyFacts

    return BodyFacts()


def offers_of(tree: cst.Module, fw: Framework, module_name: str, names: Sequence[str]) -> dict:
    """What ``tree`` can offer other files for ``names`` (used by :mod:`codemods.analysis.repo`): a rollout factory
    for a module-level agent, a rollout copy of a class whose methods run agents or of a helper — or why not."""
    from codemods.plan.planner import DriverPlanner
    from codemods.analysis.repo import Verdict

    counts = [name_counts(s) for s in tree.body]
    model = module_model(tree, fw, counts, fw.ctx.filename, {n: ["other modules"] for n in names})
    repo = fw.ctx.repo
    if repo is not None:  # what this exporter itself imports from files analysed before it
        _apply_imported(model, fw, repo)
    find_drivers(model, fw)
    out = {}
    for name in names:
        if name.endswith(("_for_rollout", "ForRollout")):
            continue  # already a rollout version (written by a previous run)
        if name in model.agents and name not in model.groups:
            factory = f"{name}_for_rollout"
            fn = _agent_factory(model, fw, name, factory)
            why = fw.factory_problems.get(name) or "it cannot be built on the rollout model"
            out[name] = Verdict("agent", module_name, name, factory if fn is not None else None,
                                "" if fn is not None else why, rule=fw.code)
        elif name in model.runner_classes and name in model.classes:
            stub = DriverPlanner(model, fw, Driver("function", "__offer__", [], [], None), fw.target)
            stub.p = Plan(driver=stub.d, facts=body_facts_empty())
            stub.plan_class(name)
            ok = not stub.p.problems
            out[name] = Verdict("class", module_name, name, f"{name}ForRollout" if ok else None,
                                "; ".join(stub.p.problems), rule=fw.code)
        elif name in model.runners and name in model.functions:
            func = model.body[model.functions[name]]
            driver = Driver("helper", name, [model.functions[name]], list(block_statements(func.body)), func)
            hplan = DriverPlanner(model, fw, driver, fw.target).run()
            ok = not hplan.problems
            out[name] = Verdict("helper", module_name, name, f"{name}_for_rollout" if ok else None,
                                "; ".join(hplan.problems), rule=fw.code)
    return out


def _add_plain_import(module: cst.Module, name: str) -> cst.Module:
    """``import name`` before the module's first import (after the docstring / ``__future__``)."""
    body = list(module.body)
    at = 0
    for i, stmt in enumerate(body):
        if i == 0 and is_docstring(stmt):
            at = 1
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.ImportFrom) \
                and isinstance(stmt.body[0].module, cst.Name) and stmt.body[0].module.value == "__future__":
            at = i + 1
            continue
        break
    new = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name(name))])])
    if at < len(body):
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=[])
    body.insert(at, new)
    return module.with_changes(body=body)


