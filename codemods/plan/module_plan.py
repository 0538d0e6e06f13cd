"""The plan of one module for a plain-framework rule: every driver's plan, and the module-level decisions that
follow from them — which module-level agents leave the module level (built per rollout in ``run()``), which
module-level models become the placeholder where they are, where each factory, helper and class the workflows use
is converted (in place, or a rollout copy beside it, and under which name), the workflow class names, and what
other files of the run are offered. :func:`plan_module` decides; :mod:`codemods.emit.module` writes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.body import code, contains, names_in
from codemods.analysis.drivers import Driver, find_drivers, has_workflow_beside
from codemods.analysis.module import (
    ModuleModel,
    apply_imported,
    assigned_name,
    assigned_value,
    is_test_module,
    is_workflow_class,
    module_model,
)
from codemods.analysis.names import name_counts
from codemods.analysis.tool_state import changed_globals, is_mutable_container
from codemods.analysis.repo import Verdict
from codemods.base import has_skip_marker
from codemods.plan.model import CtorPlan, Plan
from codemods.plan.planner import plan_driver
from codemods.syntax import block_statements, camel, kwarg, run_method, unique_name

if TYPE_CHECKING:
    from codemods.framework import Framework

# names a migrated module may gain: a generated name must not take one of them
_API_NAMES = {"AgentWorkflow", "AgentWorkflowContext", "Grader", "GraderContext"}


@dataclass
class ModuleVarPlan:
    """A module-level model that only migrated agents use: it becomes the placeholder where it is."""

    var: str
    index: int
    ctors: list[CtorPlan]  # the constructors that read it (their ``model=VAR`` stays)


@dataclass
class Placement:
    """A factory, helper or class the workflows use, converted where it is (``in_place``) or as a comment-free
    rollout copy ``new_name`` beside it (the original stays for its plain users)."""

    kind: str  # "factory" | "helper" | "class"
    name: str
    index: int
    in_place: bool
    new_name: Optional[str]  # None when in place
    users: list[Plan]  # the plans of the drivers that use it

    @property
    def plan(self) -> Plan:
        """The plan of the function converted (factories and helpers; classes: see ``method_plans``)."""
        first = self.users[0]
        return first.factory_plans[self.name] if self.kind == "factory" else first.helper_plans[self.name]

    @property
    def method_plans(self) -> list[Plan]:
        """The plans of the class's methods that build or run agents (kind ``class``)."""
        return self.users[0].class_plans[self.name]


@dataclass
class ModulePlan:
    """Everything the module emitter needs, decided before any code is written."""

    model: ModuleModel
    counts: list[dict[str, int]]  # names each top-level statement of the input uses
    plans: list[Plan]  # one per driver, in module order (refused ones carry ``problems``)
    done_beside: list[Driver]  # functions whose workflow a previous run already added beside them
    offered: dict[str, Verdict]  # names other files use that this module writes rollout versions of
    refused: dict[str, str]  # names other files use whose rollout version cannot be written: why
    inplace_idx: set[int] = field(default_factory=set)  # top-level statements of drivers converted in place
    dep_of: set[str] = field(default_factory=set)  # module-level agents some migrated code builds per rollout
    moved: set[str] = field(default_factory=set)  # …of which leave the module level (only migrated code used them)
    owner: dict[str, Plan] = field(default_factory=dict)  # moved agent → the plan whose run() takes its statement
    module_vars: list[ModuleVarPlan] = field(default_factory=list)
    orphans: list[tuple[int, str]] = field(default_factory=list)  # (index, name) of module-level values that go
    # module-level containers the workflows' tools change in place: index → (name, the tools), shared by every rollout
    shared_state: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    placements: list[Placement] = field(default_factory=list)  # factories, then helpers, then classes

    @property
    def ok(self) -> list[Plan]:
        """The plans that are migrated."""
        return [p for p in self.plans if not p.problems]

    @property
    def moved_idx(self) -> set[int]:
        return {self.model.agents[n] for n in self.moved}

    def placed(self, kind: str) -> dict[str, Placement]:
        """The placements of one kind, by name."""
        return {pl.name: pl for pl in self.placements if pl.kind == kind}


