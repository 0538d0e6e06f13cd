"""The model of one module, and the plan of each driver: what may be migrated, and how — or why not.

:func:`module_model` indexes the module's top level once: module-level agents (and Strands multi-agent groups),
models, sessions, string constants, functions, classes and the ``__main__`` block, and who uses each name (in this
module, and in other modules when the repo facts say so).

A **driver** is code that runs an agent: a top-level function, the module-level script code, or the body of
``if __name__ == "__main__":``. :func:`plan_driver` decides, from :func:`codemods.analysis.body.body_facts`:

* the program's **external input** — exactly one of: an interactive read (``q = input(...)``), a command-line
  argument (``args.question``, ``sys.argv``), the parameter that reaches the agents' input (also through a handler
  argument: ``event.get("prompt")``, ``body.message``), or else the literal prompt of the first run. Only that input
  becomes the rollout's prompt: a run whose input *is* it gets ``ctx.prompt``; a template around it keeps its text
  (the variable is bound to the prompt's user text); every other input (a previous agent's output, a carried-over
  conversation, a resumed ``RunState``, the program's own follow-up prompts) is kept as written;
* the **sessions** (OpenAI Agents) — one per sample: each run gets its own, created once before it; a run in a loop
  gets a fresh unnamed one per pass (never the same name twice); a run that continues another (``RunState``) or
  shares a user session shares it; a user session object becomes an ``OsmosisMemorySession``;
* the **models** — every agent gets the rollout placeholder, also when its model comes through a local variable,
  a module-level name or a string; sampling settings carry over, or the driver is not migrated;
* what **cannot move** into ``run()``: interactive reads other than the input itself, confirmations, ``exit()``
  with a status, argparse beyond the input, ``time.sleep``, servers, REPL loops, generators;
* who **calls** it: nothing or the ``__main__`` block (then it is converted in place and the ``__main__`` block
  serves the workflow), or other code — a decorator (web route), another function, another module, a Lambda
  runtime (then the workflow is added *beside* it and the function stays).

Every refusal is a sentence naming the shape and the name (it becomes the TODO).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

import libcst as cst

from codemods.analysis.body import BodyFacts, RunSite, body_facts, code, contains, is_string, names_in
from codemods.base import ImportTable, has_skip_marker, literal_eval
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.wrap import Framework

# ----------------------------------------------------------------------------------------------- the module


@dataclass
class ModuleModel:
    """The top level of one module, indexed once."""

    module: cst.Module
    body: list[cst.BaseStatement]
    counts: list[dict[str, int]]
    table: ImportTable
    agents: dict[str, int] = field(default_factory=dict)  # module-level agents and groups (Swarm): name → index
    groups: set[str] = field(default_factory=set)  # the subset of ``agents`` that are multi-agent groups
    models: dict[str, int] = field(default_factory=dict)  # module-level model objects
    sessions: dict[str, int] = field(default_factory=dict)  # module-level session objects (OpenAI Agents)
    strings: dict[str, int] = field(default_factory=dict)  # module-level string constants
    functions: dict[str, int] = field(default_factory=dict)
    classes: dict[str, int] = field(default_factory=dict)
    main_guard: Optional[int] = None
    bindings: dict[str, int] = field(default_factory=dict)  # how many top-level statements bind a name
    external: dict[str, list[str]] = field(default_factory=dict)  # name → uses in other modules (repo facts)
    filename: str = "<string>"
    producers: set[str] = field(default_factory=set)  # functions that build and return an agent (factories)
    runners: set[str] = field(default_factory=set)  # functions with a run site of their own
    helpers: set[str] = field(default_factory=set)  # runners used by other runners or by agents (tools, guardrails)
    runner_classes: set[str] = field(default_factory=set)  # classes whose methods run agents
    ast_defs: dict[str, object] = field(default_factory=dict)  # top-level def/class name → its CPython ast node
    facts_cache: dict[int, "BodyFacts"] = field(default_factory=dict)  # id(function) → facts of its body
    # names imported from other files of the run, with what those files offer (codemods.analysis.repo)
    imported_agents: dict[str, str] = field(default_factory=dict)  # local agent name → its rollout factory
    imported_classes: dict[str, str] = field(default_factory=dict)  # local class → its rollout class
    imported_helpers: dict[str, str] = field(default_factory=dict)  # local function → its rollout version
    imported_problems: dict[str, str] = field(default_factory=dict)  # local name → why nothing is offered

    def users(self, name: str, skip: Sequence[int] = ()) -> list[int]:
        """Top-level statements (indices) that reference the module-level ``name``, except those in ``skip`` — a
        function or class whose every mention of ``name`` is its own local (a parameter ``agent: Agent``, a local
        ``agent = …`` in ``run()``) does not use the module's."""
        return [i for i, c in enumerate(self.counts)
                if i not in skip and name in c and self._uses_global(i, name)]

    def _uses_global(self, i: int, name: str) -> bool:
        stmt = self.body[i]
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return True
        cache = self.__dict__.setdefault("_global_use", {})
        key = (i, name)
        tree = self.ast_defs.get(stmt.name.value) if self.ast_defs else None
        if key not in cache and tree is not None:  # CPython's ast of the input: ten times cheaper than libcst
            cache[key] = _ast_uses_global(tree, name)
        if key not in cache:
            functions = [stmt] if isinstance(stmt, cst.FunctionDef) else [
                m for m in _block(stmt.body) if isinstance(m, cst.FunctionDef)]
            mentions_outside = isinstance(stmt, cst.ClassDef) and any(
                name in {n.value for n in names_in(m)} for m in _block(stmt.body) if not isinstance(m, cst.FunctionDef))
            cache[key] = mentions_outside or any(
                name in {n.value for n in names_in(f)} and not _binds_locally(f, name) for f in functions)
        return cache[key]

    def value_of(self, name: str) -> Optional[cst.BaseExpression]:
        """The value of a module-level ``name = value`` bound exactly once, else None."""
        if self.bindings.get(name) != 1:
            return None
        for index in (self.agents, self.models, self.sessions, self.strings):
            if name in index:
                return assigned_value(self.body[index[name]])
        for stmt in self.body:
            if assigned_name(stmt) == name:
                return assigned_value(stmt)
        return None


def assigned_name(stmt: cst.CSTNode) -> Optional[str]:
    """``X`` for a statement line ``X = value`` / ``X: T = value`` (single Name target), else None."""
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


def _bound_names(stmt: cst.CSTNode) -> list[str]:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return [stmt.name.value]
    out = []
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets = [small.target]
            elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    local = alias.evaluated_alias or alias.evaluated_name
                    out.append(local.split(".")[0])
            for t in targets:
                out.extend(n.value for n in _target_names(t))
    return out


def _target_names(t: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(t, cst.Name):
        return [t]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for el in t.elements for n in _target_names(el.value)]
    if isinstance(t, cst.StarredElement):
        return _target_names(t.value)
    return []


def module_model(module: cst.Module, fw: "Framework", counts: list[dict[str, int]], filename: str,
                 external: Optional[dict[str, list[str]]] = None, tree=None) -> ModuleModel:
    """Index the top level of ``module`` (``counts``: names referenced per top-level statement; ``tree``: the
    CPython ast of the same code, when the caller has it)."""
    body = list(module.body)
    model = ModuleModel(module=module, body=body, counts=counts, table=fw.table, filename=filename,
                        external=dict(external or {}))
    if tree is not None:
        import ast as _ast

        defs = [n for n in tree.body if isinstance(n, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef))]
        names = [n.name for n in defs]
        model.ast_defs = {n.name: n for n in defs if names.count(n.name) == 1}
    for i, stmt in enumerate(body):
        for name in _bound_names(stmt):
            model.bindings[name] = model.bindings.get(name, 0) + 1
        if isinstance(stmt, cst.FunctionDef):
            model.functions[stmt.name.value] = i
        elif isinstance(stmt, cst.ClassDef):
            model.classes[stmt.name.value] = i
        elif is_main_guard(stmt):
            model.main_guard = i
        name, value = assigned_name(stmt), assigned_value(stmt)
        if name is None or value is None or has_skip_marker(stmt):
            continue
        if isinstance(value, cst.Call):
            if fw.is_agent_ctor(value):
                model.agents[name] = i
            elif fw.is_group_ctor(value):
                model.agents[name] = i
                model.groups.add(name)
            elif fw.model_kind(value) is not None:
                model.models[name] = i
            elif fw.is_session_ctor(value):
                model.sessions[name] = i
        elif is_string(value):
            model.strings[name] = i
    return model


# ----------------------------------------------------------------------------------------------- drivers


@dataclass
class Driver:
    """Code that runs an agent."""

    kind: str  # "function" | "script" | "main" | "workflow"
    name: str  # function name, or the name the workflow is derived from
    indices: list[int]  # top-level statements it is made of
    stmts: list[cst.BaseStatement]  # the statements of its body
    func: Optional[cst.FunctionDef] = None


@dataclass
class RunPlan:
    """How one run site is rewritten."""

    input: str = "keep"  # "keep" | "prompt" (ctx.prompt) | "text" (the prompt's user text) | "drop" | "sub"
    session: Optional[str] = None  # the session variable to pass (OpenAI Agents)
    await_it: bool = False  # wrap the new call in ``await``
    method: Optional[str] = None  # new method name (``invoke_async`` for a sync Strands call, ``run`` for run_sync)
    drop_run_config_model: bool = False


