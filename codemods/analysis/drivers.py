"""Drivers: the code of a module that runs an agent — a top-level function, the module-level script code, or the
``__main__`` block — and which functions are helpers (they run agents for a driver) or factories (they build
one). Read-only: :func:`find_drivers` records what it finds on the :class:`~codemods.analysis.module.ModuleModel`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.body import body_facts
from codemods.analysis.code_facts import calls_of
from codemods.analysis.module import ModuleModel, is_main_guard, is_osmosis_class, is_workflow_class, module_stem
from codemods.base import ImportTable, has_skip_marker
from codemods.syntax import block_statements, camel, is_import_stmt
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.framework import Framework


@dataclass
class Driver:
    """Code that runs an agent."""

    kind: str  # "function" | "script" | "main" | "workflow"
    name: str  # function name, or the name the workflow is derived from
    indices: list[int]  # top-level statements it is made of
    stmts: list[cst.BaseStatement]  # the statements of its body
    func: Optional[cst.FunctionDef] = None
    # a library module's entry the analysis wrote (``func`` is not in the module): the workflow goes beside it
    lifted: Optional["Lifted"] = None


@dataclass(frozen=True)
class Lifted:
    """What a library module's synthetic driver runs: ``Owner().method(text)`` of a class (``kind`` "class"), the
    agent a factory returns ("factory") or a module-level agent ("agent"), on the rollout's prompt."""

    kind: str
    owner: str
    method: str = ""
    # the run the workflow does, as code of the original module with the prompt in ``prompt`` (the edit message
    # names it, and ``--verify`` evaluates it on the original: codemods/verify/plan.py)
    run: str = ""

    @property
    def call(self) -> str:
        """How the workflow reaches the agent, as the user would read it."""
        return self.run.removeprefix("await ")

    @property
    def note(self) -> str:
        """Words for the edit message."""
        what = {"class": "a rollout copy of it", "factory": "what a rollout copy of it builds"}.get(self.kind, "a copy")
        return f"`{self.owner}` kept for its importers; the workflow runs {what} on the prompt"


_HANDLER_NAMES = re.compile(r"(^|_)(handler|lambda_handler|handle)$")


def is_handler(func: cst.FunctionDef) -> bool:
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
    producers = {
        name for name, i in model.functions.items()
        if ctor_heads & model.counts[i].keys() and sum(name in c for c in model.counts) > 1  # someone calls it
        and returns_of(body[i].body)
    }
    model.producers = producers

    def may_run(i: int) -> bool:
        c = model.counts[i]
        return bool(heads & c.keys() or agent_names & c.keys() or fw.ctor_heads() & c.keys() or producers & c.keys())

    runners: set[str] = set()  # functions with a run site of their own
    for name, i in model.functions.items():
        stmt = body[i]
        if not has_skip_marker(stmt) and may_run(i):
            # the body's facts, kept for the planner (one walk of a driver's body, not two)
            facts = body_facts(list(block_statements(stmt.body)), fw, agent_names, producers)
            model.facts_cache[id(stmt)] = facts
            if facts.runs:
                runners.add(name)
    classes: set[str] = set()  # classes whose methods run agents (kept on `self` or module-level)
    for name, i in model.classes.items():
        stmt = body[i]
        if not has_skip_marker(stmt) and may_run(i) and not is_osmosis_class(stmt, model.table) \
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
                if not (name in runners and (_called_at_top_level(model, name, i)
                                             or _workflow_follows(model, name, i, fw.table))):
                    continue
                # a tool the program itself calls from `__main__` / module-level code: that call is a program
                # running its agent (the tool stays a tool for the agents that use it); once migrated, the
                # workflow written beside it marks it (the `__main__` call is gone then)
            if name in runners or (name in reach and _runs_indirectly(stmt, helpers, classes)):
                out.append(Driver("function", name, [i], list(block_statements(stmt.body)), stmt))
        elif isinstance(stmt, cst.ClassDef) or is_import_stmt(stmt):
            continue
        elif is_main_guard(stmt):
            if may_run(i) and fw.has_run_site(stmt.body, agent_names, producers):
                out.append(Driver("main", module_stem(model.filename) or "main", [i], list(block_statements(stmt.body))))
        elif may_run(i) and fw.has_run_site(stmt, agent_names, producers):
            script.append(i)
    if script:
        # the script: from its first run on, the module-level statements that are not definitions — or from the
        # construction of the agent it runs, when other statements use that agent before (`agent.tool.x(...)`
        # direct calls write the agent's history that its run then sends to the model)
        first = _script_start(model, script[0])
        indices = [
            j for j in range(first, len(body))
            if not isinstance(body[j], (cst.FunctionDef, cst.ClassDef)) and not is_main_guard(body[j])
            and not is_import_stmt(body[j]) and not has_skip_marker(body[j])
        ]
        out.append(Driver("script", module_stem(model.filename) or "script", indices, [body[j] for j in indices]))
    if not out and not any(is_workflow_class(body[i], model.table) for i in model.classes.values()):
        # (a workflow here: migrated by an earlier run)
        out.extend(_library_class_entries(model, fw, classes) or _library_factory_entries(model, fw, runners)
                   or _library_tool_entries(model, fw, runners) or _library_agent_entries(model, fw))
    return out


