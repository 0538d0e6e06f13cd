"""Module-level state a tool changes: what every rollout a server runs would share.

A program's tools often keep their world in the module — an in-memory "database" (``balances = {...}``) that a
``transfer`` tool updates, a list a ``remember`` tool appends to. Run once per process, the program starts from the
literal each time; served, every rollout of the process shares the object: concurrent rollouts interleave, and each
starts where the last one left off. These facts are read-only (the plan decides what to say about them)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from codemods.visit import visit as fast_visit

#: methods that change a dict, list, set or deque in place
MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
                      "add", "discard", "appendleft", "extendleft", "popleft", "sort", "reverse"})
#: constructors of mutable containers (besides the literals)
_CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "collections.defaultdict", "deque", "collections.deque",
                         "OrderedDict", "collections.OrderedDict", "Counter", "collections.Counter"})


def is_mutable_container(value: Optional[cst.BaseExpression]) -> bool:
    """A literal dict/list/set (comprehensions included) or a call of a container constructor."""
    if isinstance(value, (cst.Dict, cst.List, cst.Set, cst.DictComp, cst.ListComp, cst.SetComp)):
        return True
    if isinstance(value, cst.Call):
        func = value.func
        name = func.value if isinstance(func, cst.Name) else (
            f"{func.value.value}.{func.attr.value}" if isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name) else "")
        return name in _CONTAINERS
    return False


def changed_globals(func: cst.FunctionDef, candidates: set[str]) -> set[str]:
    """The names of ``candidates`` (module-level names) that ``func`` changes in place — ``x[k] = v``, ``x[k] +=
    v``, ``del x[k]``, ``x.append(v)`` and the other mutators — or rebinds after ``global x``; a name the function
    binds itself (a parameter, a local) is its own, not the module's."""
    params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    finder = _Changes(candidates - params)
    fast_visit(func.body, finder)
    return (finder.changed - finder.local) | finder.rebound


class _Changes(cst.CSTVisitor):
    def __init__(self, candidates: set[str]) -> None:
        super().__init__()
        self.candidates = candidates
        self.changed: set[str] = set()
        self.local: set[str] = set()
        self.declared: set[str] = set()
        self.rebound: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's names are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self.declared.update(n.name.value for n in node.names if n.name.value in self.candidates)

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if target.value in self.declared:
                self.rebound.add(target.value)
            else:
                self.local.add(target.value)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in self.candidates:
            self.changed.add(target.value.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._target(el.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._target(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.value.value in self.candidates and func.attr.value in MUTATORS:
            self.changed.add(func.value.value)