def plan_module(module: cst.Module, fw: "Framework") -> Optional[ModulePlan]:
    """The plan of ``module`` for ``fw``'s rule, or None when the module has nothing of the framework to migrate.

    Cost: one name-index pass over the top level (from the ``ast`` while the tree is unchanged) and the body facts
    of the statements that may run agents."""
    ctx = fw.ctx
    if is_test_module(ctx.filename, fw.table):
        return None  # tests exercise the framework or the app; they are not programs to serve as rollouts
    counts = ctx.top_level_name_counts(module) or [name_counts(stmt) for stmt in module.body]
    repo = ctx.repo
    model = module_model(module, fw, counts, ctx.filename, tree=ctx.tree if module is ctx.origin else None)
    if repo is not None:  # read name by name: the cross-file uses are gathered when the plan first asks (lazy)
        model.external = repo.external_uses(ctx.filename)  # type: ignore[assignment]
    offered: dict[str, Verdict] = {}
    refused: dict[str, str] = {}
    if repo is not None:
        fw.imported_names |= apply_imported(model, fw, repo)
        mine = {n: v for n, v in repo.offered(ctx.filename).items() if v.rule == fw.code}
        offered = {n: v for n, v in mine.items() if v.rollout}
        refused = {n: v.problem for n, v in mine.items() if not v.rollout}
    heads = fw.ctor_heads() | fw.run_heads()
    if not any(heads & c.keys() for c in counts) and not model.agents and not fw.imported_names:
        return None
    drivers = find_drivers(model, fw) + _workflow_drivers(model, fw)
    done_beside = [d for d in drivers if d.kind == "function" and has_workflow_beside(model, d, fw.table)]
    plans = [plan_driver(model, fw, d, fw.target) for d in drivers if d not in done_beside]
    # a library class's entry (find_drivers) is an offer: if it cannot be migrated, the class's own TODOs say why
    plans = [p for p in plans if not (p.driver.lifted is not None and p.problems)]
    mp = ModulePlan(model=model, counts=counts, plans=plans, done_beside=done_beside, offered=offered,
                    refused=refused)
    _plan_moves(mp)
    _plan_module_vars(mp)
    top_names = set(model.bindings) | _API_NAMES
    _plan_placements(mp, fw, top_names)
    _plan_orphans(mp)
    _plan_shared_state(mp)
    for p in mp.ok:  # workflow class names, after the rollout copies took theirs
        if p.driver.kind != "workflow":
            p.cls_name = unique_name(camel(p.driver.name) + "Workflow", top_names)
            top_names.add(p.cls_name)
    return mp


def _workflow_drivers(model: ModuleModel, fw: "Framework") -> list[Driver]:
    """``run()`` of the module's existing ``AgentWorkflow`` subclasses that still build plain agents."""
    out = []
    heads = fw.ctor_heads()
    for i, stmt in enumerate(model.body):
        if isinstance(stmt, cst.ClassDef) and heads & model.counts[i].keys() and not has_skip_marker(stmt) \
                and is_workflow_class(stmt, fw.table):
            run = run_method(stmt)
            if run is not None and not has_skip_marker(run):
                out.append(Driver("workflow", stmt.name.value, [i], list(block_statements(run.body)), run))
    return out


def _plan_moves(mp: ModulePlan) -> None:
    """Which module-level agents leave the module level: those used only by drivers converted in place (and by
    agents that leave too); each moves into the first plan that builds it."""
    model = mp.model
    for p in mp.ok:
        if p.mode == "inplace" and p.driver.kind != "workflow":
            mp.inplace_idx.update(p.driver.indices)
    mp.dep_of = {name for p in mp.ok for name in p.deps}
    for_importers = {name for p in mp.ok if p.driver.lifted is not None for name in p.deps}  # a library's agents
    changed = True
    while changed:
        changed = False
        for name in mp.dep_of - mp.moved:
            idx = model.agents[name]
            if model.external.get(name) or name in for_importers:
                continue
            if all(j in mp.inplace_idx or any(model.agents.get(m) == j for m in mp.moved)
                   for j in model.users(name, skip=[idx])):
                mp.moved.add(name)
                changed = True
    for p in mp.ok:
        for name in p.deps:
            mp.owner.setdefault(name, p)