def _library_class_entries(model: ModuleModel, fw: "Framework", classes: set[str]) -> list[Driver]:
    """A module with nothing that runs an agent but classes whose one public method does, on one text input: a
    library its importers drive (``Assistant().chat(message)``). That call, written as a function, is the driver —
    so the module gains a workflow beside the class, and its importers keep the class."""
    out: list[Driver] = []
    agent_names = set(model.agents) | set(model.imported_agents)
    for name in sorted(classes & set(model.classes)):
        i = model.classes[name]
        cls = model.body[i]
        if not isinstance(cls, cst.ClassDef) or has_skip_marker(cls) or cls.decorators or model.users(name, skip=[i]) \
                or model.external.get(name):
            continue  # used here or by modules of the run: those users are the drivers
        methods = {m.name.value: m for m in block_statements(cls.body) if isinstance(m, cst.FunctionDef)}
        init = methods.get("__init__")
        if init is not None and _required_params(init)[1:]:
            continue  # the workflow could not build one
        public = [m for n, m in methods.items() if not n.startswith("_")]

        def runs_with(keep: list[cst.FunctionDef]) -> bool:
            # the class with only ``keep`` of its public methods: agents kept on `self` by `__init__` are seen
            body = [st for st in cls.body.body if not (isinstance(st, cst.FunctionDef) and st in public
                                                       and st not in keep)]
            return fw.has_run_site(cls.body.with_changes(body=body), agent_names, set(), cache=False)

        if runs_with([]):
            continue  # it runs an agent while it is built: no method is the entry
        entries = [m for m in public if not m.decorators and runs_with([m])]
        if len(entries) != 1 or len(_required_params(entries[0])) != 2:
            continue
        method = entries[0]
        param = _required_params(method)[1]
        is_async = method.asynchronous is not None
        call = f"{'await ' if is_async else ''}{name}().{method.name.value}({param})"
        func = cst.parse_statement(f"{'async ' if is_async else ''}def {name}_{method.name.value}({param}):\n"
                                   f"    return {call}\n")
        assert isinstance(func, cst.FunctionDef)
        out.append(Driver("function", f"{name}_{method.name.value}", [i], list(block_statements(func.body)), func,
                          lifted=Lifted("class", name, method.name.value,
                                        f"{name}().{method.name.value}(prompt)")))
    return out


def _library_factory_entries(model: ModuleModel, fw: "Framework", runners: set[str]) -> list[Driver]:
    """A module with nothing that runs an agent but one public function that builds and returns one, callable
    without arguments (``create_sql_agent(env="local")``): its importers run what it returns on their question.
    That run, written as a function of the prompt, is the driver — the workflow goes beside the factory."""
    if fw.direct_run is None:
        return []
    ctor_heads = fw.ctor_heads()
    found: list[tuple[str, cst.FunctionDef]] = []
    for name, i in model.functions.items():
        func = model.body[i]
        if not isinstance(func, cst.FunctionDef) or name.startswith("_") or name in runners or func.decorators \
                or has_skip_marker(func) or not ctor_heads & model.counts[i].keys() or _required_params(func) \
                or model.users(name, skip=[i]) or model.external.get(name) or not returns_of(func.body):
            continue
        found.append((name, func))
    if len(found) != 1:
        return []  # several factories: which one the importers run is theirs to say
    name, func = found[0]
    make = f"{'await ' if func.asynchronous is not None else ''}{name}()"
    run = fw.direct_run.format(agent="agent", input="prompt")
    synthetic = cst.parse_statement(f"async def {name}(prompt):\n    agent = {make}\n    return {run}\n")
    assert isinstance(synthetic, cst.FunctionDef)
    model.producers = {*model.producers, name}  # the synthetic call is its caller
    return [Driver("function", name, [model.functions[name]], list(block_statements(synthetic.body)),
                   synthetic, lifted=Lifted("factory", name,
                                            run=fw.direct_run.format(agent=f"{name}()", input="prompt")))]