@dataclass
class SessionPlan:
    """A session the workflow creates: ``var = OsmosisMemorySession(name=…)`` before ``before``."""

    var: str
    name: Optional[str]  # the sample name (0.2), None = unnamed (a fresh one each time the statement runs)
    before: Optional[cst.CSTNode]  # the statement it goes before (None: replaces a user session constructor)
    replaces: Optional[cst.Call] = None  # a user session constructor it replaces (``SQLiteSession("x")``)


@dataclass
class CtorPlan:
    """How one agent constructor is rewritten."""

    model: Optional[cst.BaseExpression] = None  # the new ``model=`` value (None: keep what is there)
    messages_prompt: bool = False  # add ``messages=ctx.prompt`` (Strands: the run that takes the prompt)
    model_note: str = ""
    module_var: Optional[str] = None  # ``model=VAR``, VAR module-level: ``model`` is its placeholder (the safe
    fallback: Optional[cst.BaseExpression] = None  # default) unless VAR itself becomes the placeholder in place


@dataclass
class Plan:
    """What to write for one driver, or why not (``problems``)."""

    driver: Driver
    facts: BodyFacts
    mode: str = "inplace"  # "inplace" | "beside"
    problems: list[str] = field(default_factory=list)
    cls_name: str = ""
    deps: list[str] = field(default_factory=list)  # module-level agents/groups built in run(), module order
    entry_desc: str = ""
    bind: Optional[str] = None  # variable bound to the prompt's user text at the top of run()
    bind_at: Optional[cst.CSTNode] = None  # …or at this statement (an interactive read replaced)
    subst: Optional[str] = None  # code of an input expression replaced by the prompt text (handler access)
    subst_map: dict[str, cst.BaseExpression] = field(default_factory=dict)  # code → value (CLI option defaults)
    text_nodes: set[int] = field(default_factory=set)  # id(expression) replaced by the prompt's text
    thread_calls: set[int] = field(default_factory=set)  # id(call) of sync code that runs agents: in a thread
    defaults: list[tuple[str, cst.BaseExpression]] = field(default_factory=list)  # params bound to their defaults
    runs: dict[int, RunPlan] = field(default_factory=dict)  # id(call) → plan
    ctors: dict[int, CtorPlan] = field(default_factory=dict)  # id(call) → plan
    model_assigns: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(model call) → placeholder
    sessions: list[SessionPlan] = field(default_factory=list)
    drop: set[int] = field(default_factory=set)  # id(statement) removed (feeds only the replaced input)
    exits: set[int] = field(default_factory=set)  # id(call) of ``exit(0)`` that becomes ``return``
    callers: list[int] = field(default_factory=list)  # top-level statements that call the driver (migrated)
    notes: list[str] = field(default_factory=list)  # extra words for the edit message
    prompt_text: bool = False  # the helper that extracts the prompt's user text is needed
    factories: dict[str, str] = field(default_factory=dict)  # factory called → name of the rollout version
    factory_plans: dict[str, "Plan"] = field(default_factory=dict)  # factories whose agents the driver runs
    helper_plans: dict[str, "Plan"] = field(default_factory=dict)  # helpers (functions that run agents) it uses
    class_plans: dict[str, list["Plan"]] = field(default_factory=dict)  # classes whose methods run agents: per method
    renames: dict[str, str] = field(default_factory=dict)  # module-level name → its rollout version
    agent_calls: dict[str, str] = field(default_factory=dict)  # imported agent → the factory call replacing it


# input kinds
ENTRY = "entry"
TEMPLATE = "template"
KEEP = "keep"

_IMAGE_KEYS = ("input_image", "input_file", "image_url", "input_audio", "image", "document", "file_data", "file_id")
_HANDLER_NAMES = re.compile(r"(^|_)(handler|lambda_handler|handle)$")


def _is_handler(func: cst.FunctionDef) -> bool:
    """A function a runtime calls by convention: AWS Lambda ``handler(event, context)``."""
    params = [p.name.value for p in func.params.params]
    return bool(_HANDLER_NAMES.search(func.name.value)) and len(params) == 2 and params[1] in ("context", "_context", "ctx", "lambda_context")


def find_drivers(model: ModuleModel, fw: "Framework") -> list[Driver]:
    """Top-level functions that run an agent (themselves or through a helper), the module-level script code, the
    ``__main__`` block. A function that runs an agent and is used by another such function (or by a module-level
    agent, as a tool or guardrail) is a *helper* (``model.helpers``): it is migrated with its drivers, not as a
    workflow of its own."""
    out: list[Driver] = []
    body = model.body
    heads = fw.run_heads()
    agent_names = set(model.agents) | set(model.imported_agents)
    ctor_heads = fw.ctor_heads()
    used_names = set().union(*model.counts) if model.counts else set()
    producers = {
        name for name, i in model.functions.items()
        if ctor_heads & model.counts[i].keys() and sum(name in c for c in model.counts) > 1  # someone calls it
        and _returns(body[i].body)
    }
    del used_names
    model.producers = producers

    def may_run(i: int) -> bool:
        c = model.counts[i]
        return bool(heads & c.keys() or agent_names & c.keys() or fw.ctor_heads() & c.keys() or producers & c.keys())

    runners: set[str] = set()  # functions with a run site of their own
    for name, i in model.functions.items():
        stmt = body[i]
        if not has_skip_marker(stmt) and may_run(i):
            # the body's facts, kept for the planner (one walk of a driver's body, not two)
            facts = body_facts(list(_block(stmt.body)), fw, agent_names, producers)
            model.facts_cache[id(stmt)] = facts
            if facts.runs:
                runners.add(name)
    classes: set[str] = set()  # classes whose methods run agents (kept on `self` or module-level)
    for name, i in model.classes.items():
        stmt = body[i]
        if not has_skip_marker(stmt) and may_run(i) and not _is_osmosis_class(stmt, model.table) \
                and fw.has_run_site(stmt.body, agent_names, producers):
            classes.add(name)
    classes |= set(model.imported_classes)
    model.runner_classes = classes
    # functions that reach a runner through calls (one level is what real programs use; two are allowed)
    reach = set(runners) | classes | set(model.imported_helpers)
    for _ in range(2):
        for name, i in model.functions.items():
            if name not in reach and not has_skip_marker(body[i]) and (set(model.counts[i]) - {name}) & reach:
                reach.add(name)
    helpers: set[str] = set()
    for name in reach - classes - set(model.imported_helpers):
        users = model.users(name, skip=[model.functions[name]])
        # used by a function that runs agents, by an agent (a tool, a guardrail) or by a class (a workflow a
        # previous run wrote calls it): a helper, migrated with its users
        by_code = [j for j in users if isinstance(body[j], cst.ClassDef) or (
            isinstance(body[j], cst.FunctionDef) and body[j].name.value in reach)]
        by_agent = [j for j in users if j in model.agents.values()]
        if name in runners and (by_code or by_agent or fw.is_tool_decorator(body[model.functions[name]])):
            helpers.add(name)
    helpers |= set(model.imported_helpers)
    model.helpers = helpers
    model.runners = runners

    script: list[int] = []
    for i, stmt in enumerate(body):
        if has_skip_marker(stmt):
            continue
        if isinstance(stmt, cst.FunctionDef):
            name = stmt.name.value
            if name in helpers or fw.is_tool_decorator(stmt):
                continue
            if name in runners or (name in reach and _runs_indirectly(stmt, helpers, classes)):
                out.append(Driver("function", name, [i], list(_block(stmt.body)), stmt))
        elif isinstance(stmt, cst.ClassDef) or _is_import(stmt):
            continue
        elif is_main_guard(stmt):
            if may_run(i) and fw.has_run_site(stmt.body, agent_names, producers):
                out.append(Driver("main", _stem(model.filename) or "main", [i], list(_block(stmt.body))))
        elif may_run(i) and fw.has_run_site(stmt, agent_names, producers):
            script.append(i)
    if script:
        # the script: from its first run on, the module-level statements that are not definitions
        first = script[0]
        indices = [
            j for j in range(first, len(body))
            if not isinstance(body[j], (cst.FunctionDef, cst.ClassDef)) and not is_main_guard(body[j])
            and not _is_import(body[j]) and not has_skip_marker(body[j])
        ]
        out.append(Driver("script", _stem(model.filename) or "script", indices, [body[j] for j in indices]))
    return out


def _ast_uses_global(node, name: str) -> bool:
    """The same question as ``ModuleModel._uses_global`` on CPython's ast of a top-level def or class."""
    import ast as _ast

    def function_uses(f) -> bool:
        args = f.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        loads = stores = declared = False
        for n in _ast.walk(f):
            if isinstance(n, _ast.Name) and n.id == name:
                if isinstance(n.ctx, _ast.Store):
                    stores = True
                else:
                    loads = True
            elif isinstance(n, (_ast.Global, _ast.Nonlocal)) and name in n.names:
                declared = True
        if not loads and not any(isinstance(d, _ast.Name) and d.id == name for d in _ast.walk(f)):
            return False
        if name in params:
            return False
        return loads and (declared or not stores)

    if isinstance(node, _ast.ClassDef):
        for item in node.body:
            if isinstance(item, (_ast.FunctionDef, _ast.AsyncFunctionDef)):
                if function_uses(item):
                    return True
            elif any(isinstance(n, _ast.Name) and n.id == name for n in _ast.walk(item)):
                return True
        return any(any(isinstance(n, _ast.Name) and n.id == name for n in _ast.walk(b)) for b in node.bases)
    return function_uses(node)


