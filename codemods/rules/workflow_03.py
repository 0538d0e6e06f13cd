"""``workflow-0.3`` (OM500): AgentWorkflow / Grader code written for osmosis-ai 0.2 → the 0.3 API (``--target 0.3``).

osmosis-ai 0.3 keeps one sample per rollout and shipped no tool for its own break (spec/workflow-api.md §6). With
``ctx.target == "0.3"`` this rule rewrites, in any file that imports ``osmosis_ai``:

* a grader's ``for sid, sample in ctx.samples.items(): … ctx.set_sample_reward(sid, r)`` → ``sample = ctx.sample``
  and the same body with ``ctx.set_reward(r)`` (OM501) — when the id is used for nothing else;
* ``ctx.register_sample_source(name, source)`` → ``ctx.set_sample_source(source)`` (OM502);
* ``OsmosisMemorySession(name=…)`` / ``OsmosisMemorySession("…")`` → ``OsmosisMemorySession()`` (OM503);
* ``from osmosis_ai.rollout import create_rollout_server`` → ``from osmosis_ai.rollout.server import …`` (OM504;
  the Strands/OpenAI integration names are moved by the ``imports`` rule).

What cannot move gets a TODO (OM590): other uses of ``ctx.samples`` / ``set_sample_reward`` / ``get_samples()``, and a
workflow that builds several sample sources (more than one ``OsmosisStrandsAgent`` / ``OsmosisMemorySession`` in one
``run``) — 0.3 accepts one per rollout. With target "0.2" the rule does nothing.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from codemods import codes
from codemods.base import ImportTable, Rule, RuleContext, dotted_name, has_skip_marker, with_todo_comment
from codemods.visit import Transformer, visit as fast_visit

SERVER = "osmosis_ai.rollout.server"
_SOURCES = ("OsmosisStrandsAgent", "OsmosisMemorySession")


class Workflow03Rule(Rule):
    """0.2 workflows and graders → the 0.3 API (one sample per rollout)."""

    code = codes.WORKFLOW03.code
    name = "workflow-0.3"
    summary = "osmosis-ai 0.2 workflows/graders → 0.3 (ctx.sample + set_reward, unnamed sessions, server import); --target 0.3"
    trigger_words = ("osmosis_ai",)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        if ctx.target != "0.3":
            return module
        if module is ctx.origin and ctx.source is not None \
                and not any(w.encode() in ctx.source for w in (*_ACTS_ON, *_SOURCES, "create_rollout_server")):
            return module  # the unchanged input names none of what the transform acts on (a bytes search)
        if not _may_change(module):
            return module  # as it is: a rebuilt tree would cost a whole transform and lose the input's identities
        table = ImportTable.of(module)
        return module.visit(_To03(ctx, table))


class _To03(Transformer):
    def __init__(self, ctx: RuleContext, table: ImportTable) -> None:
        self.ctx, self.table = ctx, table
        self.todo_stack: list[list[str]] = []  # reasons collected for the statement being rebuilt
        self.handled: set[int] = set()  # set_sample_reward calls / ctx.samples reads a grader-loop rewrite takes care of
        # the run() being walked that builds several sample sources: it gets the OM590 TODO when it is left
        self.pending_run_todo: Optional[cst.FunctionDef] = None

    # ------------------------------------------------------------------ statements (TODO markers attach here)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> Optional[bool]:
        self.todo_stack.append([])
        return not has_skip_marker(node)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        reasons = self.todo_stack.pop()
        return self._mark(original, updated, reasons)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        if has_skip_marker(node):
            return False
        if node.name.value == "run" and isinstance(node.body, cst.IndentedBlock):
            built = [n for n in _calls(node) if (dotted_name(n.func) or "").rpartition(".")[2] in _SOURCES
                     and self._is_osmosis(n.func)]
            if len(built) > 1:
                self.pending_run_todo = node
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if self.pending_run_todo is original:
            self.pending_run_todo = None
            reason = ("this run() builds several sample sources (OsmosisStrandsAgent / OsmosisMemorySession); "
                      "osmosis-ai 0.3 takes one per rollout (set_sample_source raises on a second): keep one, or "
                      "merge the conversations into one agent/session")
            self.ctx.todo(codes.W03_TODO.code, original, reason)
            return with_todo_comment(updated, codes.W03_TODO.code, reason)
        return updated

    def visit_For(self, node: cst.For) -> Optional[bool]:
        found = self._grader_parts(node)
        if found is not None:
            self.handled.update(id(n) for n in found)
        return True

    def leave_For(self, original: cst.For, updated: cst.For):
        new = self._grader_loop(updated)
        if new is None:
            return updated
        self.ctx.edit(codes.W03_GRADER.code, original, "ctx.samples.items() loop → sample = ctx.sample; set_sample_reward → set_reward")
        first = new[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel([first, *new[1:]])

    # ------------------------------------------------------------------ expressions

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "register_sample_source" and len(updated.args) == 2:
            self.ctx.edit(codes.W03_SOURCE.code, self.ctx.module, "register_sample_source(name, source) → set_sample_source(source)")
            return updated.with_changes(func=func.with_changes(attr=cst.Name("set_sample_source")),
                                        args=[updated.args[1].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                                                                           comma=cst.MaybeSentinel.DEFAULT)])
        if (dotted_name(func) or "").rpartition(".")[2] == "OsmosisMemorySession" and self._is_osmosis(func) and updated.args:
            if len(updated.args) == 1 and (updated.args[0].keyword is None or updated.args[0].keyword.value == "name"):
                self.ctx.edit(codes.W03_SESSION.code, None, "OsmosisMemorySession(name=…) → OsmosisMemorySession() (0.3 sessions have no name)")
                return updated.with_changes(args=[])
        if isinstance(func, cst.Attribute) and func.attr.value in ("set_sample_reward", "get_samples") and self.todo_stack \
                and id(original) not in self.handled:
            self.todo_stack[-1].append(
                f"`{func.attr.value}` is gone in osmosis-ai 0.3 (one sample per rollout): use ctx.sample / "
                "ctx.set_reward(reward) (graders) or get_sample() (rollout context)")
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        if updated.attr.value == "samples" and self.todo_stack and id(original) not in self.handled \
                and isinstance(updated.value, cst.Name) \
                and updated.value.value in ("ctx", "grader_ctx", "context"):
            self.todo_stack[-1].append("`ctx.samples` is gone in osmosis-ai 0.3: a grader has one `ctx.sample`")
        return updated

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        return updated

    def leave_Module(self, original: cst.Module, updated: cst.Module):
        body: list[cst.BaseStatement] = []
        for stmt in updated.body:
            moved = _server_import(stmt)
            if moved:
                imp = stmt.body[0]
                keep = [a for a in imp.names if a not in moved]
                self.ctx.edit(codes.W03_SERVER.code, None,
                              "create_rollout_server now imported from osmosis_ai.rollout.server")
                new_imp = cst.SimpleStatementLine([cst.ImportFrom(
                    module=cst.parse_expression(SERVER),
                    names=[moved[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])])
                if keep:
                    comma = imp.names[-1].comma if imp.lpar else cst.MaybeSentinel.DEFAULT
                    keep[-1] = keep[-1].with_changes(comma=comma)
                    body.append(stmt.with_changes(body=[imp.with_changes(names=keep)]))
                    body.append(new_imp)
                else:
                    body.append(new_imp.with_changes(leading_lines=stmt.leading_lines))
                continue
            body.append(stmt)
        return updated.with_changes(body=body)

    # ------------------------------------------------------------------ helpers

    def _is_osmosis(self, func: cst.BaseExpression) -> bool:
        resolved = self.table.resolve(func)
        if resolved is not None:
            return resolved.startswith("osmosis_ai")
        return any(m.startswith("osmosis_ai") for m in self.table.stars)

    def _mark(self, original, updated, reasons: list[str]):
        for reason in dict.fromkeys(reasons):
            self.ctx.todo(codes.W03_TODO.code, original, reason)
            updated = with_todo_comment(updated, codes.W03_TODO.code, reason)
        return updated

    def _grader_loop(self, loop: cst.For) -> Optional[list[cst.BaseStatement]]:
        parts = self._grader_parts(loop)
        if parts is None:
            return None
        call, _ = parts
        sample = loop.target.elements[1].value.value
        ctx_name = loop.iter.func.value.value.value
        body = loop.body.visit(_SetRewardSwap(call))
        head = cst.parse_statement(f"{sample} = {ctx_name}.sample\n")
        return [head, *body.body]

    def _grader_parts(self, loop: cst.For) -> Optional[tuple[cst.Call, cst.Attribute]]:
        """(the set_sample_reward call, the ctx.samples read) of a ``for sid, s in ctx.samples.items()`` grader
        loop that can become ``s = ctx.sample``; None for any other loop."""
        it = loop.iter
        if not (isinstance(it, cst.Call) and not it.args and isinstance(it.func, cst.Attribute)
                and it.func.attr.value == "items" and isinstance(it.func.value, cst.Attribute)
                and it.func.value.attr.value == "samples" and isinstance(it.func.value.value, cst.Name)):
            return None
        t = loop.target
        if not (isinstance(t, cst.Tuple) and len(t.elements) == 2 and all(isinstance(e.value, cst.Name) for e in t.elements)):
            return None
        sid, sample = (e.value.value for e in t.elements)
        if loop.orelse is not None or not isinstance(loop.body, cst.IndentedBlock):
            return None
        rewards = []
        for n in _walk_nodes(loop.body):
            if isinstance(n, (cst.Break, cst.Continue)):
                return None
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "set_sample_reward":
                rewards.append(n)
        sid_uses = [n for n in _walk_nodes(loop.body) if isinstance(n, cst.Name) and n.value == sid]
        if len(rewards) != 1 or len(sid_uses) != 1 or not (len(rewards[0].args) == 2 and rewards[0].args[0].value is sid_uses[0]):
            return None
        return rewards[0], it.func.value


class _SetRewardSwap(Transformer):
    """Turns the one ``call`` (by identity), ``ctx.set_sample_reward(sid, r)``, into ``ctx.set_reward(r)``."""

    def __init__(self, call: cst.Call) -> None:
        super().__init__()
        self.call = call

    def leave_Call(self, o: cst.Call, u: cst.Call):
        if o is self.call:
            return u.with_changes(func=u.func.with_changes(attr=cst.Name("set_reward")),
                                  args=[u.args[1].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        return u


def _server_import(stmt: cst.BaseStatement) -> list[cst.ImportAlias]:
    """The ``create_rollout_server`` aliases of a top-level ``from osmosis_ai(.rollout) import …`` line (OM504)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.ImportFrom):
        imp = stmt.body[0]
        if not imp.relative and imp.module is not None and not isinstance(imp.names, cst.ImportStar) \
                and dotted_name(imp.module) in ("osmosis_ai.rollout", "osmosis_ai"):
            return [a for a in imp.names if dotted_name(a.name) == "create_rollout_server"]
    return []


