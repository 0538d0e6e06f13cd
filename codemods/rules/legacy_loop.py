"""``legacy-loop`` (OM300): a legacy ``RolloutAgentLoop`` subclass → an ``AgentWorkflow`` + a ``Grader``.

**Rewrite** (``--strategy auto`` or ``rewrite``) of the documented loop styles (seeds/legacy-agent-loop.md and the SDK
quick start): ``ctx.chat`` turns in ``for … in range(max_turns)`` (``ctx.request.max_turns``, a number, a local or a
class attribute holding one) — or a single model call —, tools run by ``execute_tool_calls(calls, executor)`` or one
at a time in a ``for`` over the reply's tool calls, exits only where a Strands agent stops (a reply without tool calls;
the token budget is noted as dropped), one or more ``ctx.complete(messages, …, reward=…)`` with the same reward.
The output:

* tools: with literal schemas and a registry/if-elif executor over module functions, the functions are decorated in
  place as Strands tools with the exact names, descriptions and schemas (OM305); otherwise (schemas from a sibling
  module or a helper, ``get_tools`` with logic, an executor method, post-processing) the loop's own executor runs
  each call through ``legacy_strands_tools(<schemas>, <executor>)``, a helper generated into the file; the methods it
  needs move into the workflow class;
* ``class <Name>Config(AgentWorkflowConfig)`` (``name``, ``max_turns``, ``concurrency`` from ``create_app``) with a
  module-level instance; ``class <Name>Workflow`` running an ``OsmosisStrandsAgent`` on ``ctx.prompt``, stopped after
  ``max_turns`` model calls; ``class <Name>Grader`` computing the loop's reward expression — moved verbatim, helper
  methods and class attributes included — on the sample's last assistant text (``last_assistant_text``, generated
  into the file) with ``ctx.request.metadata`` → the grader's metadata (label as ``metadata["ground_truth"]``) (OM301).
  No reward at all → no grader, TODO OM394; an exit without reward → TODO OM393. ``ctx.target`` "0.3" writes the
  0.3 grader (``ctx.sample`` + ``set_reward``) and imports ``create_rollout_server`` from ``osmosis_ai.rollout.server``.
* legacy SDK helpers the file still calls (``get_tool_call_info``, ``create_tool_result``, the schema classes …) are
  written into it: the output needs osmosis-ai only, never osmosis_compat.

**Wrap** (only ``--strategy wrap``): the class stays and ``<Name>Workflow, <Name>Grader = loop_as_workflow(<Class>)``
follows it (OM302), with TODO OM395 saying the file now needs osmosis-compat. A class whose ``__init__`` needs
arguments is wrapped through the instance the module builds, or not at all (a wrap must never fail at import).

**Serving lines** (both): ``agent_loop = X()`` / ``app = create_app(agent_loop, …)`` (module level or in a function)
become ``backend = LocalBackend(workflow=…, workflow_config=…, grader=…)`` / ``app = create_rollout_server(backend=backend)``
(OM303); ``max_concurrent`` becomes the config's ``concurrency`` (legacy default 100 when absent); other
``create_app`` arguments are listed in an OM391 TODO. Imports the rule made unused go, the new ones are added (OM304).

TODOs: OM390 a loop that is not rewritten (``auto``/``rewrite``: the precise reason; never wrapped unasked);
OM391 ``create_app`` arguments with no equivalent; OM392 a loop class defined inside a function, or a file that now
has several workflows (discovery wants one per entrypoint module); OM393/OM394 rewards; OM395 an explicit wrap.
A class carrying ``# osmosis-migrate: skip`` is left alone, with its serving lines.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods.base import (
    ImportTable,
    Rule,
    RuleContext,
    add_imports,
    dotted_name,
    has_skip_marker,
    has_todo_comment,
    remove_unused_imports,
    with_todo_comment,
    without_todo_comments,
)
from codemods.rules._legacy_loop_analysis import (
    LOOP_BASES,
    LoopPlan,
    ModuleIndex,
    NotRecognised,
    _walk,
    analyse,
    walk_cache,
)
from codemods.rules._legacy_loop_emit import (
    LEGACY_MAX_CONCURRENT,
    STRANDS_MOD,
    backend_statement,
    helper_statements,
    inline_legacy_helpers,
    rewrite_statements,
    server_call,
    snake,
    stem,
    tool_decorator,
    wrap_statement,
)

ROLLOUT = "osmosis_ai.rollout"
CREATE_APP = (
    "osmosis_ai.create_app",
    "osmosis_ai.rollout.create_app",
    "osmosis_ai.rollout.server.create_app",
    "osmosis_ai.rollout.server.app.create_app",
)
ADAPTER = ("osmosis_compat.adapters", "loop_as_workflow")
SERVER_03 = "osmosis_ai.rollout.server"  # 0.3 dropped the re-export of create_rollout_server from osmosis_ai.rollout
REWRITE_IMPORTS = [
    (ROLLOUT, "AgentWorkflow"), (ROLLOUT, "AgentWorkflowConfig"), (ROLLOUT, "AgentWorkflowContext"),
    (ROLLOUT, "Grader"), (ROLLOUT, "GraderContext"), (ROLLOUT, "LocalBackend"), (ROLLOUT, "create_rollout_server"),
    (ROLLOUT, "ConcurrencyConfig"), (STRANDS_MOD, "OsmosisRolloutModel"), (STRANDS_MOD, "OsmosisStrandsAgent"),
    ("strands", "tool"), ("strands.hooks", "AfterToolsEvent"), ("strands.tools.executors", "SequentialToolExecutor"),
]
HELPERS = ("last_assistant_text", "legacy_strands_tools")  # functions a rewrite may generate into the file
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
    var_stmt: Optional[cst.SimpleStatementLine]  # `V = X()` feeding it, if any
    var: Optional[str]
    kwargs: dict[str, cst.BaseExpression] = field(default_factory=dict)
    other: list[str] = field(default_factory=list)  # source of arguments without an equivalent


@dataclass
class _Decision:
    kind: str  # "rewrite" | "wrap" | "todo"
    plan: Optional[LoopPlan] = None
    reason: str = ""


class LegacyLoopRule(Rule):
    """RolloutAgentLoop → AgentWorkflow + Grader (rewrite of the documented tool loop, else wrap)."""

    code = "OM300"
    name = "legacy-loop"
    summary = "RolloutAgentLoop → OsmosisStrandsAgent workflow + grader (recognised tool loop) or loop_as_workflow wrap"
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
        self.generated: set[int] = set()  # ids of the config/workflow/grader statements a rewrite wrote
        self.helpers: set[str] = set()  # helper functions generated into the file so far
        self.moved: list[cst.CSTNode] = []  # the user code those statements carry (reward, helpers)
        self._ast_functions: Optional[dict[str, ast.AST]] = None

    # ---------------------------------------------------------------------------------------------- finding

    def is_loop(self, cls: cst.ClassDef) -> bool:
        return any(self.table.matches(b.value, LOOP_BASES) for b in cls.bases)

    def may_define_class(self, func: cst.FunctionDef) -> bool:
        """Whether a top-level function can define a class, from CPython's ast of the input when it has one
        (a walk of it is much cheaper than a libcst walk of the function)."""
        defs = self.ast_functions()
        node = defs.get(func.name.value)
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
        # statements that cannot name create_app (per CPython's ast) are not walked
        heads = {local for local, q in self.table.names.items() if q in CREATE_APP} | set(self.table.modules)
        if any(m in ("osmosis_ai", "osmosis_ai.rollout") for m in self.table.stars):
            heads.add("create_app")
        mentions = None
        if self.per_stmt is not None:
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
            cls_name = var = var_stmt = None
            if first.keyword is None and not first.star:
                if isinstance(first.value, cst.Name) and first.value.value in defs:
                    var = first.value.value
                    var_stmt, cls_name = defs[var]
                elif isinstance(first.value, cst.Call) and isinstance(first.value.func, cst.Name) \
                        and first.value.func.value in loops:
                    cls_name = first.value.func.value
            if cls_name is None:
                continue
            site = _Site(node, stmt, cls_name, var_stmt, var)
            for pos, arg in enumerate(node.args[1:]):
                if pos == 0 and arg.keyword is None and not arg.star:
                    site.kwargs["max_concurrent"] = arg.value  # create_app(agent_loop, max_concurrent, …)
                elif arg.keyword is not None and not arg.star:
                    site.kwargs[arg.keyword.value] = arg.value
                    if arg.keyword.value != "max_concurrent":
                        site.other.append(self.module.code_for_node(arg).strip().rstrip(","))
                else:
                    site.other.append(self.module.code_for_node(arg).strip().rstrip(","))
            out.append(site)
        return out

    def name_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        per_stmt = self.per_stmt  # from CPython's ast: no libcst walk
        if per_stmt is not None:
            for stmt_counts in per_stmt:
                for k, v in stmt_counts.items():
                    counts[k] = counts.get(k, 0) + v
            return counts
        for node in _walk(self.module):
            if isinstance(node, cst.Name):
                counts[node.value] = counts.get(node.value, 0) + 1
        return counts

    # ---------------------------------------------------------------------------------------------- deciding

    def decide(self, cls: cst.ClassDef, sites: list[_Site], counts: dict[str, int]) -> _Decision:
        strategy = self.ctx.strategy
        if strategy == "wrap":
            reason = self.wrap_blocker(cls)
            return _Decision("wrap") if reason is None else _Decision("todo", reason=reason)
        result = analyse(cls, self.module, self.table, self.index)
        if isinstance(result, LoopPlan):
            reason = self.rewrite_blocker(cls, result, sites, counts)
            if reason is None:
                return _Decision("rewrite", result)
            result = NotRecognised(reason)
        assert isinstance(result, NotRecognised)
        # a loop that cannot be rewritten is never wrapped unasked: a wrap keeps the file on osmosis-compat
        return _Decision("todo", reason=result.reason)

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

    def rewrite_blocker(self, cls: cst.ClassDef, plan: LoopPlan, sites: list[_Site], counts: dict[str, int]) -> Optional[str]:
        """Why the class cannot go away (it is referenced elsewhere), or a name the rewrite adds is taken."""
        name = cls.name.value
        mine = [s for s in sites if s.class_name == name]
        allowed = 1 + len({id(s.var_stmt) for s in mine if s.var_stmt is not None}) + sum(1 for s in mine if s.var is None)
        if counts.get(name, 0) != allowed:
            return f"{name} is used elsewhere in the module (only `x = {name}()` + create_app(x) can be migrated with it)"
        for s in mine:
            a = s.var_stmt.body[0] if s.var_stmt is not None else None
            if a is not None and (a.value.args or counts.get(s.var, 0) != 1 + sum(1 for t in mine if t.var == s.var)):
                return f"the instance `{s.var}` of {name} is used beyond create_app() or built with arguments"
        base = stem(name)
        for new in (f"{base}Config", f"{base}Workflow", f"{base}Grader", f"{snake(base)}_config", *HELPERS):
            if new in self.used_names and new not in self.helpers:
                return f"the name {new} the rewrite would add is already used"
        for mod, new in REWRITE_IMPORTS:
            # a name imported from a path the object moved from is that object (the imports rule moves the import)
            if new in self.index.bound and not (self.table.binds(new, f"{mod}.{new}")
                                                or self.table.binds(new, f"{SERVER_03}.{new}")):
                return f"`{new}`, a name the rewrite imports, is bound to something else in this module"
        for tool in plan.tools:
            if counts.get(tool.function, 0) < 1:
                return f"tool function {tool.function} not found"
        return None

    # ---------------------------------------------------------------------------------------------- rewriting

    def run(self) -> cst.Module:
        loops: list[cst.ClassDef] = [s for s in self.module.body if isinstance(s, cst.ClassDef) and self.is_loop(s)]
        nested = [s for s in self.module.body if isinstance(s, cst.FunctionDef) and self.may_define_class(s) and any(
            isinstance(n, cst.ClassDef) and self.is_loop(n) for n in _walk(s.body))]
        if not loops and not nested:
            return self.module
        done = self.wrapped_already()
        todo_loops = [c for c in loops if c.name.value not in done and not has_skip_marker(c)]
        names = {c.name.value for c in todo_loops}
        sites = self.sites(names)
        counts = self.name_counts()
        decisions = {c.name.value: self.decide(c, sites, counts) for c in todo_loops}
        rewritten_tools: dict[str, cst.Decorator] = {}
        for cname, d in decisions.items():
            if d.kind == "rewrite":
                for tool in d.plan.tools:
                    rewritten_tools[tool.function] = tool_decorator(tool, self.module)
        workflows = sum(1 for d in decisions.values() if d.kind in ("rewrite", "wrap"))
        site_by_stmt: dict[int, list[_Site]] = {}
        var_stmts: dict[int, _Site] = {}
        served = [s for s in sites if decisions.get(s.class_name) and decisions[s.class_name].kind != "todo"]
        self.served = served
        for s in served:
            site_by_stmt.setdefault(id(s.call_stmt), []).append(s)
            if s.var_stmt is not None and self.var_replaceable(s, served, counts):
                var_stmts[id(s.var_stmt)] = s
        self.backends: dict[int, str] = {}  # id(site) → backend variable
        # a wrapped class whose module-level instance stays (built with arguments, or used beyond create_app):
        # the adapter wraps that instance, right after it is built
        self.wrap_after: dict[str, tuple[int, str]] = {}
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                    and id(stmt) not in var_stmts:
                a = stmt.body[0]
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Call) \
                        and isinstance(a.value.func, cst.Name) and decisions.get(a.value.func.value) \
                        and decisions[a.value.func.value].kind == "wrap" and a.value.func.value not in self.wrap_after:
                    self.wrap_after[a.value.func.value] = (id(stmt), a.targets[0].target.value)
        wrap_lines = {sid: (cname, var) for cname, (sid, var) in self.wrap_after.items()}

        body = self._process_statements(list(self.module.body), True, decisions, sites, rewritten_tools, site_by_stmt,
                                        var_stmts, nested, wrap_lines)
        if workflows > 1:
            first = next(i for i, s in enumerate(body) if (isinstance(s, cst.ClassDef) and s.name.value.endswith("Workflow"))
                         or (isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign)
                             and isinstance(s.body[0].value, cst.Call)
                             and dotted_name(s.body[0].value.func) == "loop_as_workflow"))
            reason = ("this module now defines several workflows; the platform's discovery wants exactly one "
                      "AgentWorkflow per entrypoint module: move the others to their own modules")
            body[first] = with_todo_comment(body[first], "OM392", reason)
            self.ctx.todo("OM392", 0, reason)
        module = self.module.with_changes(body=body)
        # drop what the rule made unused first, so new names do not get appended to an import that then empties
        module, removed = remove_unused_imports(module, self.removed_refs - {n for _, n in self.needed}, self.used_in(module))
        if self.needed:
            module = add_imports(module, self.needed)
        if self.needed or removed:
            msg = "imports added: " + ", ".join(sorted({n for _, n in self.needed}))
            if removed:
                msg += "; unused removed: " + ", ".join(removed)
            self.ctx.edit("OM304", 0, msg)
        if any(d.kind == "rewrite" for d in decisions.values()):
            module = self.inline_legacy_helpers(module)
        return module

    def _process_statements(
        self, stmts: list[cst.BaseStatement], top: bool, decisions: dict[str, _Decision], sites: list[_Site],
        rewritten_tools: dict[str, cst.Decorator], site_by_stmt: dict[int, list[_Site]], var_stmts: dict[int, _Site],
        nested: list[cst.FunctionDef], wrap_lines: dict[int, tuple[str, str]],
    ) -> list[cst.BaseStatement]:
        """The new statements for ``stmts`` (the module's when ``top``, else a function body holding a create_app
        site): loop classes migrated, tool functions redecorated, create_app sites served by a backend (for
        :meth:`run`)."""
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            if top and isinstance(stmt, cst.ClassDef) and stmt.name.value in decisions:
                out.extend(self.migrate_class(stmt, decisions[stmt.name.value], sites))
                continue
            if top and isinstance(stmt, cst.FunctionDef) and stmt.name.value in rewritten_tools:
                out.append(stmt.with_changes(decorators=[rewritten_tools[stmt.name.value]]))
                self.ctx.edit("OM305", stmt, f"tool function {stmt.name.value} → Strands @tool (same name, description, schema)")
                continue
            if top and isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock) and any(
                id(s) in site_by_stmt or id(s) in var_stmts for s in stmt.body.body
            ):
                inner = self._process_statements(list(stmt.body.body), False, decisions, sites, rewritten_tools,
                                                 site_by_stmt, var_stmts, nested, wrap_lines)
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=inner)))
                continue
            if top and stmt in nested:
                out.append(with_todo_comment(stmt, "OM392", "a RolloutAgentLoop subclass is defined inside this "
                           "function: move it to module level so osmosis-migrate can migrate it, or wrap it by hand "
                           "with osmosis_compat.adapters.loop_as_workflow (the wrap keeps it running on "
                           "osmosis-compat only, not on the real osmosis-ai)"))
                self.ctx.todo("OM392", stmt, "RolloutAgentLoop subclass defined inside a function")
                continue
            if top and id(stmt) in wrap_lines:
                cname, var = wrap_lines[id(stmt)]
                out += [stmt, with_todo_comment(wrap_statement(cname, var, self.module), "OM395", WRAP_TODO)]
                continue
            if id(stmt) in var_stmts:
                site = var_stmts[id(stmt)]
                out.append(self.backend_for(site, decisions[site.class_name], stmt.leading_lines))
                continue
            if id(stmt) in site_by_stmt:
                new_stmt = stmt
                for site in site_by_stmt[id(stmt)]:
                    if id(site) not in self.backends:
                        # the backend goes first: it takes the blank lines and comments above the statement
                        out.append(self.backend_for(site, decisions[site.class_name], new_stmt.leading_lines))
                        new_stmt = new_stmt.with_changes(leading_lines=[])
                    new_stmt = new_stmt.visit(_SwapCall(site.call, server_call(self.backends[id(site)])))
                    self.removed_refs.update(["create_app"])
                    self.ctx.edit("OM303", stmt, f"create_app({site.var or site.class_name + '()'}) → "
                                  "create_rollout_server(backend=LocalBackend(...))")
                    if site.other:
                        reason = (
                            "create_app() arguments with no LocalBackend/create_rollout_server equivalent were "
                            f"dropped: {'; '.join(site.other)} — on_startup/on_shutdown: pass "
                            "create_rollout_server(lifespan=...); settings/record_ttl_seconds/debug_dir/api_key: "
                            "see docs/migrate.md"
                        )
                        new_stmt = with_todo_comment(new_stmt, "OM391", reason)
                        self.ctx.todo("OM391", stmt, reason)
                out.append(new_stmt)
                self.needed += [(ROLLOUT, "LocalBackend"),
                                (SERVER_03 if self.ctx.target == "0.3" else ROLLOUT, "create_rollout_server")]
                continue
            out.append(stmt)
        return out

    def inline_legacy_helpers(self, module: cst.Module) -> cst.Module:
        return inline_legacy_helpers(module, self.ctx)

    def used_in(self, module: cst.Module) -> set[str]:
        """``base.used_names`` of ``module``, from the memoised walk (unchanged statements are not walked again)."""
        seen: set[str] = set()
        per_stmt = self.per_stmt
        original = {id(s): i for i, s in enumerate(self.module.body)} if per_stmt is not None else {}
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                continue
            i = original.get(id(stmt))
            if i is not None and self.module.body[i] is stmt:
                seen.update(per_stmt[i])  # an untouched statement: its names are known from the ast
                continue
            if id(stmt) in self.generated:
                continue  # rule-written code uses only the names it imports, plus the moved user code below
            for node in _walk(stmt):
                if isinstance(node, cst.Name):
                    seen.add(node.value)
                elif isinstance(node, cst.SimpleString):
                    val = node.value.strip("\"'rbuRBU")
                    if val.isidentifier():
                        seen.add(val)
        for moved in self.moved:
            seen.update(n.value for n in _walk(moved) if isinstance(n, cst.Name))
        return seen

    def var_replaceable(self, site: _Site, served: list[_Site], counts: dict[str, int]) -> bool:
        """Whether `V = X()` only feeds create_app (then the backend statement takes its place)."""
        a = site.var_stmt.body[0]
        uses = sum(1 for t in served if t.var == site.var)
        return not a.value.args and counts.get(site.var, 0) == 1 + uses

    def migrate_class(self, cls: cst.ClassDef, d: _Decision, sites: list[_Site]) -> list[cst.BaseStatement]:
        name = cls.name.value
        self.removed_refs.update(n.value for n in _walk(cls) if isinstance(n, cst.Name))
        if d.kind == "todo":
            if self.ctx.strategy == "wrap":
                reason = f"not wrapped: {d.reason}; build it at module level, or port it to an AgentWorkflow + Grader"
            else:
                reason = (f"not rewritten: {d.reason}. Port it to an AgentWorkflow + Grader by hand, or run "
                          "osmosis-migrate --strategy wrap to serve it unchanged through loop_as_workflow — the file "
                          "then needs osmosis-compat installed, not osmosis-ai alone")
            self.ctx.todo("OM390", cls, reason)
            if has_todo_comment(cls, "OM390") and with_todo_comment(cls, "OM390", reason) is not cls:
                cls = without_todo_comments(cls, "OM390")  # refused for another reason now: the old one goes
            return [with_todo_comment(cls, "OM390", reason)]
        cls = without_todo_comments(cls, "OM390")  # a loop refused by an earlier run is migrated now
        if d.kind == "wrap":
            self.needed.append(ADAPTER)
            if name in self.wrap_after:
                var = self.wrap_after[name][1]
                self.ctx.edit("OM302", cls, f"{name} wrapped: {stem(name)}Workflow, {stem(name)}Grader = "
                              f"loop_as_workflow({var}) (the instance the module builds)"
                              + (f" (not rewritten: {d.reason})" if d.reason else ""))
                self.ctx.todo("OM395", cls, WRAP_TODO)
                return [cls]
            line = wrap_statement(name, name, self.module).with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
            line = with_todo_comment(line, "OM395", WRAP_TODO)
            self.ctx.edit("OM302", cls, f"{name} wrapped: {stem(name)}Workflow, {stem(name)}Grader = loop_as_workflow({name})"
                          + (f" (not rewritten: {d.reason})" if d.reason else ""))
            self.ctx.todo("OM395", cls, WRAP_TODO)
            return [cls, line]
        plan = d.plan
        assert plan is not None
        mine = [s for s in sites if s.class_name == name]
        max_c: Optional[str] = None
        if mine:
            mc = mine[0].kwargs.get("max_concurrent")
            if mc is None:
                max_c = str(LEGACY_MAX_CONCURRENT)
            elif isinstance(mc, cst.Integer):
                max_c = mc.value
        stmts = rewrite_statements(plan, self.module, max_c, self.ctx.target)
        wanted = [h for h in HELPERS if h not in self.helpers and (
            (h == "last_assistant_text" and plan.reward is not None)
            or (h == "legacy_strands_tools" and plan.tool_mode == "adapter"))]
        self.helpers.update(wanted)
        if wanted:
            stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        stmts = [*helper_statements(wanted, self.module), *stmts]
        stmts[0] = stmts[0].with_changes(leading_lines=cls.leading_lines)  # its comments (stale OM390 gone)
        self.generated.update(id(s) for s in stmts)
        self.moved += [*([plan.reward] if plan.reward is not None else []), *plan.reward_statements,
                       *plan.grader_members, *plan.workflow_members,
                       *(cst.parse_expression(e) for e in (plan.schemas_expr, plan.executor) if e)]
        skip = {"LocalBackend", "create_rollout_server", "ConcurrencyConfig"}
        if plan.reward is None:
            skip |= {"Grader", "GraderContext"}
        if plan.tool_mode != "decorate":
            skip.add("tool")
        if plan.tool_mode == "none":
            skip.add("AfterToolsEvent")
        if not plan.sequential or plan.tool_mode == "none":
            skip.add("SequentialToolExecutor")
        self.needed += [i for i in REWRITE_IMPORTS if i[1] not in skip]
        if max_c is not None:
            self.needed.append((ROLLOUT, "ConcurrencyConfig"))
        base = stem(name)
        msg = f"{name} → {base}Config + {base}Workflow (OsmosisStrandsAgent)" + (
            f" + {base}Grader" if plan.reward is not None else "")
        if plan.tool_mode == "adapter":
            msg += "; its tools run through the loop's own executor (legacy_strands_tools)"
        if plan.dropped:
            msg += "; left out (no workflow equivalent): " + ", ".join(plan.dropped)
        self.ctx.edit("OM301", cls, msg)
        wf_at = next(i for i, s in enumerate(stmts) if isinstance(s, cst.ClassDef) and s.name.value == f"{base}Workflow")
        if plan.reward is None:
            reason = ("the legacy loop passed no reward to ctx.complete() (the platform computed it), so no Grader "
                      "was written: if rewards are computed in the rollout, add one — it can read the sample's "
                      "final answer (last assistant text of sample.messages), ctx.label and ctx.metadata — and pass "
                      "it to LocalBackend(grader=…)")
            stmts[wf_at] = with_todo_comment(stmts[wf_at], "OM394", reason)
            self.ctx.todo("OM394", cls, reason)
        elif plan.reward_note:
            gr_at = next(i for i, s in enumerate(stmts) if isinstance(s, cst.ClassDef) and s.name.value == f"{base}Grader")
            stmts[gr_at] = with_todo_comment(stmts[gr_at], "OM393", plan.reward_note)
            self.ctx.todo("OM393", cls, plan.reward_note)
        self.generated.update(id(s) for s in stmts)
        return stmts

    def backend_for(self, site: _Site, d: _Decision, leading) -> cst.SimpleStatementLine:
        var = "backend"
        n = 2
        while var in self.used_names:
            var = f"{snake(stem(site.class_name))}_backend" if n == 2 else f"backend_{n}"
            n += 1
        self.used_names.add(var)
        self.backends[id(site)] = var
        for other in self.sites_sharing(site):
            self.backends[id(other)] = var
        mc = site.kwargs.get("max_concurrent")
        mc_src = str(LEGACY_MAX_CONCURRENT) if mc is None else self.module.code_for_node(mc)
        base = stem(site.class_name)
        self.needed.append((ROLLOUT, "LocalBackend"))
        if d.kind == "rewrite":
            if mc is None or isinstance(mc, cst.Integer):
                config = f"{snake(base)}_config"
            else:
                config = f"{base}Config(concurrency=ConcurrencyConfig(max_concurrent={mc_src}))"
                self.needed.append((ROLLOUT, "ConcurrencyConfig"))
        else:
            loop_name = self.loop_name(site.class_name)
            config = f"AgentWorkflowConfig(name={loop_name}, concurrency=ConcurrencyConfig(max_concurrent={mc_src}))"
            self.needed += [(ROLLOUT, "AgentWorkflowConfig"), (ROLLOUT, "ConcurrencyConfig")]
        stmt = backend_statement(var, site.class_name, config, self.module,
                                 grader=d.kind != "rewrite" or d.plan.reward is not None)
        if site.var_stmt is not None:
            self.removed_refs.update(n.value for n in _walk(site.var_stmt) if isinstance(n, cst.Name))
        return stmt.with_changes(leading_lines=list(leading))

    def sites_sharing(self, site: _Site) -> list[_Site]:
        return [s for s in self.served if s is not site and s.var_stmt is not None and s.var_stmt is site.var_stmt]

    def loop_name(self, class_name: str) -> str:
        for s in self.module.body:
            if isinstance(s, cst.ClassDef) and s.name.value == class_name:
                for st in s.body.body:
                    if isinstance(st, cst.SimpleStatementLine) and isinstance(st.body[0], cst.Assign):
                        a = st.body[0]
                        if dotted_name(a.targets[0].target) == "name" and isinstance(a.value, cst.SimpleString):
                            return a.value.value
        return f'"{class_name}"'


class _SwapCall(cst.CSTTransformer):
    def __init__(self, old: cst.Call, new: cst.Call) -> None:
        self.old, self.new = old, new

    def leave_Call(self, original: cst.Call, updated: cst.Call):  # type: ignore[override]
        return self.new if original is self.old else updated