def _binds_locally(func: cst.FunctionDef, name: str) -> bool:
    """``name`` is local to ``func`` (a parameter, or assigned in its body without ``global``): its mentions
    there are not the module's ``name``."""
    params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    for star in (func.params.star_arg, func.params.star_kwarg):
        if isinstance(star, cst.Param):
            params.add(star.name.value)
    if name in params:
        return True
    found = _AssignsName(func, name)
    fast_visit(func, found)
    return found.assigned and not found.declared_global


class _AssignsName(cst.CSTVisitor):
    """Whether ``func`` assigns ``name`` (``assigned``) and declares it ``global`` (``declared_global``), outside
    its nested functions and classes."""

    def __init__(self, func: cst.FunctionDef, name: str) -> None:
        super().__init__()
        self.func = func
        self.name = name
        self.assigned = False
        self.declared_global = False

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return n is self.func

    def visit_ClassDef(self, n: cst.ClassDef) -> bool:
        return False

    def visit_Global(self, n: cst.Global) -> None:
        if any(x.name.value == self.name for x in n.names):
            self.declared_global = True

    def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
        if any(t.value == self.name for t in _target_names(n.target)):
            self.assigned = True

    def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
        if isinstance(n.target, cst.Name) and n.target.value == self.name and n.value is not None:
            self.assigned = True


def _runs_indirectly(func: cst.FunctionDef, helpers: set[str], classes: set[str]) -> bool:
    """``func`` calls a helper that runs agents, or a method of an object of a class whose methods do
    (``Manager().run(q)``, ``m = Manager(); m.ask(q)``) — building or returning such an object runs nothing."""
    visitor = _IndirectRuns(helpers, classes)
    fast_visit(func.body, visitor)
    return visitor.found


class _IndirectRuns(cst.CSTVisitor):
    """Whether the code calls a helper in ``helpers`` or a method of an object of a class in ``classes`` (an
    object built inline, or assigned to a name earlier in the walk: ``objects``)."""

    def __init__(self, helpers: set[str], classes: set[str]) -> None:
        super().__init__()
        self.helpers = helpers
        self.classes = classes
        self.objects: set[str] = set()
        self.found = False

    def visit_Assign(self, n: cst.Assign) -> None:
        classes = self.classes
        if isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) and n.value.func.value in classes:
            self.objects.update(t.target.value for t in n.targets if isinstance(t.target, cst.Name))

    def visit_Call(self, n: cst.Call) -> None:
        f = n.func
        if isinstance(f, cst.Name) and f.value in self.helpers:
            self.found = True
        elif isinstance(f, cst.Attribute):
            owner = f.value
            if (isinstance(owner, cst.Name) and owner.value in self.objects) or (
                isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value in self.classes
            ):
                self.found = True


def _is_osmosis_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    """An AgentWorkflow / Grader subclass (handled elsewhere)."""
    for base in cls.bases:
        name = (table.resolve(base.value) or code(base.value)).rsplit(".", 1)[-1]
        if name in ("AgentWorkflow", "Grader"):
            return True
    return False


def _stem(filename: str) -> str:
    base = re.split(r"[\\/]", filename)[-1]
    base = base[:-3] if base.endswith(".py") else base
    if base in ("<string>", "__init__", "__main__", ""):
        return ""
    return re.sub(r"\W", "_", base)