def _plan_module_vars(mp: ModulePlan) -> None:
    """Module-level models the migrated agents use: the placeholder where they are when only those agents use
    them (the constructors then keep ``model=VAR``), else each migrated agent gets its own placeholder."""
    model, moved_idx = mp.model, mp.moved_idx
    by_var: dict[str, list[CtorPlan]] = {}
    for p in mp.ok:
        for cp in p.ctors.values():
            if cp.module_var:
                by_var.setdefault(cp.module_var, []).append(cp)
    # agents that stay plain (0.3: not the sample) keep their model: a model they read is not made the placeholder
    plain_reads = {n.value for p in mp.plans for _, call in p.plain_agents.values() for n in names_in(call)}
    for var, cps in by_var.items():
        idx = model.models[var]
        stmt = model.body[idx]
        users = model.users(var, skip=[idx])
        if var not in plain_reads and all(j in mp.inplace_idx or j in moved_idx for j in users) \
                and not model.external.get(var) \
                and isinstance(stmt, cst.SimpleStatementLine) and isinstance(assigned_value(stmt), cst.Call):
            mp.module_vars.append(ModuleVarPlan(var, idx, cps))
            for cp in cps:
                cp.model = None  # `model=VAR` stays: VAR is the placeholder now


def _plan_orphans(mp: ModulePlan) -> None:
    """Module-level values that only fed the models the placeholder replaces (``client = AsyncOpenAI(...)``, ``MODEL =
    os.environ["MODEL_ID"]``) go with them: nothing reads them any more, and kept they would still run at import —
    a client that needs its provider's key, an environment variable the rollout server does not set. Only values
    that do nothing but build or read something (a literal, a name, an environment read, a constructor call), bound
    once, used by no other module; a value read only by one that goes goes too."""
    model = mp.model
    replaced: list[cst.CSTNode] = [n for p in mp.ok for n in p.replaced]
    replaced += [v for mv in mp.module_vars if (v := assigned_value(model.body[mv.index])) is not None]
    if not replaced:
        return
    # top-level statements the migration rewrites where they are (a model read elsewhere stays in a kept original)
    rewritten = mp.inplace_idx | mp.moved_idx | {mv.index for mv in mp.module_vars} \
        | {pl.index for pl in mp.placements if pl.in_place} \
        | {j for p in mp.ok for n in p.module_configs if (j := model.definition(n)) is not None}
    # module-level checks that only stop the program when a value is missing (`if not KEY: raise ValueError(...)`)
    guards = {k: names for k, stmt in enumerate(model.body) if (names := _guarded_name(stmt)) is not None}
    gone: set[int] = set()
    changed = True
    while changed:
        changed = False
        for j, stmt in enumerate(model.body):
            name = assigned_name(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
            if name is None or j in gone or model.bindings.get(name) != 1 or model.external.get(name) \
                    or name in model.agents:
                continue
            value = assigned_value(stmt)
            if value is None or not _inert(value, model):
                continue
            users = model.users(name, skip=[j])
            checks = [k for k in users if guards.get(k) == name]  # a check of this value alone goes with it
            if not users or not set(users) <= rewritten | gone | set(checks):
                continue
            uses = [n for k in users if k not in checks for n in names_in(model.body[k]) if n.value == name]
            if (uses or checks) and all(any(contains(r, n) for r in replaced) for n in uses) \
                    and any(k not in checks for k in users):
                gone.add(j)
                mp.orphans.append((j, name))
                for k in checks:
                    gone.add(k)
                    mp.orphans.append((k, f"the check of {name}"))
                replaced.append(value)
                changed = True


def _guarded_name(stmt: cst.CSTNode) -> Optional[str]:
    """``X`` when ``stmt`` is a module-level check that only stops the program on it — ``if not X: raise
    ValueError(...)`` (prints and ``sys.exit`` too), no ``else`` — else None."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return None
    names = {n.value for n in names_in(stmt.test)}
    if len(names) != 1:
        return None
    body = block_statements(stmt.body)
    for line in body:
        if not isinstance(line, cst.SimpleStatementLine) or not all(
                isinstance(small, cst.Raise) or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                                                 and code(small.value.func, 40) in ("print", "sys.exit", "exit"))
                for small in line.body):
            return None
    return names.pop() if body else None


def _plan_shared_state(mp: ModulePlan) -> None:
    """Module-level containers that the tools of the migrated agents change in place (``balances[src] -= amount``,
    ``notes.append(x)``): served, every rollout of the process shares them. The workflow stays migrated (the program
    shared them across calls too); the marker says so where the state is (:mod:`codemods.analysis.tool_state`)."""
    model = mp.model
    tools: set[str] = set()
    for plan in mp.ok:
        for ctor in _plan_ctors(plan, model):
            arg = kwarg(ctor, "tools")
            if arg is not None and isinstance(arg.value, (cst.List, cst.Tuple)):
                tools.update(el.value.value for el in arg.value.elements
                             if isinstance(el, cst.Element) and isinstance(el.value, cst.Name))
    tools &= set(model.functions)
    if not tools:
        return
    containers: dict[str, int] = {}
    for j, stmt in enumerate(model.body):
        name = assigned_name(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if name is not None and model.bindings.get(name) == 1 and is_mutable_container(assigned_value(stmt)):
            containers[name] = j
    if not containers:
        return
    changers: dict[str, list[str]] = {}
    for tool in sorted(tools):
        func = model.body[model.functions[tool]]
        if isinstance(func, cst.FunctionDef):
            for name in changed_globals(func, set(containers)):
                changers.setdefault(name, []).append(tool)
    for name, by in changers.items():
        mp.shared_state[containers[name]] = (name, by)


def _plan_ctors(plan: Plan, model: ModuleModel) -> list[cst.Call]:
    """The agent constructors a plan builds: its own, its module-level agents', its helpers', factories' and
    classes' (one level, as they are planned)."""
    plans = [plan, *plan.helper_plans.values(), *plan.factory_plans.values(),
             *(p for ps in plan.class_plans.values() for p in ps)]
    out: list[cst.Call] = []
    for p in plans:
        out.extend(c.call for c in p.facts.ctors)
        for dep in p.deps:
            value = assigned_value(model.body[model.agents[dep]])
            if isinstance(value, cst.Call):
                out.append(value)
    return out


def _inert(value: cst.BaseExpression, model: ModuleModel) -> bool:
    """A value whose evaluation only builds or reads something: a literal, a name or attribute, an environment
    read, or a call of a class (``AsyncOpenAI(...)``; its arguments inert too)."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
                          cst.Name, cst.Attribute)):
        return True
    if isinstance(value, cst.Subscript):  # os.environ["KEY"]
        return code(value.value) in ("os.environ",)
    if isinstance(value, cst.BooleanOperation):  # os.getenv("A") or "default"
        return _inert(value.left, model) and _inert(value.right, model)
    if isinstance(value, cst.Call):
        callee = model.table.resolve(value.func) or code(value.func)
        last = callee.rsplit(".", 1)[-1]
        if callee in ("os.getenv", "os.environ.get") or (last[:1].isupper() and last not in model.functions):
            return all(_inert(a.value, model) for a in value.args)
    if isinstance(value, cst.Dict):  # client_args={"api_key": KEY}
        return all(isinstance(e, cst.DictElement) and _inert(e.key, model) and _inert(e.value, model)
                   for e in value.elements)
    if isinstance(value, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _inert(e.value, model) for e in value.elements)
    return False


def _plan_placements(mp: ModulePlan, fw: "Framework", top_names: set[str]) -> None:
    """Factories, helpers and classes the workflows use: converted in place when only migrated code uses them,
    else a rollout copy beside them whose name the users' plans then call."""
    model, ok, moved_idx = mp.model, mp.ok, mp.moved_idx
    kinds = (("factory", lambda p: p.factory_plans, model.functions),
             ("helper", lambda p: p.helper_plans, model.functions),
             ("class", lambda p: p.class_plans, model.classes))
    for kind, used_by, index in kinds:
        users_of: dict[str, list[Plan]] = {}
        for p in ok:
            for name in used_by(p):
                users_of.setdefault(name, []).append(p)
        for name, users in users_of.items():
            idx = index[name]
            uses = model.users(name, skip=[idx])
            if kind == "factory":
                in_place = not model.body[idx].decorators and all(j in mp.inplace_idx for j in uses)
            elif kind == "helper":
                in_place = all(j in mp.inplace_idx or j in moved_idx for j in uses)
            else:
                in_place = all(j in mp.inplace_idx for j in uses)
            # a library class a lifted driver calls is its importers' (the workflow beside it uses a copy)
            lifted = any(p.driver.lifted is not None and p.driver.lifted.owner == name for p in users)
            in_place = in_place and not model.external.get(name) and not lifted
            new_name = None
            if not in_place:
                new_name = unique_name(f"{name}ForRollout" if kind == "class" else f"{name}_for_rollout", top_names)
                top_names.add(new_name)
                for p in users:
                    (p.factories if kind == "factory" else p.renames)[name] = new_name
            mp.placements.append(Placement(kind, name, idx, in_place, new_name, users))