_ACTS_ON = ("samples", "set_sample_reward", "register_sample_source", "get_samples", "OsmosisMemorySession")


class _Names(cst.CSTVisitor):
    """The names of a module, and the most sample-source names (``_SOURCES``) one ``run`` def holds."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.runs: list[int] = []  # per enclosing `run` def: the source names seen in it
        self.most = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "run":
            self.runs.append(0)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "run":
            self.most = max(self.most, self.runs.pop())

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)
        if node.value in _SOURCES and self.runs:
            self.runs = [n + 1 for n in self.runs]


def _may_change(module: cst.Module) -> bool:
    """Whether :class:`_To03` can change anything in ``module`` — a superset, read without rebuilding the tree:
    everything it acts on is a name (an attribute's name included): ``samples`` reads and loops,
    ``set_sample_reward``/``get_samples``/``register_sample_source`` calls, ``OsmosisMemorySession(…)``; a ``run``
    building several sources names ``_SOURCES`` twice; a ``create_rollout_server`` import moves only from a
    top-level ``from osmosis_ai(.rollout) import`` line (which the transform never changes before it moves it)."""
    found = _Names()
    fast_visit(module, found)
    if found.most > 1 or any(w in found.names for w in _ACTS_ON):
        return True
    return "create_rollout_server" in found.names and any(_server_import(stmt) for stmt in module.body)


def _walk_nodes(node: cst.CSTNode):
    yield node
    for kid in node.children:
        yield from _walk_nodes(kid)


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in _walk_nodes(node) if isinstance(n, cst.Call)]