def _is_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _block(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    return [cst.SimpleStatementLine(body=list(suite.body))] if isinstance(suite, cst.SimpleStatementSuite) else []


# ----------------------------------------------------------------------------------------------- planning


class _Planner:
    def __init__(self, model: ModuleModel, fw: "Framework", driver: Driver, target: str) -> None:
        self.m = model
        self.fw = fw
        self.d = driver
        self.target = target
        self.p: Plan  # set in run()

    def problem(self, text: str) -> None:
        if text not in self.p.problems:
            self.p.problems.append(text)

    # -- entry point
    def run(self) -> Plan:
        if self.d.kind == "factory":
            return self.run_factory()
        if self.d.kind == "helper":
            return self.run_helper()
        d, m = self.d, self.m
        deps = self.agent_deps(self.initial_agent_names())
        facts = m.facts_cache.pop(id(d.func), None) if d.kind == "function" else None
        if facts is None:
            facts = body_facts(d.stmts, self.fw, set(deps) | set(m.imported_agents), producers=self.producers())
        self.p = Plan(driver=d, facts=facts)
        self.p.deps = sorted(deps, key=lambda n: m.agents[n])
        self.local_agents = {c.var for c in facts.ctors if c.var} | set(deps) | set(m.imported_agents)
        self.aliases: dict[str, list[str]] = {}
        self.check_callers()
        self.check_structure()
        self.resolve_agents()
        self.plan_helpers()
        self.choose_entry()
        self.plan_params()
        self.classify_inputs()
        self.plan_process_code()
        self.plan_models()
        self.plan_runs()
        self.plan_samples()
        self.plan_sync_calls()
        return self.p

    def plan_sync_calls(self) -> None:
        """Sync helpers and sync methods of runner classes that the driver calls run their agents synchronously:
        inside run() they go to a thread (``await asyncio.to_thread(...)``), so the rollout server's event loop is
        not blocked while the agent works (the rollout context follows: to_thread copies the context)."""
        m = self.m
        objects: dict[str, str] = {}
        for name, assigns in self.p.facts.stores.items():
            for a in assigns:
                if isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name) \
                        and a.value.func.value in m.runner_classes:
                    objects[name] = a.value.func.value
        if self.d.kind in ("function", "script", "main") and (m.helpers or m.runner_classes):
            awaited: set[int] = set()  # shared by the walks of all the statements
            for stmt in self.d.stmts:
                fast_visit(stmt, _SyncAgentCalls(m, self.p, objects, awaited))

    def run_helper(self) -> Plan:
        """A function that runs agents for a driver (a helper, a tool, a guardrail): its agents become the Osmosis
        classes, its runs get a fresh session each time (it may be called many times); its inputs are its own."""
        d = self.d
        deps = self.agent_deps(self.initial_agent_names())
        self_agents = getattr(self, "self_agents", set()) | set(self.m.imported_agents)
        facts = body_facts(d.stmts, self.fw, set(deps) | self_agents, producers=self.producers())
        self.p = Plan(driver=d, facts=facts, mode="inplace")
        self.p.deps = sorted(deps, key=lambda n: self.m.agents[n])
        self.local_agents = {c.var for c in facts.ctors if c.var} | set(deps) | self_agents
        self.use_imported()
        self.entry_kind = ""
        self.resolve_agents()
        for run in facts.runs:
            run.input_kind = KEEP
        others = (set(facts.loads) & self.m.helpers) - {d.name}
        if others:
            self.problem(f"`{d.name}` itself uses the helper `{sorted(others)[0]}` (helpers are migrated one level deep)")
        self.plan_process_code()
        self.plan_models()
        self.plan_runs()
        self.plan_samples()
        return self.p

    def use_imported(self) -> None:
        """Names imported from other files of the run: their rollout versions replace them in what is migrated
        (``planner_agent`` → ``planner_agent_for_rollout()``, ``ResearchManager`` → ``ResearchManagerForRollout``);
        a name whose file offers nothing makes the driver fail with that file's reason."""
        m, p = self.m, self.p
        for name in sorted(set(p.facts.loads)):
            if name in m.imported_problems:
                self.problem(m.imported_problems[name])
            elif m.imported_agents.get(name):
                p.agent_calls[name] = m.imported_agents[name]
            elif m.imported_classes.get(name):
                p.renames[name] = m.imported_classes[name]
            elif m.imported_helpers.get(name):
                p.renames[name] = m.imported_helpers[name]

    def plan_helpers(self) -> None:
        """The helpers the driver uses — called (``await check(x)``) or handed to an agent (``tools=[f]``,
        ``input_guardrails=[g]``), and classes whose methods run agents: each is planned; what it cannot do, the
        driver cannot either."""
        self.use_imported()
        for name in sorted(set(self.p.facts.loads) & self.m.runner_classes - set(self.m.imported_classes)):
            self.plan_class(name)
        used = set(self.p.facts.loads) & self.m.helpers - set(self.m.imported_helpers)
        for dep in self.p.deps:
            used |= set(self.m.counts[self.m.agents[dep]]) & self.m.helpers
        for name in sorted(used - {self.d.name}):
            func = self.m.body[self.m.functions[name]]
            assert isinstance(func, cst.FunctionDef)
            driver = Driver("helper", name, [self.m.functions[name]], list(_block(func.body)), func)
            plan = _Planner(self.m, self.fw, driver, self.target).run()
            self.p.helper_plans[name] = plan
            for problem in plan.problems:
                self.problem(f"it uses `{name}`, which runs an agent and cannot be migrated with it: {problem}")

    def plan_class(self, name: str) -> None:
        """A class whose methods build agents on ``self`` and run them (``self.agent(q)``, ``Runner.run(planner,
        …)``): every method that builds or runs an agent is planned as a helper (fresh sessions, placeholder
        models, ``self.model`` resolved to where ``__init__`` sets it)."""
        cls = self.m.body[self.m.classes[name]]
        assert isinstance(cls, cst.ClassDef)
        methods = [m for m in _block(cls.body) if isinstance(m, cst.FunctionDef)]
        self_agents: set[str] = set()
        self_values: dict[str, list[cst.BaseExpression]] = {}
        for method in methods:
            for target, value in _self_assignments(method):
                self_values.setdefault(target, []).append(value)
                if isinstance(value, cst.Call) and self.fw.is_agent_ctor(value):
                    self_agents.add(target)
        shared_assigns: dict[int, cst.BaseExpression] = {}
        plans: list[Plan] = []
        for method in methods:
            if not (self.fw.has_run_site(method.body, set(self.m.agents) | self_agents, self.producers())
                    or _builds_agent(method, self.fw)):
                continue
            driver = Driver("helper", f"{name}.{method.name.value}", [self.m.classes[name]],
                            list(_block(method.body)), method)
            sub = _Planner(self.m, self.fw, driver, self.target)
            sub.self_agents = self_agents
            sub.self_values = self_values
            plan = sub.run()
            plan.model_assigns = shared_assigns if not plan.model_assigns else {**plan.model_assigns}
            shared_assigns.update(plan.model_assigns)
            plan.model_assigns = shared_assigns
            plans.append(plan)
            for problem in plan.problems:
                self.problem(f"it uses `{name}`, whose method `{method.name.value}` cannot be migrated: {problem}")
        self.p.class_plans[name] = plans

    def run_factory(self) -> Plan:
        """A function that builds and returns an agent: only its constructors (and their models) are planned."""
        facts = body_facts(self.d.stmts, self.fw, set())
        self.p = Plan(driver=self.d, facts=facts)
        self.local_agents = {c.var for c in facts.ctors if c.var}
        self.entry_kind = ""
        self.plan_models()
        for c in facts.ctors:
            name_arg = next((a for a in c.call.args if a.keyword is not None and a.keyword.value == "name"), None)
            if c.in_loop and name_arg is not None:
                self.problem(f"`{self.d.name}` builds agents named `{code(name_arg.value)}` in a loop")
        return self.p

    def initial_agent_names(self) -> set[str]:
        used: set[str] = set()
        if self.d.kind == "helper" and self.d.func is not None and "." in self.d.name:  # a method: its own names
            used = {n.value for n in names_in(self.d.func.body)}
        else:
            for i in self.d.indices:
                used |= set(self.m.counts[i])
        return used & set(self.m.agents)

    def agent_deps(self, names: set[str]) -> set[str]:
        """Module-level agents reachable from ``names`` through other module agents' arguments (handoffs,
        ``as_tool``, a Swarm's members)."""
        out: set[str] = set()
        todo = [n for n in names if n in self.m.agents]
        while todo:
            n = todo.pop()
            if n in out:
                continue
            out.add(n)
            todo.extend(x for x in self.m.counts[self.m.agents[n]] if x in self.m.agents and x != n)
        return out

    # -- who calls it, and what it is
    def check_callers(self) -> None:
        d, m, p = self.d, self.m, self.p
        if d.kind != "function":
            p.mode = "inplace"
            return
        func = d.func
        assert func is not None
        index = d.indices[0]
        others: list[str] = []
        callers: list[int] = []
        for j in m.users(d.name, skip=[index]):
            stmt = m.body[j]
            if is_main_guard(stmt) or (
                not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and not _is_import(stmt)
                and _calls_only(stmt, d.name)
            ):
                callers.append(j)
            else:
                others.append(_describe_stmt(stmt))
        decorators = [code(dec.decorator) for dec in func.decorators]
        if decorators:
            if self.fw.is_tool_decorator(func):
                self.problem(
                    f"`{d.name}` is a tool (@{decorators[0]}) that runs an inner agent: it stays a tool, "
                    "see the TODO on the agent it builds"
                )
                return
            others.append(f"the decorator @{decorators[0]}")
        if m.external.get(d.name):
            others.extend(m.external[d.name])
        if _is_handler(func):
            others.append("the Lambda runtime (a `handler(event, context)`)")
        if others:
            p.mode = "beside"
            p.notes.append(f"`{d.name}` kept for {', '.join(dict.fromkeys(others))}")
        else:
            p.callers = callers

    def check_structure(self) -> None:
        d, f = self.d, self.p.facts
        if f.yields:
            self.problem(f"`{d.name}` is a generator (it yields)")
        if d.func is not None:
            params = d.func.params
            if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
                star = [x.name.value for x in (params.star_arg, params.star_kwarg) if isinstance(x, cst.Param)]
                if any(f.load_count(s) for s in star):
                    self.problem(f"`{d.name}` reads `*{star[0]}`: a rollout only supplies the prompt")
        if "ctx" in f.loads or "ctx" in f.stores:
            if self.d.kind != "workflow":
                self.problem(f"`{d.name}` already uses a name `ctx` (run() receives the rollout context as `ctx`)")
        if "self" in f.loads and self.d.kind != "workflow":
            self.problem(f"`{d.name}` uses `self`")

    # -- agents
    def resolve_agents(self) -> None:
        """Every run must run an agent the migration builds: a local or module-level agent, an alias of one, the
        agent a previous run ended with (``result.last_agent``), or one from a factory of this module."""
        f = self.p.facts
        known = set(self.local_agents)
        # aliases: `agent = triage_agent`, `agent = result.last_agent`, `agent = create_agent()`
        changed = True
        while changed:
            changed = False
            for name, assigns in f.stores.items():
                if name in known or not assigns:
                    continue
                ok = True
                for a in assigns:
                    v = a.value
                    if isinstance(v, cst.Name) and v.value in known:
                        continue
                    if isinstance(v, cst.Attribute) and v.attr.value in ("last_agent", "current_agent"):
                        continue
                    if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in self.m.functions:
                        fac = self.factory(v.func.value)
                        if fac is not None:
                            self.use_factory(v.func.value)
                            continue
                    ok = False
                    break
                if ok:
                    known.add(name)
                    changed = True
        self.local_agents = known
        for run in f.runs:
            if self.already_migrated(run):
                continue
            if run.agent is None:
                what = code(run.shape.agent)
                if isinstance(run.shape.agent, cst.Attribute) and code(run.shape.agent.value) == "self":
                    self.problem(f"it runs `{what}`, an agent kept on an object")
                elif isinstance(run.shape.agent, cst.Call) and isinstance(run.shape.agent.func, cst.Name) \
                        and self.factory(run.shape.agent.func.value) is not None:
                    self.use_factory(run.shape.agent.func.value)
                    continue
                else:
                    self.problem(f"it runs `{what}`, which is not an agent built in this module")
            elif run.agent not in known:
                built = [a.value for a in f.stores.get(run.agent, ()) if isinstance(a.value, cst.Call)]
                if built:
                    cls = code(built[0].func)
                    self.problem(f"it runs `{run.agent}`, a `{cls}`: only agents built with the framework's Agent "
                                 "class are migrated")
                else:
                    self.problem(f"it runs `{run.agent}`, which is not an agent built in this module (a parameter "
                                 "or an object from elsewhere)")

    def producers(self) -> set[str]:
        """Top-level functions of the module that build and return an agent (factories)."""
        cache = self.m.__dict__.setdefault("_factories", None)
        if cache is None:
            cache = {name for name in self.m.producers if self.factory(name) is not None}
            self.m.__dict__["_factories"] = cache
        return cache

    def use_factory(self, name: str) -> None:
        """The driver runs agents from the factory ``name``: plan the factory too (its agents must be the Osmosis
        classes on the placeholder model when the workflow calls it)."""
        if name in self.p.factory_plans:
            return
        func = self.factory(name)
        assert func is not None
        driver = Driver("factory", name, [self.m.functions[name]], list(_block(func.body)), func)
        plan = _Planner(self.m, self.fw, driver, self.target).run()
        self.p.factory_plans[name] = plan
        for problem in plan.problems:
            self.problem(f"its agent comes from `{name}()`, which cannot be migrated: {problem}")

    def factory(self, name: str) -> Optional[cst.FunctionDef]:
        """``name`` is a top-level function that builds and returns an agent without running one."""
        i = self.m.functions.get(name)
        if i is None:
            return None
        func = self.m.body[i]
        assert isinstance(func, cst.FunctionDef)
        if self.fw.has_run_site(func.body, set(self.m.agents)):
            return None
        builds = _AgentCtors(self.fw)
        fast_visit(func.body, builds)
        returns = _returns(func.body)
        if not builds.found or not returns:
            return None
        return func

    # -- the program's input
    def choose_entry(self) -> None:
        f, p, d = self.p.facts, self.p, self.d
        self.entry_kind = ""  # "var" | "expr" | "literal" | "workflow"
        self.entry_var: Optional[str] = None
        self.entry_expr: Optional[str] = None
        self.entry_site: Optional[RunSite] = None
        runs = [r for r in f.runs]
        if d.kind == "workflow":
            self.entry_kind, self.entry_expr = "expr", "ctx.prompt"
            return
        # 1. interactive reads / command line
        reads = [x for x in f.process if x.kind in ("input", "argv") and x.nested is None]
        read_vars: list[tuple[str, cst.CSTNode]] = []
        for x in reads:
            stmt = x.stmt
            var = _simple_assign_target(stmt)
            if var is None or x.in_loop:
                continue
            if len(f.stores.get(var, ())) == 1:
                read_vars.append((var, stmt))
        argparse_args = self.argparse_result()
        if len({v for v, _ in read_vars}) > 1:
            self.problem("it reads its input " + " and ".join(f"`{v}`" for v, _ in read_vars) +
                         " from the user: a rollout has one prompt")
            return
        if read_vars:
            self.entry_kind, self.entry_var = "var", read_vars[0][0]
            self.entry_read_stmt = read_vars[0][1]
            p.entry_desc = f"`{self.entry_var}` (read with {self.read_what(read_vars[0][1])})"
            return
        if argparse_args is not None:
            attrs = self.argparse_attrs(argparse_args)
            reaching = [a for a in attrs if self.reaches_input(f"{argparse_args}.{a}", expr=True)]
            if len(reaching) == 1:
                self.entry_kind, self.entry_expr = "expr", f"{argparse_args}.{reaching[0]}"
                p.entry_desc = f"the command-line argument `{self.entry_expr}`"
                return
            if len(reaching) > 1:
                self.problem("the command-line arguments " + ", ".join(f"`{argparse_args}.{a}`" for a in reaching)
                             + " all reach the agents' input: a rollout has one prompt")
                return
        # 2. parameters
        if d.func is not None:
            params = [x for x in (*d.func.params.posonly_params, *d.func.params.params, *d.func.params.kwonly_params)]
            reaching = [x for x in params if self.reaches_input(x.name.value)]
            if len(reaching) > 1:
                self.problem("its parameters " + " and ".join(f"`{x.name.value}`" for x in reaching)
                             + " all reach the agents' input: a rollout has one prompt")
                return
            if reaching:
                name = reaching[0].name.value
                access = self.handler_access(name)
                if access is not None:
                    self.entry_kind, self.entry_expr = "expr", access
                    p.entry_desc = f"`{access}`"
                else:
                    self.entry_kind, self.entry_var = "var", name
                    p.entry_desc = f"the parameter `{name}`"
                self.entry_param = name
                return
        # 3. the literal prompt of the first run
        for run in sorted(runs, key=lambda r: r.order):
            inp = self.input_of(run)
            if inp is None:
                continue
            if run.in_loop or run.nested:
                break
            if is_string(inp) or (isinstance(inp, cst.Name) and self.string_constant(inp.value)):
                self.entry_kind, self.entry_site = "literal", run
                p.entry_desc = f"the prompt `{code(inp, 40)}` of the first run"
                return
            break
        if not runs:
            # it runs agents only through a helper or an object: the literal it hands them is the program's input
            indirect = self.indirect_inputs()
            if indirect and (is_string(indirect[0]) or (isinstance(indirect[0], cst.Name)
                                                        and self.string_constant(indirect[0].value))):
                self.entry_kind = "indirect"
                p.text_nodes.add(id(indirect[0]))
                p.prompt_text = True
                p.entry_desc = f"the prompt `{code(indirect[0], 40)}`"
                return
            if indirect:
                self.problem(f"it cannot tell which input is the program's own: it hands `{code(indirect[0], 50)}` "
                             "to the code that runs the agent")
            return
        first = next((r for r in sorted(runs, key=lambda r: r.order) if self.input_of(r) is not None), None)
        if first is None:
            if any(r.shape.method not in ("call",) or r.shape.input_arg is None for r in runs) and runs:
                # agents started without an input (Strands `agent()` on messages it was given)
                return
            return
        inp = self.input_of(first)
        assert inp is not None
        media = _media_key(inp)
        if media:
            self.problem(
                f"the input of its first run holds an `{media}` part (`{code(inp, 50)}`): the rollout prompt "
                "(ctx.prompt) carries only the dataset's messages — put the media into the dataset or merge it "
                "with ctx.prompt by hand"
            )
        elif isinstance(inp, (cst.List, cst.Tuple)):
            self.problem(
                f"its first run starts from a literal conversation (`{code(inp, 50)}`): only the rollout prompt "
                "(ctx.prompt) can be the program's input — merge the extra turns into the dataset or by hand"
            )
        else:
            self.problem(f"it cannot tell which input is the program's own: the first run's input is `{code(inp, 50)}`")

    def plan_params(self) -> None:
        """Parameters other than the input: unused ones go, used ones keep their default (bound at the top of
        run()); a used parameter without a default is something a rollout cannot supply."""
        func, f, p = self.d.func, self.p.facts, self.p
        if func is None or self.d.kind == "workflow":
            return
        entry = getattr(self, "entry_param", None)
        for prm in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
            name = prm.name.value
            uses = f.load_count(name)
            if name == entry:
                if self.entry_kind == "expr":
                    accesses = sum(_subexpr_codes(s).count(self.entry_expr) for s in self.d.stmts)
                    if uses > accesses:
                        self.problem(f"it reads `{name}` beyond its prompt (`{self.entry_expr}`): a rollout only "
                                     "supplies the prompt")
                continue
            if not uses:
                continue
            if prm.default is not None:
                p.defaults.append((name, prm.default))
                continue
            value = self.caller_value(prm)
            if value is not None:
                p.defaults.append((name, value))
                p.notes.append(f"`{name}` = `{code(value, 30)}` as its caller passed it")
            else:
                self.problem(f"its parameter `{name}` is used but has no default: a rollout only supplies the prompt")

    def caller_value(self, prm: cst.Param) -> Optional[cst.BaseExpression]:
        """The constant the one caller in this module (the ``__main__`` block, a module-level call) passes for
        ``prm`` — a literal, or a command-line option's default — else None."""
        func = self.d.func
        assert func is not None
        params = [x.name.value for x in (*func.params.posonly_params, *func.params.params)]
        calls: list[tuple[cst.Call, int]] = []
        for j in self.m.users(self.d.name, skip=self.d.indices):
            for call in _calls_of(self.m.body[j], self.d.name):
                calls.append((call, j))
        if len(calls) != 1:
            return None
        call, j = calls[0]
        name = prm.name.value
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
        if arg is None and name in params:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            index = params.index(name)
            arg = positional[index].value if index < len(positional) else None
        if arg is None:
            return None
        if isinstance(arg, (cst.Integer, cst.Float)) or is_string(arg) or (
            isinstance(arg, cst.Name) and arg.value in ("True", "False", "None")
        ):
            return arg
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name):
            block = self.m.body[j]
            stmts = list(_block(block.body)) if isinstance(block, cst.If) else [block]
            value = _argparse_defaults(stmts).get(arg.attr.value)
            if value is not None:
                return value
        return None

    def read_what(self, stmt: cst.CSTNode) -> str:
        for x in self.p.facts.process:
            if x.stmt is stmt:
                return x.what
        return "input()"

    def argparse_result(self) -> Optional[str]:
        for x in self.p.facts.process:
            if x.kind == "argparse" and code(x.node).endswith(("parse_args()", "parse_args(argv)")) or (
                x.kind == "argparse" and isinstance(x.node, cst.Call) and isinstance(x.node.func, cst.Attribute)
                and x.node.func.attr.value in ("parse_args", "parse_known_args")
            ):
                var = _simple_assign_target(x.stmt)
                if var is not None:
                    return var
        return None

    def argparse_attrs(self, var: str) -> list[str]:
        attrs: list[str] = []
        for stmt in self.d.stmts:
            for node in _attributes_of(stmt, var):
                if node not in attrs:
                    attrs.append(node)
        return attrs

    def string_constant(self, name: str) -> bool:
        stores = self.p.facts.stores.get(name)
        if stores:
            return len(stores) == 1 and stores[0].value is not None and is_string(stores[0].value) and not stores[0].in_loop
        return name in self.m.strings and self.m.bindings.get(name) == 1

    def input_of(self, run: RunSite) -> Optional[cst.BaseExpression]:
        return run.shape.input_arg.value if run.shape.input_arg is not None else None

    def deps_of(self, expr: cst.CSTNode, seen: Optional[set[str]] = None) -> set[str]:
        """Names ``expr`` depends on, through the block's assignments (transitively) — but not through the result
        of a run: what an agent answered is the agent's output, not the program's input."""
        seen = set() if seen is None else seen
        out: set[str] = set()
        for n in names_in(expr):
            if n.value in seen:
                continue
            seen.add(n.value)
            out.add(n.value)
            for a in self.p.facts.stores.get(n.value, ()):
                if a.value is not None and not self.holds_run(a):
                    out |= self.deps_of(a.value, seen)
            for arg in self.nested_param_args(n.value):
                out |= self.deps_of(arg, seen)
        return out

    def holds_run(self, a) -> bool:
        """The assignment stores (something computed from) a run's result: ``r = await Runner.run(...)``,
        ``r = await drain(r, verbose)``, ``state = r.to_state()`` where ``r`` held a run."""
        cache = self.__dict__.setdefault("_holds_run", {})
        key = id(a)
        if key in cache:
            return cache[key]
        cache[key] = False
        value = a.value
        result = any(contains(value, r.call) for r in self.p.facts.runs) if value is not None else False
        if not result and value is not None:
            for n in names_in(value):
                if any(self.holds_run(b) for b in self.p.facts.stores.get(n.value, ()) if b is not a):
                    result = True
                    break
        cache[key] = result
        return result

    def nested_param_args(self, name: str) -> list[cst.BaseExpression]:
        """When ``name`` is a parameter of a function defined in the block (``async def ask(prompt)``), the
        arguments the block passes for it (``ask(question)`` → ``question``): data flows through the call."""
        out: list[cst.BaseExpression] = []
        for fname, func in self.p.facts.nested_defs.items():
            params = [x.name.value for x in func.params.params]
            if name not in params:
                continue
            index = params.index(name)
            for stmt in self.d.stmts:
                for call in _calls_of(stmt, fname):
                    positional = [a for a in call.args if a.keyword is None and not a.star]
                    if index < len(positional):
                        out.append(positional[index].value)
                    out.extend(a.value for a in call.args if a.keyword is not None and a.keyword.value == name)
        return out

    def indirect_inputs(self) -> list[cst.BaseExpression]:
        """First arguments of the calls that run agents through a helper or an object of a runner class
        (``assistant.suggest("eggs")``, ``await ResearchManager().run(query)``, ``await check(text)``), in order."""
        m = self.m
        if not m.helpers and not m.runner_classes:
            return []
        cached = self.__dict__.get("_indirect")
        if cached is not None:
            return cached
        objects = {name for name, assigns in self.p.facts.stores.items()
                   if any(isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name)
                          and a.value.func.value in m.runner_classes for a in assigns)}
        out: list[cst.BaseExpression] = []
        for stmt in self.d.stmts:
            fast_visit(stmt, _IndirectInputs(m, objects, out))
        self._indirect = out
        return out

    def reaches_input(self, name: str, expr: bool = False) -> bool:
        inputs = [self.input_of(r) for r in self.p.facts.runs] + self.indirect_inputs()
        for inp in inputs:
            if inp is None:
                continue
            if expr:
                if name in _subexpr_codes(inp) or any(
                    name in _subexpr_codes(a.value)
                    for dep in self.deps_of(inp) for a in self.p.facts.stores.get(dep, ()) if a.value is not None
                ):
                    return True
            elif name in self.deps_of(inp):
                return True
        return False

    def handler_access(self, param: str) -> Optional[str]:
        """``event.get("prompt")`` / ``event["prompt"]`` / ``body.message`` when every use of ``param`` that
        reaches an input is that one access — in the input, or as the value of an assignment the input reads
        (``prompt = event.get("prompt", "")``, also with ``.strip()`` and the like around it) — (a handler argument
        carrying the prompt), else None. An access whose result is computed on before it reaches the input
        (``body = json.loads(event["body"])``) is a problem: which part of it is the prompt cannot be told."""
        accesses: set[str] = set()
        for run in self.p.facts.runs:
            inp = self.input_of(run)
            if inp is None:
                continue
            for n in names_in(inp):
                if n.value == param:
                    parent = _access_around(inp, n)
                    if parent is None:
                        return None
                    accesses.add(code(parent, 200))
            for dep in self.deps_of(inp):
                for a in self.p.facts.stores.get(dep, ()):
                    if a.value is None or self.holds_run(a):
                        continue
                    for n in names_in(a.value):
                        if n.value != param:
                            continue
                        parent = _access_around(a.value, n)
                        if parent is None:
                            return None  # the parameter itself is passed on: it is the text
                        if not _text_of(a.value, parent):
                            self.problem(f"the agents' input comes from `{param}` through `{code(a.value, 80)}`: which "
                                         "part of that is the rollout's prompt cannot be told")
                            return None
                        accesses.add(code(parent, 200))
        if len(accesses) != 1:
            return None
        return accesses.pop()

    # -- each run's input
    def classify_inputs(self) -> None:
        f, p = self.p.facts, self.p
        other_uses = False
        for run in f.runs:
            inp = self.input_of(run)
            if inp is None:
                run.input_kind = KEEP
                continue
            if self.entry_kind == "literal":
                run.input_kind = ENTRY if run is self.entry_site else KEEP
            elif self.entry_kind == "var":
                var = self.entry_var
                reassigned = len(f.stores.get(var, ())) > (1 if self.d.func is None or var != getattr(self, "entry_param", None) else 0)
                if isinstance(inp, cst.Name) and inp.value == var and not reassigned:
                    run.input_kind = ENTRY
                elif var in self.deps_of(inp):
                    run.input_kind = TEMPLATE
                else:
                    run.input_kind = KEEP
            elif self.entry_kind == "expr":
                text = code(inp, 400)
                if text == self.entry_expr:
                    run.input_kind = ENTRY
                elif self.entry_expr in _subexpr_codes(inp):
                    run.input_kind = TEMPLATE
                else:
                    run.input_kind = KEEP
            else:
                run.input_kind = KEEP
            if run.input_kind == ENTRY and (run.in_loop or run.nested):
                # the prompt fed again and again: a REPL or a batch over inputs, not one rollout
                run.input_kind = TEMPLATE
        # what needs the prompt's text
        if self.entry_kind == "var":
            var = self.entry_var
            entry_loads = sum(1 for r in f.runs if r.input_kind == ENTRY)
            if f.load_count(var) > entry_loads:
                p.prompt_text = True
                if getattr(self, "entry_read_stmt", None) is not None:
                    p.bind_at = self.entry_read_stmt
                else:
                    p.bind = var
            elif getattr(self, "entry_read_stmt", None) is not None:
                p.drop.add(id(self.entry_read_stmt))
            other_uses = f.load_count(var) > entry_loads
        elif self.entry_kind == "expr" and self.entry_expr != "ctx.prompt":
            if any(r.input_kind == TEMPLATE for r in f.runs) or self.expr_used_elsewhere():
                p.subst = self.entry_expr
                p.prompt_text = True
        del other_uses

    def expr_used_elsewhere(self) -> bool:
        count = 0
        for stmt in self.d.stmts:
            count += _subexpr_codes(stmt).count(self.entry_expr)
        used_in_entry = sum(1 for r in self.p.facts.runs if r.input_kind == ENTRY)
        return count > used_in_entry

    # -- interactive and process-level code
    def plan_process_code(self) -> None:
        f, p = self.p.facts, self.p
        argparse_var = self.argparse_result()
        allowed_argparse = argparse_var is not None and self.entry_kind == "expr" and (self.entry_expr or "").startswith(argparse_var + ".")
        for x in f.process:
            if x.kind in ("input", "argv") and getattr(self, "entry_read_stmt", None) is x.stmt:
                continue
            if x.kind == "argparse" and allowed_argparse:
                continue
            where = f" in `{x.nested}`" if x.nested else ""
            if x.kind == "input":
                if x.in_loop and any(r.in_loop for r in f.runs):
                    self.problem(f"it reads {x.what} in a loop{where} (an interactive REPL): a rollout is one "
                                 "conversation from ctx.prompt — write run() for one turn by hand")
                else:
                    self.problem(f"it asks the user ({x.what}{where}) beyond its one input")
            elif x.kind == "confirm":
                self.problem(f"it asks a human to confirm ({x.what}{where}): a rollout has no one to ask")
            elif x.kind == "exit":
                self.problem(f"it ends the process ({x.what}{where}), which would stop the rollout server")
            elif x.kind == "sleep":
                self.problem(f"it calls {x.what}{where}, which would block the rollout server's event loop")
            elif x.kind == "server":
                self.problem(f"it starts a server or UI ({x.what}{where})")
            elif x.kind == "argparse":
                self.problem(f"it parses the command line ({x.what}){'' if argparse_var is None else ' beyond the one input'}")
            elif x.kind == "argv":
                self.problem(f"it reads `sys.argv`{where} beyond its one input")
        if allowed_argparse:
            assert argparse_var is not None
            uses = [a for a in self.argparse_attrs(argparse_var) if f"{argparse_var}.{a}" != self.entry_expr]
            self.argparse_other = uses
            # dropped if every other use is a model setting the placeholder replaces (checked in plan_models)
        for call, stmt, zero in f.exits:
            if zero and _is_expr_stmt_of(stmt, call):
                p.exits.add(id(call))
            elif zero:
                self.problem(f"it ends the process inside an expression (`{code(stmt, 40)}`)")
        # functions of the module it calls that are interactive themselves (`approved = ask_approval(item)`)
        for name in sorted(set(f.loads) & set(self.m.functions) - {self.d.name}):
            what = interactive_function(self.m, self.fw, name)
            if what:
                self.problem(f"it calls `{name}()`, which {what}")
        # `while True` around a run without a way out but `break`: a loop the rollout would repeat forever
        for run in f.runs:
            if run.in_loop == "while True" and not any(x.kind == "input" for x in f.process):
                pass

    # -- models
    def plan_models(self) -> None:
        f, p = self.p.facts, self.p
        for call, resolved in f.foreign:
            self.problem(f"it builds `{resolved.rsplit('.', 1)[-1]}(...)`, an agent class the migration does not "
                         "handle: its model would stay the fixed one")
        dropped: list[cst.CSTNode] = []
        ctors = list(f.ctors)
        # module-level agents built in run(): their constructors too
        self.dep_ctors: list[tuple[str, cst.Call]] = []
        for name in p.deps:
            value = assigned_value(self.m.body[self.m.agents[name]])
            if isinstance(value, cst.Call) and name not in self.m.groups:
                self.dep_ctors.append((name, value))
        for ctor_call, where in [*((c.call, c.nested) for c in ctors), *((v, None) for _, v in self.dep_ctors)]:
            plan, reason, gone = self.fw.plan_model(ctor_call, self, where)
            if reason:
                self.problem(reason)
                continue
            p.ctors[id(ctor_call)] = plan
            dropped.extend(gone)
        # command-line arguments other than the input: fine if they only fed what the placeholder replaces, else
        # the rollout runs with the option's default (as the program does when the option is not given)
        defaults = _argparse_defaults(self.d.stmts)
        for attr in getattr(self, "argparse_other", []):
            var = self.argparse_result()
            uses_ok = all(any(contains(g, n) for g in dropped) for n in _attribute_nodes(self.d.stmts, var, attr))
            if uses_ok:
                continue
            if attr in defaults and defaults[attr] is not None:
                p.subst_map[f"{var}.{attr}"] = defaults[attr]
                p.notes.append(f"`{var}.{attr}` → its default")
            else:
                self.problem(f"it reads the command-line argument `{var}.{attr}`, which has no default: a rollout "
                             "only supplies the prompt")
        if getattr(self, "argparse_other", None) is not None and not [x for x in self.p.problems if "command-line" in x]:
            for x in f.process:
                if x.kind == "argparse" or (x.kind == "argv" and False):
                    p.drop.add(id(x.top if x.top is x.stmt else x.stmt))
            # `parser.add_argument(...)` statements and the parser itself go with parse_args()
            var = self.argparse_result()
            for stmt in self.d.stmts:
                if _is_parser_stmt(stmt, var):
                    p.drop.add(id(stmt))

    def resolve_attr(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """What ``self.x`` holds when one method of the class sets it once (``self.model = LiteLLMModel(...)``)."""
        values = getattr(self, "self_values", {})
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            found = values.get(f"self.{expr.attr.value}", [])
            if len(found) == 1:
                return found[0]
        return None

    def resolve_local(self, name: str) -> Optional[tuple[str, cst.BaseExpression, object]]:
        """What a name used as a model holds: ("local", value, assign) / ("module", value, index) /
        ("param", default or None, param) / None."""
        stores = self.p.facts.stores.get(name)
        if stores:
            if len(stores) == 1 and stores[0].simple and stores[0].value is not None and not stores[0].in_loop:
                return "local", stores[0].value, stores[0]
            return None
        if self.d.func is not None:
            for prm in (*self.d.func.params.params, *self.d.func.params.kwonly_params, *self.d.func.params.posonly_params):
                if prm.name.value == name:
                    return "param", prm.default, prm
        value = self.m.value_of(name)
        if value is not None:
            return "module", value, self.m.models.get(name)
        return None

    # -- runs and sessions
    def plan_runs(self) -> None:
        f, p = self.p.facts, self.p
        for run in f.runs:
            if self.already_migrated(run):
                continue
            rp = RunPlan()
            if run.in_lambda:
                self.problem(f"it runs `{run.agent or code(run.shape.agent)}` inside a lambda")
                continue
            if run.in_loop == "comprehension":
                self.problem(f"it runs `{run.agent or code(run.shape.agent)}` in a comprehension "
                             f"(`{code(run.stmt, 50)}`): give each run its own sample by hand")
                continue
            if run.input_kind == ENTRY:
                rp.input = "prompt"
            elif run.input_kind == TEMPLATE and p.subst:
                rp.input = "sub"
            problem = self.fw.plan_run(run, rp, self)
            if problem:
                self.problem(problem)
                continue
            p.runs[id(run.call)] = rp
        if p.prompt_text or any(r.input == "text" for r in p.runs.values()):
            p.prompt_text = True

    def already_migrated(self, run: RunSite) -> bool:
        """A run that already passes an ``OsmosisMemorySession`` (written by a previous migration or by hand)."""
        sess = run.shape.session
        if isinstance(sess, cst.Call):
            return code(sess.func).endswith("OsmosisMemorySession")
        if isinstance(sess, cst.Name):
            for a in self.p.facts.stores.get(sess.value, ()):
                if isinstance(a.value, cst.Call) and code(a.value.func).endswith("OsmosisMemorySession"):
                    return True
        return False

    def plan_samples(self) -> None:
        problem = self.fw.plan_samples(self)
        if problem:
            self.problem(problem)


class _IndirectInputs(cst.CSTVisitor):
    """The first positional argument of each call of a helper or of a method of a runner class's object (built inline
    or held in a variable of ``objects``), appended to ``out``."""

    def __init__(self, m: ModuleModel, objects: set[str], out: list[cst.BaseExpression]) -> None:
        super().__init__()
        self.m = m
        self.objects = objects
        self.out = out

    def visit_Call(self, n: cst.Call) -> None:
        m = self.m
        f = n.func
        hit = (isinstance(f, cst.Name) and f.value in m.helpers) or (
            isinstance(f, cst.Attribute) and (
                (isinstance(f.value, cst.Name) and f.value.value in self.objects)
                or (isinstance(f.value, cst.Call) and isinstance(f.value.func, cst.Name)
                    and f.value.func.value in m.runner_classes)
            )
        )
        positional = [a for a in n.args if a.keyword is None and not a.star]
        if hit and positional:
            self.out.append(positional[0].value)


class _SyncAgentCalls(cst.CSTVisitor):
    """The calls not awaited (``awaited``: ids of awaited expressions met so far) of a sync helper or of a sync method
    of a runner class (through ``objects``: variable → its class), added to ``p.thread_calls``; nested functions and
    lambdas are not entered."""

    def __init__(self, m: ModuleModel, p: Plan, objects: dict[str, str], awaited: set[int]) -> None:
        super().__init__()
        self.m = m
        self.p = p
        self.objects = objects
        self.awaited = awaited

    def visit_Await(self, n: cst.Await) -> None:
        self.awaited.add(id(n.expression))

    def visit_Call(self, n: cst.Call) -> None:
        m, p = self.m, self.p
        f = n.func
        if id(n) in self.awaited:
            return
        if isinstance(f, cst.Name) and f.value in m.helpers and f.value in m.functions:
            func = m.body[m.functions[f.value]]
            if isinstance(func, cst.FunctionDef) and func.asynchronous is None:
                p.thread_calls.add(id(n))
        elif isinstance(f, cst.Attribute):
            owner = f.value
            cls_name = self.objects.get(owner.value) if isinstance(owner, cst.Name) else (
                owner.func.value if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name)
                and owner.func.value in m.runner_classes else None)
            if cls_name and _is_sync_method(m, cls_name, f.attr.value):
                p.thread_calls.add(id(n))

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False


