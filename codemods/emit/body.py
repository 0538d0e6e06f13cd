"""Writing a driver's statements as its plan says (:class:`BodyEmitter`): constructors, runs, sessions, dropped
statements (their comments kept), returns whose value a workflow drops, the rollout prompt where the input was."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from codemods.analysis.body import code, names_in
from codemods.analysis.names import name_counts
from codemods.framework import Framework
from codemods.osmosis_api import prompt_text_expr
from codemods.plan.model import Plan, SessionPlan
from codemods.syntax import comments_of, kwarg, without_kwarg
from codemods.visit import Transformer, children as visit_children
from codemods.base import with_todo_comment, without_outdated_todos
from codemods.syntax import ascii_reason


def _mark_hot(node: cst.CSTNode, hot: set[int], ids: set[int], names: set[str], types: tuple[type, ...],
              fw: Framework, p: Plan) -> bool:
    """Add to ``hot`` the ids of the nodes under ``node`` (itself included) that a handler of :class:`BodyEmitter` may
    change, and of their ancestors; whether ``node`` is one (see :meth:`BodyEmitter.prepare`)."""
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


class BodyEmitter(Transformer):
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
                        *(k for k in self.runs if k in plan.runs), *plan.thread_calls, *plan.exits, *plan.text_nodes,
                        *plan.notes_at, *plan.sleeps, *plan.answers, *plan.consume,
                        *(id(c) for c, _ in plan.consume.values()), *plan.local_configs}
        self.consumed: dict[int, cst.Call] = {}  # id(generator call) → its rewritten form (for plan.consume)
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
            # the line goes; its comments stay (moved onto the next statement by settle); the imports it used may go
            self.fw.replaced.update(name_counts(original))
            placeholder = dropped_placeholder(comments_of(original))
            self.fw.where = original
            before = [self.fw.session_stmt(sp) for sp in self.before.get(id(original), [])]
            return cst.FlattenSentinel([placeholder, *before]) if before else placeholder
        out: list = []
        if isinstance(updated, cst.RemovalSentinel):
            return updated
        if id(original) in p.consume:
            return self._consume(original, updated)
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
        note = p.notes_at.get(id(original))
        if note is not None:  # one note per statement: a marker of its code with another text is outdated
            updated = with_todo_comment(without_outdated_todos(updated, note[0], [ascii_reason(note[1])]), note[0],
                                        ascii_reason(note[1]))
            self.fw.ctx.todo(note[0], original, ascii_reason(note[1]))
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

    def _consume(self, original, updated):
        """``return StreamingResponse(gen(q))`` → ``async for _ in gen(q): pass`` (then ``return``): the stream a
        client would have read, read by run()."""
        call, is_async = self.p.consume[id(original)]
        self.impure = []  # the response around the generator is not built
        self.fw.replaced.update(name_counts(original))
        loop = cst.For(target=cst.Name("_"), iter=self.consumed.get(id(call), call),
                       body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]),
                       asynchronous=cst.Asynchronous() if is_async else None, leading_lines=updated.leading_lines)
        if isinstance(original.body[0], cst.Return):
            return cst.FlattenSentinel([loop, cst.SimpleStatementLine([cst.Return()])])
        return loop

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        body, footer = settle(list(updated.body), list(updated.footer))
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body, footer=footer)

    def leave_Return(self, original: cst.Return, updated: cst.Return):
        if self.drop_returns and updated.value is not None and not self.nested:
            # a workflow's result is its samples: values go, effects stay (`return agent(q)` still runs the agent)
            self.impure.extend(_effects(updated.value))
            return updated.with_changes(value=None, whitespace_after_return=cst.MaybeSentinel.DEFAULT)
        return updated

    def leave_Await(self, original: cst.Await, updated: cst.Await):
        if isinstance(updated.expression, cst.Await):
            return updated.expression
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        p, fw = self.p, self.fw
        if p.consume and any(c is original for c, _ in p.consume.values()):
            self.consumed[id(original)] = updated
        if id(original) in self.session_ctors:
            fw.note_replaced(original.func)
            self.lose(original)
            return fw.session_ctor(self.session_ctors[id(original)])
        if id(original) in p.model_assigns:
            fw.note_replaced(original.func)
            self.lose(original)
            return p.model_assigns[id(original)]
        if id(original) in p.local_configs:
            return strip_run_config(fw, original, updated, fw.where, self.lose)
        plan = p.ctors.get(id(original))
        if plan is not None and not (plan.plain and plan.model is None):  # (a plain agent already on the rollout model)
            if plan.model is not None:  # the old model argument goes: its comments stay
                old = kwarg(original, "model") or (original.args[0] if fw.positional_model(original) is not None else None)
                if old is not None:
                    self.lose(old)
            return fw.write_ctor(updated, plan)
        run = self.runs.get(id(original))
        if run is not None and id(original) in p.runs and p.runs[id(original)].changes:
            rp = p.runs[id(original)]
            if rp.input in ("prompt", "text", "drop") and run.shape.input_arg is not None:
                self.lose(run.shape.input_arg)
            if rp.drop_run_config_model:
                cfg = kwarg(original, "run_config")
                if cfg is not None and isinstance(cfg.value, cst.Call):
                    for key in RUN_CONFIG_MODEL:
                        if kwarg(cfg.value, key) is not None:
                            self.lose(kwarg(cfg.value, key))
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
        if id(original) in p.answers:
            fw.note_replaced(original.func)  # the confirmation's declared default: a rollout has no one to ask
            return p.answers[id(original)]
        if id(original) in p.sleeps:
            # time.sleep(s) in run(): the same pause, without blocking the rollout server's event loop
            fw.needs_asyncio = True
            fw.note_replaced(original.func)
            return cst.Await(expression=updated.with_changes(
                func=cst.Attribute(value=cst.Name("asyncio"), attr=cst.Name("sleep"))))
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


def dropped_placeholder(comments: list[cst.EmptyLine]) -> cst.SimpleStatementLine:
    """A placeholder for a removed statement that carries its comments until :func:`settle` places them."""
    return cst.SimpleStatementLine(body=[cst.Expr(cst.Name(_DROPPED))], leading_lines=comments)


def _is_dropped(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Name)
        and stmt.body[0].value.value == _DROPPED
    )


def settle(body: list, footer: list) -> tuple[list, list]:
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


def _effects(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The parts of a dropped value that do something (``str(await agent.invoke_async(q))`` → the run;
    ``{"answer": result.final_output}`` → nothing): pure wrappers, containers and attribute reads go."""
    if _is_pure(expr):
        return []
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _PURE_CALLS:
        return [e for a in expr.args for e in _effects(a.value)]
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _PURE_METHODS:
        return [*_effects(expr.func.value), *(e for a in expr.args for e in _effects(a.value))]
    if isinstance(expr, (cst.Tuple, cst.List)):
        return [e for el in expr.elements for e in _effects(el.value)]
    if isinstance(expr, cst.Dict):
        return [e for el in expr.elements if isinstance(el, cst.DictElement) for e in (*_effects(el.key), *_effects(el.value))]
    if isinstance(expr, cst.Attribute) and not isinstance(expr.value, (cst.Name, cst.Attribute)):
        return _effects(expr.value)  # `(await run(...)).final_output`: the run
    if isinstance(expr, cst.FormattedString):
        return [e for part in expr.parts if isinstance(part, cst.FormattedStringExpression) for e in _effects(part.expression)]
    return [expr]


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


