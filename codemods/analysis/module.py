"""The top level of one module, indexed once (read-only facts): module-level agents, models, sessions, string
constants, functions, classes, the ``__main__`` block, who binds and who uses each name — in this module and, when
the repo facts say so, in other modules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods.analysis.body import BodyFacts, code, is_string, names_in
from codemods.base import ImportTable, has_skip_marker
from codemods.osmosis_api import GRADER_BASES, WORKFLOW_BASES
from codemods.syntax import block_statements
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.framework import Framework


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
    # memos of questions asked many times per module (declared here, so every reader sees what a model carries)
    global_use: dict[tuple[int, str], bool] = field(default_factory=dict, repr=False)  # (stmt, name) → uses module's
    factories: Optional[set[str]] = field(default=None, repr=False)  # producers that are factories (planner)
    interactive: dict[str, str] = field(default_factory=dict, repr=False)  # function → what it asks the user

    def definition(self, name: str) -> Optional[int]:
        """The index of the top-level ``name = value`` statement line that binds ``name`` (the first), else None."""
        return next((i for i, st in enumerate(self.body)
                     if isinstance(st, cst.SimpleStatementLine) and assigned_name(st) == name), None)

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
        cache = self.global_use
        key = (i, name)
        tree = self.ast_defs.get(stmt.name.value) if self.ast_defs else None
        if key not in cache and tree is not None:  # CPython's ast of the input: ten times cheaper than libcst
            cache[key] = _ast_uses_global(tree, name)
        if key not in cache:
            functions = [stmt] if isinstance(stmt, cst.FunctionDef) else [
                m for m in block_statements(stmt.body) if isinstance(m, cst.FunctionDef)]
            mentions_outside = isinstance(stmt, cst.ClassDef) and any(
                name in {n.value for n in names_in(m)} for m in block_statements(stmt.body) if not isinstance(m, cst.FunctionDef))
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


def is_osmosis_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    """An AgentWorkflow / Grader subclass (handled elsewhere)."""
    for base in cls.bases:
        name = (table.resolve(base.value) or code(base.value)).rsplit(".", 1)[-1]
        if name in ("AgentWorkflow", "Grader"):
            return True
    return False


def module_stem(filename: str) -> str:
    base = re.split(r"[\\/]", filename)[-1]
    base = base[:-3] if base.endswith(".py") else base
    if base in ("<string>", "__init__", "__main__", ""):
        return ""
    return re.sub(r"\W", "_", base)


def is_workflow_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    """A subclass of the osmosis ``AgentWorkflow`` — also when the name is not imported (yet): a rule may add
    that import itself, and the answer must not change between runs (fixed point)."""
    for base in cls.bases:
        if table.matches(base.value, WORKFLOW_BASES) is not None:
            return True
        if isinstance(base.value, cst.Name) and base.value.value == "AgentWorkflow" and "AgentWorkflow" not in table.names:
            return True
    return False


def is_grader_class(cls: cst.ClassDef, table: ImportTable) -> bool:
    for base in cls.bases:
        if table.matches(base.value, GRADER_BASES) is not None:
            return True
        if isinstance(base.value, cst.Name) and base.value.value == "Grader":
            return True
    return False


def module_agent_deps(model: "ModuleModel", names: set[str]) -> set[str]:
    """Module-level agents reachable from ``names`` through other module agents' arguments (handoffs, ``as_tool``,
    a Swarm's members), ``names``' own agents included."""
    out: set[str] = set()
    todo = [n for n in names if n in model.agents]
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(x for x in model.counts[model.agents[n]] if x in model.agents and x != n)
    return out


def apply_imported(model: "ModuleModel", fw: Framework, repo) -> set[str]:
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


_TEST_FILE = re.compile(r"(^|[\\/])(test_[^\\/]*|[^\\/]*_test|conftest)\.py$")


def is_test_module(filename: str, table: ImportTable) -> bool:
    """A test module (pytest's naming conventions, or a module importing pytest): its agents are fixtures of the
    tests, not a program — the plain rules leave it alone."""
    return bool(_TEST_FILE.search(filename)) or "pytest" in table.modules or any(
        q == "pytest" or q.startswith("pytest.") for q in table.names.values())