def _is_sync_method(m: ModuleModel, cls_name: str, method: str) -> bool:
    """``method`` of the module's class ``cls_name`` is a plain (not async) def."""
    if cls_name not in m.classes:
        return False  # imported: its rollout version is what runs (awaited as written)
    cls = m.body[m.classes[cls_name]]
    for stmt in _block(cls.body):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method:
            return stmt.asynchronous is None
    return False


def plan_driver(model: ModuleModel, fw: "Framework", driver: Driver, target: str = "0.2") -> Plan:
    """The plan for one driver (see the module docstring); ``plan.problems`` lists why it cannot be migrated."""
    return _Planner(model, fw, driver, target).run()


# ----------------------------------------------------------------------------------------------- helpers


_simple_assign_target = assigned_name  # ``X`` of a statement line ``X = value``


def _calls_only(stmt: cst.CSTNode, name: str) -> bool:
    """A module-level statement whose references to ``name`` are calls (``asyncio.run(main())``, ``main()``)."""
    visitor = _OnlyCalled(name)
    fast_visit(stmt, visitor)
    return visitor.ok


class _OnlyCalled(cst.CSTVisitor):
    """``ok`` stays True while every mention of ``name`` is the callee of a call (attribute names are not mentions)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.ok = True

    def visit_Call(self, n: cst.Call) -> bool:
        if isinstance(n.func, cst.Name) and n.func.value == self.name:
            for a in n.args:
                fast_visit(a, self)
            return False
        return True

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        fast_visit(n.value, self)
        return False

    def visit_Name(self, n: cst.Name) -> None:
        if n.value == self.name:
            self.ok = False


def _calls_of(node: cst.CSTNode, name: str) -> list[cst.Call]:
    out: list[cst.Call] = []
    fast_visit(node, _CallsOf(name, out))
    return out


class _CallsOf(cst.CSTVisitor):
    """The calls of the plain name ``name`` (``name(...)``), appended to ``out``."""

    def __init__(self, name: str, out: list[cst.Call]) -> None:
        super().__init__()
        self.name = name
        self.out = out

    def visit_Call(self, n: cst.Call) -> None:
        if isinstance(n.func, cst.Name) and n.func.value == self.name:
            self.out.append(n)


_PROCESS_WORDS = re.compile(r"input|exit|quit|sleep|getpass|confirm|prompt|ask|argv|uvicorn|serve|argparse|launch")
_PROCESS_WHAT = {"input": "asks the user ({})", "confirm": "asks a human to confirm ({})", "argv": "reads {}",
                 "exit": "ends the process ({})", "sleep": "calls {} (it would block the rollout server)",
                 "server": "starts a server or UI ({})", "argparse": "parses the command line ({})"}


def interactive_function(model: ModuleModel, fw: "Framework", name: str) -> str:
    """Why the top-level function ``name`` must not run inside a rollout (it reads input, exits, sleeps…), or ""."""
    cache = model.__dict__.setdefault("_interactive", {})
    if name in cache:
        return cache[name]
    cache[name] = ""
    i = model.functions.get(name)
    if i is None or name in model.helpers or name in model.runners:
        return ""
    if not any(_PROCESS_WORDS.search(k) for k in model.counts[i]):
        return ""  # cheap: no word that could be such a call
    func = model.body[i]
    assert isinstance(func, cst.FunctionDef)
    facts = body_facts(list(_block(func.body)), fw, set())
    if facts.process:
        x = facts.process[0]
        cache[name] = _PROCESS_WHAT.get(x.kind, "{}").format(x.what)
    return cache[name]


def _is_expr_stmt_of(stmt: cst.CSTNode, call: cst.Call) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Expr) and small.value is call for small in stmt.body
    )


def _self_assignments(method: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
    """``("self.x", value)`` for every ``self.x = value`` in ``method``."""
    out: list[tuple[str, cst.BaseExpression]] = []
    fast_visit(method, _SelfAssignments(method, out))
    return out


class _SelfAssignments(cst.CSTVisitor):
    """``("self.x", value)`` of each ``self.x = value`` in ``method`` (not in its nested functions), appended to
    ``out``."""

    def __init__(self, method: cst.FunctionDef, out: list[tuple[str, cst.BaseExpression]]) -> None:
        super().__init__()
        self.method = method
        self.out = out

    def visit_Assign(self, n: cst.Assign) -> None:
        for t in n.targets:
            if isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) \
                    and t.target.value.value == "self":
                self.out.append((f"self.{t.target.attr.value}", n.value))

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return n is self.method


def _builds_agent(method: cst.FunctionDef, fw: "Framework") -> bool:
    visitor = _AgentCtors(fw)
    fast_visit(method.body, visitor)
    return visitor.found


class _AgentCtors(cst.CSTVisitor):
    """Whether the code calls an agent constructor of ``fw`` (``found``)."""

    def __init__(self, fw: "Framework") -> None:
        super().__init__()
        self.fw = fw
        self.found = False

    def visit_Call(self, n: cst.Call) -> None:
        if self.fw.is_agent_ctor(n):
            self.found = True


def _describe_stmt(stmt: cst.CSTNode) -> str:
    if isinstance(stmt, cst.FunctionDef):
        return f"`{stmt.name.value}`"
    if isinstance(stmt, cst.ClassDef):
        return f"class `{stmt.name.value}`"
    return f"`{code(stmt, 40)}`"


def _returns(body: cst.CSTNode) -> list[cst.Return]:
    out: list[cst.Return] = []
    fast_visit(body, _Returns(out))
    return out


class _Returns(cst.CSTVisitor):
    """The ``return value`` statements (not a bare ``return``) outside nested functions and lambdas, appended to
    ``out``."""

    def __init__(self, out: list[cst.Return]) -> None:
        super().__init__()
        self.out = out

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False

    def visit_Return(self, n: cst.Return) -> None:
        if n.value is not None:
            self.out.append(n)


def _subexpr_codes(node: cst.CSTNode) -> list[str]:
    """Source text of every Attribute / Subscript / Call / Name under ``node`` (to find an input expression)."""
    out: list[str] = []
    fast_visit(node, _SubexprCodes(out))
    return out


class _SubexprCodes(cst.CSTVisitor):
    """The source text of every Attribute / Subscript / Call / Name met, appended to ``out``."""

    def __init__(self, out: list[str]) -> None:
        super().__init__()
        self.out = out

    def visit_Attribute(self, n: cst.Attribute) -> None:
        self.out.append(code(n, 400))

    def visit_Subscript(self, n: cst.Subscript) -> None:
        self.out.append(code(n, 400))

    def visit_Call(self, n: cst.Call) -> None:
        self.out.append(code(n, 400))

    def visit_Name(self, n: cst.Name) -> None:
        self.out.append(n.value)


_TEXT_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "title", "capitalize"})


def _text_of(expr: cst.BaseExpression, access: cst.BaseExpression) -> bool:
    """``expr`` is ``access`` itself or text made of it alone: ``access.strip()``, ``str(access)``, chains of them."""
    while expr is not access:
        if not isinstance(expr, cst.Call):
            return False
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in _TEXT_METHODS and not expr.args:
            expr = f.value
        elif isinstance(f, cst.Name) and f.value == "str" and len(expr.args) == 1 and not expr.args[0].keyword:
            expr = expr.args[0].value
        else:
            return False
    return True


def _access_around(root: cst.CSTNode, name: cst.Name) -> Optional[cst.BaseExpression]:
    """The access ``name.x`` / ``name["k"]`` / ``name.get("k"[, default])`` that contains ``name`` under ``root``."""
    visitor = _AccessAround(name)
    fast_visit(root, visitor)
    res = visitor.found
    if isinstance(res, cst.Attribute) and res.attr.value == "get":
        return None
    return res


class _AccessAround(cst.CSTVisitor):
    """The access around the node ``name`` (by identity): ``name.get("k", …)`` or ``name["k"]`` (the last met), else
    the first ``name.x`` (``found``)."""

    def __init__(self, name: cst.Name) -> None:
        super().__init__()
        self.name = name
        self.found: Optional[cst.BaseExpression] = None

    def visit_Call(self, n: cst.Call) -> None:
        f = n.func
        if isinstance(f, cst.Attribute) and f.value is self.name and f.attr.value == "get" and n.args \
                and isinstance(n.args[0].value, cst.SimpleString):
            self.found = n

    def visit_Subscript(self, n: cst.Subscript) -> None:
        if n.value is self.name and len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index) \
                and isinstance(n.slice[0].slice.value, cst.SimpleString):
            self.found = n

    def visit_Attribute(self, n: cst.Attribute) -> None:
        if n.value is self.name and self.found is None:
            self.found = n


def _attributes_of(stmt: cst.CSTNode, var: str) -> list[str]:
    out: list[str] = []
    fast_visit(stmt, _AttributesOf(var, out))
    return out


class _AttributesOf(cst.CSTVisitor):
    """The attribute name ``x`` of each ``var.x`` met, appended to ``out``."""

    def __init__(self, var: str, out: list[str]) -> None:
        super().__init__()
        self.var = var
        self.out = out

    def visit_Attribute(self, n: cst.Attribute) -> None:
        if isinstance(n.value, cst.Name) and n.value.value == self.var:
            self.out.append(n.attr.value)


def _attribute_nodes(stmts: Sequence[cst.CSTNode], var: Optional[str], attr: str) -> list[cst.Attribute]:
    out: list[cst.Attribute] = []
    for s in stmts:
        fast_visit(s, _AttributeNodes(var, attr, out))
    return out


class _AttributeNodes(cst.CSTVisitor):
    """The ``var.attr`` nodes met, appended to ``out``."""

    def __init__(self, var: Optional[str], attr: str, out: list[cst.Attribute]) -> None:
        super().__init__()
        self.var = var
        self.attr = attr
        self.out = out

    def visit_Attribute(self, n: cst.Attribute) -> None:
        if isinstance(n.value, cst.Name) and n.value.value == self.var and n.attr.value == self.attr:
            self.out.append(n)


def _is_parser_stmt(stmt: cst.CSTNode, args_var: Optional[str]) -> bool:
    """``parser = argparse.ArgumentParser(...)``, ``parser.add_argument(...)``, ``args = parser.parse_args()``."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    text = code(stmt, 10_000)
    if "ArgumentParser(" in text and text.split("=")[0].strip().isidentifier():
        return True
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute):
        if small.value.func.attr.value in ("add_argument", "add_argument_group", "set_defaults", "add_mutually_exclusive_group"):
            return True
    if args_var is not None and _simple_assign_target(stmt) == args_var and "parse_" in text:
        return True
    return False