def _library_tool_entries(model: ModuleModel, fw: "Framework", runners: set[str]) -> list[Driver]:
    """A module whose one tool runs an agent of its own on one input (a specialist other programs' agents call)
    and which runs nothing itself: that tool is the driver — it stays a tool, the workflow goes beside it."""
    found = [(name, i) for name, i in model.functions.items()
             if name in runners and fw.is_tool_decorator(model.body[i]) and not has_skip_marker(model.body[i])
             and len(_required_params(model.body[i])) == 1 and not model.users(name, skip=[i])
             and not model.external.get(name)]
    if len(found) != 1:
        return []
    name, i = found[0]
    func = model.body[i]
    assert isinstance(func, cst.FunctionDef)
    return [Driver("function", name, [i], list(block_statements(func.body)), func)]


def _library_agent_entries(model: ModuleModel, fw: "Framework") -> list[Driver]:
    """A module that only defines agents (``planner_agent = Agent(…)``, maybe with the agents it hands off to or
    uses as tools) and runs none: its importers run the one agent no other agent here uses on their question. That
    run, written as a function of the prompt, is the driver — the workflow goes beside the agent."""
    if fw.direct_run is None or not model.agents:
        return []
    agent_idx = set(model.agents.values())
    roots = []
    for name, i in model.agents.items():
        users = model.users(name, skip=[i])
        if name in model.groups or model.external.get(name) or any(j not in agent_idx for j in users):
            return []  # used by other code here or elsewhere: those users are the drivers
        if not users:
            roots.append(name)
    if len(roots) != 1:
        return []
    if fw.direct_run_import is not None:
        module, needed = fw.direct_run_import
        if fw.table.resolve(cst.Name(needed)) != f"{module}.{needed}":
            if needed in model.bindings:
                return []  # the name means something else here
            fw.table.names[needed] = f"{module}.{needed}"  # imported by the emitter if the workflow is written
    run = fw.direct_run.format(agent=roots[0], input="prompt")
    synthetic = cst.parse_statement(f"async def {roots[0]}(prompt):\n    return {run}\n")
    assert isinstance(synthetic, cst.FunctionDef)
    return [Driver("function", roots[0], [model.agents[roots[0]]], list(block_statements(synthetic.body)),
                   synthetic, lifted=Lifted("agent", roots[0], run=run))]


def _required_params(func: cst.FunctionDef) -> list[str]:
    """The names of the positional parameters without a default (``self`` included); a required keyword-only
    parameter or ``*args`` counts as one no call here could fill (``"*"``)."""
    params = func.params
    names = [p.name.value for p in (*params.posonly_params, *params.params) if p.default is None]
    names += ["*" for p in params.kwonly_params if p.default is None]
    return names


def _script_start(model: ModuleModel, first_run: int) -> int:
    """The index of the first module-level statement of the script whose first run is at ``first_run``."""
    start = first_run
    for var in model.counts[first_run].keys() & model.agents.keys():
        built = model.agents[var]
        for j in model.users(var, skip=[built]):
            stmt = model.body[j]
            if built < j < start and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) \
                    and not is_main_guard(stmt) and not is_import_stmt(stmt) and not has_skip_marker(stmt):
                start = built + 1  # from right after the agent is built: what ran between stays in order
    return start


def _called_at_top_level(model: ModuleModel, name: str, index: int) -> bool:
    """``name`` is called by the ``__main__`` block or by module-level statements (not only by other code)."""
    for j in model.users(name, skip=[index]):
        stmt = model.body[j]
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or is_import_stmt(stmt):
            continue
        if calls_of(stmt, name):  # a call, not a mention (`Agent(tools=[name])` hands the tool to an agent)
            return True
    return False


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


def returns_of(body: cst.CSTNode) -> list[cst.Return]:
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


def has_workflow_beside(model: "ModuleModel", d: Driver, table: ImportTable) -> bool:
    """A previous run wrote ``d``'s workflow right after it (the function stays for its plain callers)."""
    return _workflow_follows(model, d.name, d.indices[0], table)


def _workflow_follows(model: "ModuleModel", name: str, i: int, table: ImportTable) -> bool:
    nxt = model.body[i + 1] if i + 1 < len(model.body) else None
    return isinstance(nxt, cst.ClassDef) and nxt.name.value.startswith(camel(name) + "Workflow") \
        and is_workflow_class(nxt, table)
