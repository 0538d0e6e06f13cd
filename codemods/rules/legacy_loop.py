"""``legacy-loop`` (OM300): a legacy ``RolloutAgentLoop`` subclass → an ``AgentWorkflow`` + a ``Grader`` that need
osmosis-ai only.

**Rewrite** (``--strategy auto`` or ``rewrite``): the loop keeps its own code — same class name, members, tool
code and control flow — and only the legacy API it calls is translated (analysis:
``_legacy_loop_analysis.py``, plan: ``_legacy_loop_plan.py`` / ``_legacy_loop_reward.py``, emit:
``_legacy_loop_emit.py``), so no shape of the loop's tool code has to be recognised:

* the class becomes an ``AgentWorkflow`` subclass; ``run(self, ctx)`` keeps its body: ``await ctx.chat(messages,
  …)`` → ``await _chat(messages, tools, …)`` (a helper written into the file: one streaming call to the rollout's
  chat endpoint, aggregated into a reply with the legacy ``CompletionsResult`` surface; ``tools`` =
  ``self.get_tools(…)`` once per rollout), ``ctx.request.messages`` → ``ctx.prompt``, ``ctx.request.metadata`` →
  ``(ctx.metadata or {})``, ``ctx.request.max_turns`` / ``max_tokens_total`` → class attributes with the legacy
  defaults, ``return ctx.complete(messages, …)`` → ``return messages``, ``return ctx.error(msg)`` → ``raise
  RuntimeError(msg)``, ``ctx.record_tool_call`` / ``ctx.log_event`` statements dropped (OM301);
* the reward becomes ``<Stem>Grader``: the statements of ``run()`` computing it move into ``grade()`` when they read
  only the final messages, the metadata / label and the module's or class's helpers; otherwise run() hands the
  value over in the sample's metrics; a loop that passes no reward gets a documented starting rule (OM394);
* legacy schema classes become the dicts they serialised to (OM305), legacy SDK helpers are written into the file
  (OM304), ``__init__`` takes the workflow config (``config=None``).

**Wrap** (only ``--strategy wrap``): the class stays and ``<Name>Workflow, <Name>Grader = loop_as_workflow(<Class>)``
follows it (OM302), with TODO OM395 saying the file now needs osmosis-compat.

**Serving lines** (both): ``agent_loop = X()`` / ``app = create_app(agent_loop, …)`` (module level or in a function)
become ``backend = LocalBackend(workflow=…, workflow_config=…, grader=…)`` / ``app = create_rollout_server(…)``
(OM303); ``max_concurrent`` becomes the config's ``concurrency`` (legacy default 100 when absent); ``api_key`` stays,
as ``create_rollout_server(api_key=…)``, at target 0.3 (0.2.31's takes none); other ``create_app`` arguments are
listed in an OM391 TODO.

TODOs: OM390 a loop that is not rewritten (the precise reason); OM391 ``create_app`` arguments with no equivalent;
OM392 a loop class inside a function, or several workflows in one module; OM393/OM394 rewards; OM395 an explicit
wrap; OM396 legacy names the file still imports; OM397 how to serve a workflow whose ``__init__`` takes arguments.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods import codes

from codemods.base import (
    ImportTable,
    Rule,
    RuleContext,
    dotted_name,
    has_skip_marker,
    has_todo_comment,
    with_todo_comment,
    without_todo_comments,
)
from codemods.rules._legacy_loop_analysis import LOOP_BASES, ModuleIndex, _walk, analyse_loop, src, walk_cache
from codemods.rules._legacy_loop_emit import (
    LEGACY_MAX_CONCURRENT,
    backend_statement,
    grader_class,
    rewrite_class,
    server_call,
    wrap_statement,
)
from codemods.rules._legacy_loop_helpers import CHAT_LEGACY_ERRORS, inline_legacy_helpers, loop_helper_statements
from codemods.rules._legacy_loop_imports import edit_imports
from codemods.rules._legacy_loop_names import TRANSLATED, breaks_on_03, is_legacy_only, legacy_name
from codemods.rules._legacy_loop_plan import Refusal, RewritePlan, plan_rewrite, stem
from codemods.visit import Transformer

ROLLOUT = "osmosis_ai.rollout"
CREATE_APP = (
    "osmosis_ai.create_app",
    "osmosis_ai.rollout.create_app",
    "osmosis_ai.rollout.server.create_app",
    "osmosis_ai.rollout.server.app.create_app",
)
ADAPTER = ("osmosis_compat.adapters", "loop_as_workflow")
SERVER_03 = "osmosis_ai.rollout.server"  # 0.3 dropped the re-export of create_rollout_server from osmosis_ai.rollout
#: what a rewrite may import (a superset: the names the written code does not use are pruned again)
REWRITE_IMPORTS = ("AgentWorkflow", "AgentWorkflowContext", "AgentWorkflowOutput", "Grader", "GraderContext",
                   "RolloutSample", "get_rollout_context", "LocalBackend", "AgentWorkflowConfig", "ConcurrencyConfig",
                   "create_rollout_server")
WRAP_TODO = (
    "this loop still runs on osmosis-compat, not on osmosis-ai alone: loop_as_workflow (osmosis_compat.adapters) "
    "serves it unchanged. Keep osmosis-compat installed where it is served, or port the loop to an AgentWorkflow + "
    "Grader (osmosis-migrate --strategy rewrite says what stops the rewrite)"
)


@dataclass
class _Site:
    """A ``create_app(<loop>, …)`` call serving a loop class: where it is and what it was given."""

    call: cst.Call
    call_stmt: cst.BaseStatement
    class_name: str
    var_stmt: Optional[cst.SimpleStatementLine]  # `V = X(…)` feeding it, if any
    var: Optional[str]
    build: Optional[cst.Call]  # the `X(…)` call that builds the instance it serves
    kwargs: dict[str, cst.BaseExpression] = field(default_factory=dict)
    # the other arguments (max_concurrent aside): (keyword, or None for a positional or ``**`` one; its source)
    other: list[tuple[Optional[str], str]] = field(default_factory=list)


@dataclass
class _Decision:
    kind: str  # "rewrite" | "wrap" | "todo"
    plan: Optional[RewritePlan] = None
    reason: str = ""


class LegacyLoopRule(Rule):
    """RolloutAgentLoop → AgentWorkflow + Grader (the loop's own code, the legacy API translated), or a wrap."""

    code = codes.LEGACY.code
    name = "legacy-loop"
    summary = "RolloutAgentLoop → AgentWorkflow + Grader (the loop's code kept, its legacy API translated) or a wrap"
    trigger_words = ("RolloutAgentLoop",)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        if not any(isinstance(s, (cst.ClassDef, cst.FunctionDef)) for s in module.body):
            return module
        with walk_cache():
            return _Migration(module, ctx).run()


class _Migration:
    def __init__(self, module: cst.Module, ctx: RuleContext) -> None:
        self.module, self.ctx = module, ctx
        self.table = ImportTable.of(module)
        self.index = ModuleIndex.of(module, self.table)
        self.needed: list[tuple[str, str]] = []
        self.removed_refs: set[str] = set()
        self.used_names: set[str] = set(self.index.bound)
        self.per_stmt = ctx.top_level_name_counts(module)  # per top-level statement, from CPython's ast (or None)
        self.backends: dict[int, str] = {}  # id(site) → backend variable
        self.wrap_after: dict[str, tuple[int, str]] = {}
        self.served: list[_Site] = []
        self.refused: set[str] = set()  # loop classes left with an OM390
        self.helpers_written: set[str] = set()  # loop helpers generated into the file so far
        self._ast_functions: Optional[dict[str, ast.AST]] = None
        self.legacy_locals = {local: legacy_name(q) for local, q in self.table.names.items() if legacy_name(q)}

    # ---------------------------------------------------------------------------------------------- finding

    def is_loop(self, cls: cst.ClassDef) -> bool:
        return any(self.table.matches(b.value, LOOP_BASES) for b in cls.bases)

    def may_define_class(self, func: cst.FunctionDef) -> bool:
        """Whether a top-level function can define a class, from CPython's ast of the input when it has one
        (a walk of it is much cheaper than a libcst walk of the function)."""
        node = self.ast_functions().get(func.name.value)
        if node is None:
            return True
        return any(isinstance(n, ast.ClassDef) for n in ast.walk(node))

    def ast_functions(self) -> dict[str, ast.AST]:
        """Top-level functions of the input's ast by name (names defined once only); {} when the module is not the
        input or the driver gave no ast."""
        if self._ast_functions is None:
            tree = self.ctx.tree if self.module is self.ctx.origin else None
            found: dict[str, list[ast.AST]] = {}
            for n in tree.body if tree is not None else ():
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found.setdefault(n.name, []).append(n)
            self._ast_functions = {k: v[0] for k, v in found.items()
                                   if len(v) == 1 and isinstance(v[0], (ast.FunctionDef, ast.AsyncFunctionDef))}
        return self._ast_functions

    def wrapped_already(self) -> set[str]:
        out: set[str] = set()
        if not any(q.endswith(".loop_as_workflow") for q in self.table.names.values()) and not any(
            m.startswith("osmosis_compat") for m in self.table.stars
        ):
            return out
        for node in _walk(self.module):
            if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("loop_as_workflow") and node.args:
                arg = node.args[0].value
                if isinstance(arg, cst.Call):
                    arg = arg.func
                name = dotted_name(arg)
                if name is not None:
                    out.add(name)
                    value = self.index.single_assign(name)
                    if isinstance(value, cst.Call) and dotted_name(value.func):
                        out.add(dotted_name(value.func))
        return out

    def sites(self, loops: set[str]) -> list[_Site]:
        """The create_app calls serving a loop of ``loops``: at module level and in top-level functions."""
        heads = {local for local, q in self.table.names.items() if q in CREATE_APP} | set(self.table.modules)
        if any(m in ("osmosis_ai", "osmosis_ai.rollout") for m in self.table.stars):
            heads.add("create_app")
        mentions = None
        if self.per_stmt is not None:  # statements that cannot name create_app (per CPython's ast) are not walked
            mentions = {id(st) for st, counts in zip(self.module.body, self.per_stmt) if heads & counts.keys()}
        blocks: list[list[cst.BaseStatement]] = [list(self.module.body)]
        blocks += [list(s.body.body) for s in self.module.body
                   if isinstance(s, cst.FunctionDef) and isinstance(s.body, cst.IndentedBlock)
                   and (mentions is None or id(s) in mentions)]
        out: list[_Site] = []
        for depth, stmts in enumerate(blocks):
            defs: dict[str, tuple[cst.SimpleStatementLine, str]] = {}
            for stmt in stmts:
                if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
                    continue
                if depth > 0 or mentions is None or id(stmt) in mentions:
                    out += self.sites_in(stmt, defs, loops)
                if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
                    a = stmt.body[0]
                    if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Call) \
                            and isinstance(a.value.func, cst.Name) and a.value.func.value in loops:
                        defs[a.targets[0].target.value] = (stmt, a.value.func.value)
        return out

    def sites_in(self, stmt: cst.BaseStatement, defs: dict, loops: set[str]) -> list[_Site]:
        out: list[_Site] = []
        for node in _walk(stmt):
            if not (isinstance(node, cst.Call) and node.args and self.table.matches(node.func, CREATE_APP)):
                continue
            first = node.args[0]
            cls_name = var = var_stmt = build = None
            if first.keyword is None and not first.star:
                if isinstance(first.value, cst.Name) and first.value.value in defs:
                    var = first.value.value
                    var_stmt, cls_name = defs[var]
                    build = var_stmt.body[0].value
                elif isinstance(first.value, cst.Call) and isinstance(first.value.func, cst.Name) \
                        and first.value.func.value in loops:
                    cls_name, build = first.value.func.value, first.value
            if cls_name is None:
                continue
            site = _Site(node, stmt, cls_name, var_stmt, var, build)
            for pos, arg in enumerate(node.args[1:]):
                if pos == 0 and arg.keyword is None and not arg.star:
                    site.kwargs["max_concurrent"] = arg.value  # create_app(agent_loop, max_concurrent, …)
                elif arg.keyword is not None and not arg.star:
                    site.kwargs[arg.keyword.value] = arg.value
                    if arg.keyword.value != "max_concurrent":
                        site.other.append((arg.keyword.value, self.module.code_for_node(arg).strip().rstrip(",")))
                else:
                    site.other.append((None, self.module.code_for_node(arg).strip().rstrip(",")))
            out.append(site)
        return out

    def name_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        if self.per_stmt is not None:  # from CPython's ast: no libcst walk
            for stmt_counts in self.per_stmt:
                for k, v in stmt_counts.items():
                    counts[k] = counts.get(k, 0) + v
            return counts
        for node in _walk(self.module):
            if isinstance(node, cst.Name):
                counts[node.value] = counts.get(node.value, 0) + 1
        return counts

    # ---------------------------------------------------------------------------------------------- deciding

    def decide(self, cls: cst.ClassDef, loops: list[cst.ClassDef], sites: list[_Site], taken: set[str]) -> _Decision:
        if self.ctx.strategy == "wrap":
            reason = self.wrap_blocker(cls)
            return _Decision("wrap") if reason is None else _Decision("todo", reason=reason)
        reason = self.module_blocker(cls, loops, sites)
        if reason is not None:
            return _Decision("todo", reason=reason)
        facts = analyse_loop(cls, self.table)
        served = any(s.class_name == cls.name.value for s in sites)
        plan = plan_rewrite(facts, target=self.ctx.target, module_names=self.index.bound, taken=taken, served=served)
        if isinstance(plan, Refusal):
            return _Decision("todo", reason=plan.reason)
        taken.add(plan.grader)
        return _Decision("rewrite", plan)

    def wrap_blocker(self, cls: cst.ClassDef) -> Optional[str]:
        """Why ``loop_as_workflow`` cannot wrap ``cls`` at import time: it builds the loop without arguments, so
        an ``__init__`` with required parameters needs an instance the module builds (that one is wrapped)."""
        name = cls.name.value
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
                value = stmt.body[0].value
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == name:
                    return None
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
        init = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None:
            return None
        p = init.params
        required = [x.name.value for x in (*p.posonly_params, *p.params)[1:] if x.default is None]
        required += [x.name.value for x in p.kwonly_params if x.default is None]
        if required:
            return (f"its __init__ needs arguments ({', '.join(required)}) and the module builds no instance at top "
                    f"level: loop_as_workflow({name}) would build it without them and fail at import")
        return None

    def module_blocker(self, cls: cst.ClassDef, loops: list[cst.ClassDef], sites: list[_Site]) -> Optional[str]:
        """Why the module's own use of ``cls`` stops the rewrite: a subclass of it here, its instances handed to
        legacy-only API (the legacy registry, …), or a name the rewrite imports bound to something else."""
        name = cls.name.value
        for other in self.module.body:
            if isinstance(other, cst.ClassDef) and other is not cls and any(
                    isinstance(b.value, cst.Name) and b.value.value == name for b in other.bases):
                return f"{other.name.value} subclasses it in this module: rewrite the two together by hand"
        for new in REWRITE_IMPORTS:
            if new in self.index.bound and not (self.table.binds(new, f"{ROLLOUT}.{new}")
                                                or self.table.binds(new, f"{SERVER_03}.{new}")):
                return f"`{new}`, a name the rewrite imports, is bound to something else in this module"
        legacy_only = {local for local, q in self.table.names.items() if is_legacy_only(q)}
        if not legacy_only:
            return None
        refs = {name} | {v for v, value in self.index.assigns.items()
                         if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == name}
        skip = {id(cls)} | {id(s.call_stmt) for s in sites} | {id(s.var_stmt) for s in sites if s.var_stmt is not None}
        for stmt in self.module.body:
            if id(stmt) in skip or isinstance(stmt, cst.ClassDef) and stmt in loops:
                continue
            names = self.ctx.statement_names(stmt)
            if names & refs and names & legacy_only:
                where = f"{stmt.name.value}()" if isinstance(stmt, cst.FunctionDef) else f"`{src(stmt, 40)}`"
                return (f"the module hands {name} to the legacy API ({', '.join(sorted(names & legacy_only))}) in "
                        f"{where}: osmosis-ai 0.3 has no equivalent of it")
        return None

    # ---------------------------------------------------------------------------------------------- rewriting

    def run(self) -> cst.Module:
        loops = [s for s in self.module.body if isinstance(s, cst.ClassDef) and self.is_loop(s)]
        nested = [s for s in self.module.body if isinstance(s, cst.FunctionDef) and self.may_define_class(s) and any(
            isinstance(n, cst.ClassDef) and self.is_loop(n) for n in _walk(s.body))]
        if not loops and not nested:
            return self.module
        done = self.wrapped_already()
        todo_loops = [c for c in loops if c.name.value not in done and not has_skip_marker(c)]
        sites = self.sites({c.name.value for c in todo_loops})
        taken = set(self.index.bound)
        decisions = {c.name.value: self.decide(c, loops, sites, taken) for c in todo_loops}
        self.refused = {n for n, d in decisions.items() if d.kind == "todo"}
        counts = self.name_counts()
        site_by_stmt: dict[int, list[_Site]] = {}
        var_stmts: dict[int, _Site] = {}
        self.served = [s for s in sites if decisions.get(s.class_name) and decisions[s.class_name].kind != "todo"]
        for s in self.served:
            site_by_stmt.setdefault(id(s.call_stmt), []).append(s)
            if s.var_stmt is not None and self.var_replaceable(s, counts):
                var_stmts[id(s.var_stmt)] = s
        self.find_wrapped_instances(decisions, var_stmts)
        body = self.process(list(self.module.body), True, decisions, site_by_stmt, var_stmts, nested)
        workflows = sum(1 for d in decisions.values() if d.kind in ("rewrite", "wrap"))
        if workflows > 1:
            body = self.several_workflows(body, decisions)
        module = self.module.with_changes(body=body)
        rewritten = [d.plan for d in decisions.values() if d.kind == "rewrite" and d.plan is not None]
        module = self.fix_imports(module, rewritten)
        if rewritten:
            legacy_errors = self.legacy_errors() and "_chat" in self.helpers_written
            module = inline_legacy_helpers(module, self.ctx, extra=CHAT_LEGACY_ERRORS if legacy_errors else (),
                                           skip=self.refused)
            module = self.report_leftovers(module)
        return module

    def find_wrapped_instances(self, decisions: dict[str, _Decision], var_stmts: dict[int, _Site]) -> None:
        """A wrapped class whose module-level instance stays (built with arguments, or used beyond create_app):
        the adapter wraps that instance, right after it is built."""
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                    and id(stmt) not in var_stmts:
                a = stmt.body[0]
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Call) \
                        and isinstance(a.value.func, cst.Name) and decisions.get(a.value.func.value) \
                        and decisions[a.value.func.value].kind == "wrap" and a.value.func.value not in self.wrap_after:
                    self.wrap_after[a.value.func.value] = (id(stmt), a.targets[0].target.value)

    def several_workflows(self, body: list[cst.BaseStatement], decisions: dict[str, _Decision]) -> list[cst.BaseStatement]:
        names = {n for n, d in decisions.items() if d.kind == "rewrite"}
        first = next(i for i, s in enumerate(body) if (isinstance(s, cst.ClassDef) and s.name.value in names)
                     or (isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign)
                         and isinstance(s.body[0].value, cst.Call)
                         and dotted_name(s.body[0].value.func) == "loop_as_workflow"))
        reason = ("this module now defines several workflows; the platform's discovery wants exactly one "
                  "AgentWorkflow per entrypoint module: move the others to their own modules")
        body[first] = with_todo_comment(body[first], codes.LEGACY_PLACEMENT.code, reason)
        self.ctx.todo(codes.LEGACY_PLACEMENT.code, 0, reason)
        return body

    def process(
        self, stmts: list[cst.BaseStatement], top: bool, decisions: dict[str, _Decision],
        site_by_stmt: dict[int, list[_Site]], var_stmts: dict[int, _Site], nested: list[cst.FunctionDef],
    ) -> list[cst.BaseStatement]:
        """The new statements for ``stmts`` (the module's when ``top``, else a function body holding a create_app
        site): loop classes migrated, create_app sites served by a backend."""
        out: list[cst.BaseStatement] = []
        wrap_lines = {sid: (cname, var) for cname, (sid, var) in self.wrap_after.items()}
        for stmt in stmts:
            if top and isinstance(stmt, cst.ClassDef) and stmt.name.value in decisions:
                out.extend(self.migrate_class(stmt, decisions[stmt.name.value]))
            elif top and isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock) and any(
                    id(s) in site_by_stmt or id(s) in var_stmts for s in stmt.body.body):
                inner = self.process(list(stmt.body.body), False, decisions, site_by_stmt, var_stmts, nested)
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=inner)))
            elif top and stmt in nested:
                reason = ("a RolloutAgentLoop subclass is defined inside this function: move it to module level so "
                          "osmosis-migrate can migrate it, or wrap it by hand with osmosis_compat.adapters."
                          "loop_as_workflow (the wrap keeps it running on osmosis-compat only, not on the real "
                          "osmosis-ai)")
                out.append(with_todo_comment(stmt, codes.LEGACY_PLACEMENT.code, reason))
                self.ctx.todo(codes.LEGACY_PLACEMENT.code, stmt, "RolloutAgentLoop subclass defined inside a function")
            elif top and id(stmt) in wrap_lines:
                cname, var = wrap_lines[id(stmt)]
                out += [stmt, with_todo_comment(wrap_statement(cname, var, self.module), codes.LEGACY_WRAP_NOTE.code, WRAP_TODO)]
            elif id(stmt) in var_stmts:
                site = var_stmts[id(stmt)]
                out.append(self.backend_for(site, decisions[site.class_name], stmt.leading_lines))
            elif id(stmt) in site_by_stmt:
                out += self.serve(stmt, site_by_stmt[id(stmt)], decisions)
            else:
                out.append(stmt)
        return out

    def serve(self, stmt: cst.BaseStatement, sites: list[_Site], decisions: dict[str, _Decision]) -> list[cst.BaseStatement]:
        """A statement holding create_app calls: each becomes create_rollout_server(backend=…), the backend first."""
        out: list[cst.BaseStatement] = []
        new_stmt = stmt
        for site in sites:
            if id(site) not in self.backends:
                # the backend goes first: it takes the blank lines and comments above the statement
                out.append(self.backend_for(site, decisions[site.class_name], new_stmt.leading_lines))
                new_stmt = new_stmt.with_changes(leading_lines=[])
            # osmosis-ai 0.3.8's create_rollout_server(api_key=…) guards the server as create_app(api_key=…) did
            # (0.2.31's takes no api_key: there it is dropped with the others, below)
            api_key = site.kwargs.get("api_key") if self.ctx.target == "0.3" else None
            new_stmt = new_stmt.visit(_SwapCall(site.call, server_call(self.backends[id(site)], api_key)))
            self.removed_refs.add("create_app")
            kept = ("; api_key kept: create_rollout_server(api_key=...) (osmosis-ai 0.3.8 then requires "
                    "`Authorization: Bearer <key>` on every route, /health included)") if api_key is not None else ""
            self.ctx.edit(codes.LEGACY_SERVING.code, stmt, f"create_app({site.var or site.class_name + '(…)'}) → "
                          f"create_rollout_server(backend=LocalBackend(...)){kept}")
            dropped = [text for keyword, text in site.other if not (api_key is not None and keyword == "api_key")]
            if dropped:
                where = "settings/record_ttl_seconds/debug_dir" + ("" if self.ctx.target == "0.3" else "/api_key")
                why = " (osmosis-ai 0.2.31's create_rollout_server takes no api_key)" if any(
                    keyword == "api_key" for keyword, _ in site.other) and self.ctx.target != "0.3" else ""
                reason = (
                    "create_app() arguments with no LocalBackend/create_rollout_server equivalent were "
                    f"dropped: {'; '.join(dropped)} — on_startup/on_shutdown: pass "
                    f"create_rollout_server(lifespan=...); {where}: see docs/migrate.md{why}"
                )
                new_stmt = with_todo_comment(new_stmt, codes.LEGACY_APP_ARGS.code, reason)
                self.ctx.todo(codes.LEGACY_APP_ARGS.code, stmt, reason)
        self.needed += [(ROLLOUT, "LocalBackend"),
                        (SERVER_03 if self.ctx.target == "0.3" else ROLLOUT, "create_rollout_server")]
        return [*out, new_stmt]

    def var_replaceable(self, site: _Site, counts: dict[str, int]) -> bool:
        """Whether `V = X()` only feeds create_app (then the backend statement takes its place)."""
        a = site.var_stmt.body[0]
        uses = sum(1 for t in self.served if t.var == site.var)
        return not a.value.args and counts.get(site.var, 0) == 1 + uses

    def migrate_class(self, cls: cst.ClassDef, d: _Decision) -> list[cst.BaseStatement]:
        name = cls.name.value
        if d.kind == "todo":
            return [self.refuse(cls, d.reason)]
        cls = without_todo_comments(cls, codes.LEGACY_NOT_REWRITTEN.code)  # a loop refused by an earlier run is migrated now
        self.removed_refs.update(n.value for n in _walk(cls) if isinstance(n, cst.Name))
        if d.kind == "wrap":
            return self.wrap(cls)
        plan = d.plan
        assert plan is not None
        helpers = [h for h in plan.helpers if h not in self.helpers_written]
        self.helpers_written.update(helpers)
        stmts: list[cst.BaseStatement] = loop_helper_statements(helpers, self.module, plan.target, self.legacy_errors())
        new_cls = rewrite_class(plan, self.module, self.table, self.ctx.statement_names)
        if stmts:  # the helpers go first, with the class's comments; the class follows them
            stmts[0] = stmts[0].with_changes(leading_lines=cls.leading_lines)
            new_cls = new_cls.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        else:
            new_cls = new_cls.with_changes(leading_lines=cls.leading_lines)
        if plan.serve_note is not None:
            new_cls = with_todo_comment(new_cls, codes.LEGACY_SERVE.code, plan.serve_note)
            self.ctx.todo(codes.LEGACY_SERVE.code, cls, plan.serve_note)
        grader = grader_class(plan, self.module).with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        if plan.reward_todo is not None:
            code, text = plan.reward_todo
            grader = with_todo_comment(grader, code, text)
            self.ctx.todo(code, cls, text)
        self.needed += [(ROLLOUT, n) for n in REWRITE_IMPORTS if n not in ("LocalBackend", "create_rollout_server",
                                                                        "AgentWorkflowConfig", "ConcurrencyConfig")]
        self.ctx.edit(codes.LEGACY_REWRITTEN.code, cls, self.rewrite_message(plan))
        return [*stmts, new_cls, grader]

    def legacy_errors(self) -> bool:
        """Whether the file catches the legacy client's errors (then ``_chat`` raises them)."""
        return any(self.table.names.get(n, "").startswith("osmosis_ai") for n in ("OsmosisRolloutError", *CHAT_LEGACY_ERRORS))

    def rewrite_message(self, plan: RewritePlan) -> str:
        reward = {
            "grader": "the reward code of run() moved into it",
            "carry": "run() hands it the reward it computed, in the sample's metrics",
            "none": "a starting rule: the loop passed no reward",
        }[plan.reward.mode]
        msg = (f"{plan.name}: RolloutAgentLoop → AgentWorkflow (its own code; the legacy API translated) + "
               f"{plan.grader} ({reward})")
        if plan.notes:
            msg += "; left out: " + ", ".join(plan.notes)
        return msg

    def refuse(self, cls: cst.ClassDef, reason: str) -> cst.ClassDef:
        if self.ctx.strategy == "wrap":
            text = f"not wrapped: {reason}; build it at module level, or port it to an AgentWorkflow + Grader"
        else:
            text = (f"not rewritten: {reason}. Port it to an AgentWorkflow + Grader by hand, or run "
                    "osmosis-migrate --strategy wrap to serve it unchanged through loop_as_workflow — the file "
                    "then needs osmosis-compat installed, not osmosis-ai alone")
        self.ctx.todo(codes.LEGACY_NOT_REWRITTEN.code, cls, text)
        if has_todo_comment(cls, codes.LEGACY_NOT_REWRITTEN.code) and with_todo_comment(cls, codes.LEGACY_NOT_REWRITTEN.code, text) is not cls:
            cls = without_todo_comments(cls, codes.LEGACY_NOT_REWRITTEN.code)  # refused for another reason now: the old one goes
        return with_todo_comment(cls, codes.LEGACY_NOT_REWRITTEN.code, text)

    def wrap(self, cls: cst.ClassDef) -> list[cst.BaseStatement]:
        name = cls.name.value
        self.needed.append(ADAPTER)
        self.ctx.todo(codes.LEGACY_WRAP_NOTE.code, cls, WRAP_TODO)
        if name in self.wrap_after:
            var = self.wrap_after[name][1]
            self.ctx.edit(codes.LEGACY_WRAPPED.code, cls, f"{name} wrapped: {stem(name)}Workflow, {stem(name)}Grader = "
                          f"loop_as_workflow({var}) (the instance the module builds)")
            return [cls]
        line = wrap_statement(name, name, self.module).with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        self.ctx.edit(codes.LEGACY_WRAPPED.code, cls, f"{name} wrapped: {stem(name)}Workflow, {stem(name)}Grader = loop_as_workflow({name})")
        return [cls, with_todo_comment(line, codes.LEGACY_WRAP_NOTE.code, WRAP_TODO)]

    def backend_for(self, site: _Site, d: _Decision, leading) -> cst.SimpleStatementLine:
        var = "backend"
        n = 2
        while var in self.used_names:
            var = f"{stem(site.class_name).lower()}_backend" if n == 2 else f"backend_{n}"
            n += 1
        self.used_names.add(var)
        self.backends[id(site)] = var
        for other in self.served:
            if other is not site and other.var_stmt is not None and other.var_stmt is site.var_stmt:
                self.backends[id(other)] = var
        mc = site.kwargs.get("max_concurrent")
        mc_src = str(LEGACY_MAX_CONCURRENT) if mc is None else self.module.code_for_node(mc)
        config = f"AgentWorkflowConfig(name={self.loop_name(site.class_name)}, " \
                 f"concurrency=ConcurrencyConfig(max_concurrent={mc_src}))"
        self.needed += [(ROLLOUT, "LocalBackend"), (ROLLOUT, "AgentWorkflowConfig"), (ROLLOUT, "ConcurrencyConfig")]
        if d.kind == "rewrite":
            assert d.plan is not None
            workflow, grader = self.workflow_expr(site, d.plan), d.plan.grader
        else:
            workflow, grader = f"{stem(site.class_name)}Workflow", f"{stem(site.class_name)}Grader"
        stmt = backend_statement(var, workflow, config, self.module, grader)
        if site.var_stmt is not None:
            self.removed_refs.update(n.value for n in _walk(site.var_stmt) if isinstance(n, cst.Name))
        return stmt.with_changes(leading_lines=list(leading))

    def workflow_expr(self, site: _Site, plan: RewritePlan) -> str:
        """The class LocalBackend builds per rollout as ``cls(config)``, or — its ``__init__`` takes arguments — a
        subclass binding those the module built its instance with (``_bound_workflow``, generated)."""
        if not plan.facts.init_params:
            return site.class_name
        args = [self.module.code_for_node(a).strip().rstrip(",") for a in (site.build.args if site.build else [])]
        return f"_bound_workflow({', '.join([site.class_name, *args])})"

    def loop_name(self, class_name: str) -> str:
        for s in self.module.body:
            if isinstance(s, cst.ClassDef) and s.name.value == class_name:
                for st in s.body.body:
                    if isinstance(st, cst.SimpleStatementLine) and isinstance(st.body[0], cst.Assign):
                        a = st.body[0]
                        if dotted_name(a.targets[0].target) == "name" and isinstance(a.value, cst.SimpleString):
                            return a.value.value
        return f'"{class_name}"'

    # ---------------------------------------------------------------------------------------------- imports

    def fix_imports(self, module: cst.Module, rewritten: list[RewritePlan]) -> cst.Module:
        """Legacy names the rewrite made unused go (also from ``try`` blocks); the names it uses come in (OM304)."""
        wanted = list(dict.fromkeys(self.needed))
        if not wanted and not self.removed_refs:
            return module
        candidates = {n for n in self.removed_refs if n in self.legacy_locals and self.legacy_locals[n] in TRANSLATED}
        candidates |= {n for _, n in wanted}  # what the written code does not use is pruned again
        mine = {n for _, n in wanted}
        used = self.ctx.used_names_among(module, candidates | mine)
        module, removed = edit_imports(module, candidates - mine, used, [w for w in wanted if w[1] in used])
        added = sorted({n for _, n in wanted if n in used})
        if added or removed:
            msg = "imports added: " + ", ".join(added)
            if removed:
                msg += "; unused removed: " + ", ".join(removed)
            self.ctx.edit(codes.LEGACY_IMPORTS.code, 0, msg)
        return module

    def report_leftovers(self, module: cst.Module) -> cst.Module:
        """OM396: legacy names the file still imports, used outside the loops left with a TODO — the import fails
        on osmosis-ai 0.3."""
        table = ImportTable.of(module)
        breaking = {local: q for local, q in table.names.items() if breaks_on_03(q)}
        if not breaking:
            return module
        used: set[str] = set()
        for stmt in module.body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value in self.refused:
                continue
            used |= self.ctx.statement_names(stmt) & breaking.keys()
        if not used:
            return module
        reason = (f"osmosis-ai 0.3 has none of {', '.join(f'`{n}`' for n in sorted(used))} (legacy SDK, "
                  "osmosis-ai <= 0.2.17): this import fails on today's osmosis-ai; replace what uses it")
        body = list(module.body)
        at = next((i for i, s in enumerate(body) if any(
            isinstance(n, cst.ImportAlias) and (n.evaluated_alias or n.evaluated_name) in used for n in _walk(s))), 0)
        body[at] = with_todo_comment(body[at], codes.LEGACY_LEFTOVER.code, reason)
        self.ctx.todo(codes.LEGACY_LEFTOVER.code, 0, reason)
        return module.with_changes(body=body)


class _SwapCall(Transformer):
    def __init__(self, old: cst.Call, new: cst.Call) -> None:
        self.old, self.new = old, new

    def leave_Call(self, original: cst.Call, updated: cst.Call):  # type: ignore[override]
        return self.new if original is self.old else updated