def _argparse_defaults(stmts: Sequence[cst.CSTNode]) -> dict[str, Optional[cst.BaseExpression]]:
    """dest → default of every ``parser.add_argument(...)`` in ``stmts`` (None: a required positional argument)."""
    out: dict[str, Optional[cst.BaseExpression]] = {}
    for stmt in stmts:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
            continue
        call = stmt.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
            continue
        # literal_eval of the token: SimpleString.evaluated_value (see base.literal_eval)
        flags = [literal_eval(a.value.value) for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        flags = [f for f in flags if isinstance(f, str)]
        if not flags:
            continue
        longs = [f for f in flags if f.startswith("--")]
        dest_expr = kw.get("dest")
        dest_value = literal_eval(dest_expr.value) if isinstance(dest_expr, cst.SimpleString) else None
        if isinstance(dest_value, str):
            dest = dest_value
        else:
            dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
        action = kw.get("action")
        action_s = literal_eval(action.value) if isinstance(action, cst.SimpleString) else None
        if "default" in kw:
            out[dest] = kw["default"]
        elif action_s == "store_true":
            out[dest] = cst.Name("False")
        elif action_s == "store_false":
            out[dest] = cst.Name("True")
        elif not flags[0].startswith("-"):
            out[dest] = None  # a positional argument: required
        else:
            out[dest] = cst.Name("None")
    return out


def _media_key(expr: cst.BaseExpression) -> Optional[str]:
    """The first media part type in a literal input (``input_image`` …), if any."""
    text = code(expr, 100_000)
    for key in _IMAGE_KEYS:
        if f'"{key}"' in text or f"'{key}'" in text:
            return key
    return None


StmtLike = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]
Builder = Callable[..., cst.CSTNode]