def emit_body(fw: Framework, plan: Plan, stmts: Sequence[cst.BaseStatement], drop_returns: bool) -> list:
    """The statements of a driver, converted; comments of dropped trailing statements land in ``plan.tail``."""
    emitter = BodyEmitter(fw, plan, drop_returns)
    out: list = []
    for stmt in stmts:
        emitter.prepare(stmt)
        new = stmt.visit(emitter)
        if isinstance(new, cst.FlattenSentinel):
            out.extend(new.nodes)
        elif not isinstance(new, cst.RemovalSentinel):
            out.append(new)
    body, tail = settle(out, [])
    plan.tail = tail
    return body


def plan_tail(plan: Plan) -> list:
    return list(plan.tail)


def emit_stmt(fw: Framework, plan: Plan, stmt: cst.BaseStatement) -> cst.BaseStatement:
    emitter = BodyEmitter(fw, plan, drop_returns=False)
    emitter.prepare(stmt)
    new = stmt.visit(emitter)
    assert isinstance(new, cst.BaseStatement)
    return new


RUN_CONFIG_MODEL = ("model", "model_provider")  # what a RunConfig sets that the rollout placeholder replaces


def strip_run_config(fw: Framework, original: cst.Call, updated: cst.Call, where: object,
                     lose: Optional[Callable[[cst.CSTNode], None]] = None) -> cst.Call:
    """``RunConfig(model=…, model_provider=…, …)`` without the arguments that would override the rollout's
    placeholder model (``model_provider`` only resolved model names for it); the names they read become import
    candidates, their comments are kept through ``lose``."""
    new = updated
    gone = []
    for key in RUN_CONFIG_MODEL:
        arg = kwarg(original, key)
        if arg is not None:
            if lose is not None:
                lose(arg)
            fw.replaced.update(n.value for n in names_in(arg.value))
            new = without_kwarg(new, key)
            gone.append(f"`{key}=`")
    fw.ctx.edit(fw.codes.model.code, where, f"RunConfig: {' and '.join(gone)} removed (the agents run on the rollout "
                "placeholder model)")
    return new
