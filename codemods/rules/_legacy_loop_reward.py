"""Where a rewritten loop's reward is computed (the ``legacy-loop`` rule's reward plan).

The legacy loop passed ``reward=R`` to ``ctx.complete()``; osmosis-ai 0.3 wants a ``Grader``. :func:`plan_reward`
takes the backward slice of ``R`` in ``run()`` — the statements computing the locals it reads — and decides:

* ``grader``: the slice reads only the final messages (the variable the exits return), the request metadata (the
  grader rebuilds it: ``ctx.metadata`` plus the dataset label where the legacy controller put it; a read of
  ``metadata["ground_truth"]`` becomes ``ctx.label``), module names, and methods / class attributes of the loop
  (copied into the grader): it moves into ``grade()``, and run() keeps only what it still needs itself;
* ``carry``: the slice reads state only ``run()`` has (the last reply, turn counters, tool outcomes …), or the exits
  pass different rewards: run() computes the value as before and hands it over in the sample's metrics, where the
  grader reads it — unless it also reads the request metadata (0.3 gives the dataset label to the grader only:
  refused, with that reason);
* ``none``: no exit passes a reward (the legacy platform computed it): the grader gets a documented starting rule.

Some exits passing no reward beside rewarded ones (the platform computed those) get an OM393 note naming exactly
which exits: a ``grader`` gives every rollout the reward the others pass; a ``carry`` grader (``fallback``) gives a
sample that brings no reward the documented starting rule — never ``set_reward(None)``, which fails grading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods.base import dotted_name

from codemods.rules._legacy_loop_analysis import (
    BUILTINS,
    LoopFacts,
    _kids,
    _walk,
    params_of,
    parents_of,
    reads,
    self_reads,
    src,
)

_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update"})
LABEL_KEY = "ground_truth"  # where the legacy controller put the dataset label in the request metadata


@dataclass
class RewardPlan:
    """See the module docstring. ``grader``: ``expr`` and ``statements`` (run()'s, in order) move into ``grade()``,
    reading the sample's messages as ``messages_var``; ``members`` (class order) are copied into the grader;
    ``label_nodes`` (id → the default of a ``.get(key, default)``, or None) become ``ctx.label``,
    ``metadata_nodes`` the rebuilt metadata; ``remove``: ids of run()'s statements it no longer needs.
    ``carry``: ``state`` names what only run() has; ``fallback``: some exits hand over no reward (the grader gives
    their samples the starting rule). ``note``: an OM393 TODO on the grader; ``refusal``: an OM390."""

    mode: str
    expr: Optional[cst.BaseExpression] = None
    statements: list[cst.SimpleStatementLine] = field(default_factory=list)
    messages_var: Optional[str] = None
    members: list[cst.BaseStatement] = field(default_factory=list)
    label_nodes: dict[int, Optional[cst.BaseExpression]] = field(default_factory=dict)
    metadata_nodes: set[int] = field(default_factory=set)
    remove: set[int] = field(default_factory=set)
    state: list[str] = field(default_factory=list)
    fallback: bool = False
    note: Optional[str] = None
    refusal: Optional[str] = None


def plan_reward(facts: LoopFacts, module_names: set[str], dropped: set[int]) -> RewardPlan:
    """The reward plan of a loop whose facts have no problems (``module_names``: names bound at module level;
    ``dropped``: ids of run()'s statements the rewrite drops — their reads do not keep anything alive)."""
    exits = facts.exits
    rewarded = [e for e in exits if e.reward is not None]
    if not rewarded:
        return RewardPlan("none")
    missing = [e for e in exits if e.reward is None]
    codes = {src(e.reward, 10**6) for e in rewarded}
    if len(codes) == 1:
        moved = _Slice(facts, module_names).plan(rewarded)
        if isinstance(moved, RewardPlan):
            moved.remove = _unneeded(facts, moved, dropped)
            if missing:
                moved.note = (f"{unrewarded_exits(facts, missing)}: the grader now gives every rollout the reward "
                              f"`{src(rewarded[0].reward)}` the other exits pass - write what the platform computed "
                              "for those exits into the grader")
            return moved
        why = moved
    else:
        why = "its exits pass different rewards"
    state = sorted(_closure(facts, rewarded) - {facts.ctx_name or ""})
    metadata = [u for u in facts.uses_of("metadata") if u.method == "run" and _inside_any(u.node, _carried_code(facts, rewarded))]
    if metadata:
        return RewardPlan("carry", refusal=(
            f"its reward reads the request metadata (where the legacy controller put the dataset label) together "
            f"with state only run() has ({why}): osmosis-ai 0.3 hands the label to the grader only, so run() cannot "
            f"compute it — move the reward into a Grader that reads ctx.label by hand"))
    plan = RewardPlan("carry", state=state or [why], fallback=bool(missing))
    if missing:
        plan.note = (f"{unrewarded_exits(facts, missing)}, while run() hands over the reward the other exits pass: "
                     "the grader gives a sample without one a starting rule - 1.0 when the dataset label (ctx.label) "
                     "is in the final assistant answer, else 0.0: replace it with the reward your platform computed "
                     "for those exits")
    return plan


def unrewarded_exits(facts: LoopFacts, missing: list) -> str:
    """Which of run()'s exits pass no reward, exactly: their place among run()'s ``return ctx.complete(…)`` in
    source order, their code and the branch they are in (``run()'s exits 1 and 3 of 3 (…) pass no reward``)."""
    assert facts.run is not None
    parent = parents_of(facts.run)
    at = [i + 1 for i, e in enumerate(facts.exits) if any(e is m for m in missing)]
    which = f"exit {at[0]}" if len(at) == 1 else f"exits {', '.join(map(str, at[:-1]))} and {at[-1]}"
    shown = "; ".join(f"`{src(e.ret, 60)}`{_branch(e.ret, facts.run, parent)}" for e in missing)
    verb = "passes" if len(at) == 1 else "pass"
    return f"run()'s {which} of {len(facts.exits)} ({shown}) {verb} no reward (the legacy platform computed it there)"


def _branch(node: cst.CSTNode, run: cst.FunctionDef, parent: dict[int, cst.CSTNode]) -> str:
    """Where in run() the exit ``node`` is: `` under `if x` `` (the innermost branch or loop around it), else ``""``."""
    while True:
        block = parent.get(id(node))
        owner = parent.get(id(block)) if block is not None else None
        if owner is None or owner is run:
            return ""
        if isinstance(owner, cst.If) and owner.body is block:
            word = "elif" if isinstance(parent.get(id(owner)), cst.If) and parent[id(owner)].orelse is owner else "if"
            return f" under `{word} {src(owner.test, 40)}`"
        if isinstance(owner, cst.Else):
            head = parent.get(id(owner))
            kind = {cst.If: "if", cst.For: "for", cst.While: "while"}.get(type(head), "try")
            return f" in the `else` of `{kind} …`" if kind == "try" else f" in the `else` of {_header(head)}"
        if isinstance(owner, (cst.For, cst.While)) and owner.body is block:
            return f" in {_header(owner)}"
        node = block


def _header(node: cst.CSTNode) -> str:
    if isinstance(node, cst.If):
        return f"`if {src(node.test, 40)}`"
    if isinstance(node, cst.While):
        return f"`while {src(node.test, 40)}`"
    if isinstance(node, cst.For):
        return f"`for {src(node.target, 20)} in {src(node.iter, 30)}`"
    return f"`{src(node, 40)}`"


class _Slice:
    """The backward slice of one reward expression, when it can move into the grader (else the reason why not)."""

    def __init__(self, facts: LoopFacts, module_names: set[str]) -> None:
        self.facts = facts
        self.module_names = module_names
        self.run = facts.run
        assert self.run is not None
        self.body = list(self.run.body.body) if isinstance(self.run.body, cst.IndentedBlock) else []
        self.bindings = _bindings(self.run)
        self.use_of = {id(u.node): u for u in facts.uses if u.method == "run"}

    def plan(self, exits: list) -> RewardPlan | str:
        expr = exits[0].reward
        messages_var = _messages_var(exits)
        statements: list[cst.SimpleStatementLine] = []
        todo = sorted(reads(expr) & self.bindings.keys())
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name == messages_var:
                continue
            seen.add(name)
            for site in self.bindings[name]:
                if not self._movable_statement(site, name):
                    return f"its reward reads `{name}`, which run() sets {_where(site, self.body)}"
                if site not in statements:
                    statements.append(site)  # type: ignore[arg-type]
                    todo += sorted(reads(site.body[0].value) & self.bindings.keys())
        statements.sort(key=lambda s: self.body.index(s))
        pieces: list[cst.CSTNode] = [expr, *statements]
        why = self._foreign_reads(pieces, messages_var) or self._order(statements, exits, messages_var)
        if why:
            return why
        members = self._members(pieces)
        if isinstance(members, str):
            return members
        if messages_var is not None and not any(messages_var in reads(p) for p in pieces):
            messages_var = None  # the grader need not read the sample's messages
        plan = RewardPlan("grader", expr=expr, statements=statements, messages_var=messages_var, members=members)
        self._label_and_metadata(pieces, plan)
        return plan

    def _movable_statement(self, site: cst.CSTNode, name: str) -> bool:
        return (isinstance(site, cst.SimpleStatementLine) and site in self.body and len(site.body) == 1
                and isinstance(site.body[0], (cst.Assign, cst.AnnAssign)) and site.body[0].value is not None
                and (isinstance(site.body[0], cst.AnnAssign) or len(site.body[0].targets) == 1))

    def _foreign_reads(self, pieces: list[cst.CSTNode], messages_var: Optional[str]) -> Optional[str]:
        """Why the pieces read something the grader cannot have (run()-only ctx attributes, unknown names)."""
        known = self.bindings.keys() | self.module_names | BUILTINS | {self.facts.self_name}
        in_metadata = {id(n) for u in self.use_of.values() if u.kind == "metadata" for n in _walk(u.node)}
        for piece in pieces:
            for node in _walk(piece):
                use = self.use_of.get(id(node))
                if use is not None and use.kind != "metadata":
                    return f"its reward reads `{src(node, 40)}`, which only run() has"
                if isinstance(node, cst.Name) and node.value == self.facts.ctx_name and id(node) not in in_metadata \
                        and node.value in reads(piece):
                    return f"its reward hands `{self.facts.ctx_name}` to other code"
            unknown = reads(piece) - known - {self.facts.ctx_name or ""}
            if unknown:
                return f"its reward reads `{sorted(unknown)[0]}`, a name the rewrite cannot follow"
        return None

    def _order(self, statements: list[cst.SimpleStatementLine], exits: list, messages_var: Optional[str]) -> Optional[str]:
        """Why the moved statements would not see what they saw in run(): the grader reads the *final* messages, so
        a statement reading them must come after every change to them, and every exit must follow it directly."""
        for stmt in statements:
            at = self.body.index(stmt)
            for e in exits:
                if e.statement not in self.body or self.body.index(e.statement) < at:
                    return f"its reward is computed by `{src(stmt, 40)}`, which does not come before every exit"
                if messages_var is None or messages_var not in reads(stmt):
                    continue
                if e.statement is not _line_of(e.ret, e.statement):
                    return (f"its reward reads `{messages_var}` in `{src(stmt, 40)}` while run() still changes them "
                            "before an exit")
                between = self.body[at + 1: self.body.index(e.statement)]
                if any(_writes(s, messages_var) for s in between):
                    return f"its reward reads `{messages_var}` in `{src(stmt, 40)}` before run() changes them again"
        return None

    def _members(self, pieces: list[cst.CSTNode]) -> list[cst.BaseStatement] | str:
        """The methods and class attributes the pieces use through ``self`` (transitively), in class order."""
        facts = self.facts
        needed: set[str] = set()
        todo = sorted(set().union(*(self_reads(p, facts.self_name) for p in pieces)))
        while todo:
            attr = todo.pop()
            if attr in needed:
                continue
            if attr in facts.instance_attrs:
                return f"its reward reads self.{attr}, state of the loop instance"
            if attr in ("run", "get_tools") or (attr not in facts.methods and attr not in facts.class_attrs):
                return f"its reward uses self.{attr}, which the class does not define for it"
            needed.add(attr)
            if attr in facts.methods:
                method = facts.methods[attr]
                names = params_of(method)
                static = any(dotted_name(d.decorator) == "staticmethod" for d in method.decorators)
                todo += sorted(self_reads(method, names[0])) if names and not static else []
        members = list(facts.cls.body.body) if isinstance(facts.cls.body, cst.IndentedBlock) else []
        out: list[cst.BaseStatement] = []
        for m in members:
            if isinstance(m, cst.FunctionDef) and m.name.value in needed:
                out.append(m)
            elif isinstance(m, cst.SimpleStatementLine) and any(facts.class_attrs.get(n) is m for n in needed):
                out.append(m)
        return out

    def _label_and_metadata(self, pieces: list[cst.CSTNode], plan: RewardPlan) -> None:
        for piece in pieces:
            parent = parents_of(piece)
            for node in _walk(piece):
                use = self.use_of.get(id(node))
                if use is None or use.kind != "metadata":
                    continue
                label = label_read(node, parent)
                if label is not None:
                    plan.label_nodes[id(label[0])] = label[1]
                else:
                    plan.metadata_nodes.add(id(node))


def label_read(node: cst.CSTNode, parent: dict[int, cst.CSTNode]) -> Optional[tuple[cst.CSTNode, Optional[cst.BaseExpression]]]:
    """``<metadata>.get("ground_truth"[, default])`` / ``<metadata>["ground_truth"]`` around the metadata node
    ``node``: (the node that reads the label, the default or None), else None."""
    p = parent.get(id(node))
    if isinstance(p, cst.Attribute) and p.value is node and p.attr.value == "get":
        call = parent.get(id(p))
        if isinstance(call, cst.Call) and call.func is p and 1 <= len(call.args) <= 2 \
                and all(a.keyword is None and not a.star for a in call.args) and _is_key(call.args[0].value):
            return call, call.args[1].value if len(call.args) == 2 else None
    if isinstance(p, cst.Subscript) and p.value is node and len(p.slice) == 1 \
            and isinstance(p.slice[0].slice, cst.Index) and _is_key(p.slice[0].slice.value):
        return p, None
    return None


def _is_key(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.SimpleString) and expr.evaluated_value == LABEL_KEY


def _messages_var(exits: list) -> Optional[str]:
    """The name every exit returns its messages by (None when they differ or one is not a plain name)."""
    names = {e.messages.value if isinstance(e.messages, cst.Name) else None for e in exits}
    return names.pop() if len(names) == 1 else None


def _line_of(node: cst.CSTNode, top: cst.BaseStatement) -> cst.BaseStatement:
    """``top`` when ``node`` is one of its small statements (the exit is a statement of run()'s body)."""
    if isinstance(top, cst.SimpleStatementLine) and any(s is node for s in top.body):
        return top
    return node  # type: ignore[return-value]


def _writes(stmt: cst.CSTNode, name: str) -> bool:
    """Whether ``stmt`` rebinds or mutates the list ``name`` (assignment, augmented assignment, ``name.append(…)``
    and the other list mutators, an item assignment or deletion)."""
    for node in _walk(stmt):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
            target = node.target
            head = target.value if isinstance(target, cst.Subscript) else target
            if isinstance(head, cst.Name) and head.value == name:
                return True
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and node.func.value.value == name \
                and node.func.attr.value in _MUTATORS:
            return True
    return False


def _where(site: cst.CSTNode, body: list) -> str:
    if isinstance(site, cst.For):
        return "as a loop variable"
    if isinstance(site, (cst.With, cst.ExceptHandler)):
        return f"in `{src(site, 30)}`"
    return "inside a loop or branch" if site not in body else f"in `{src(site, 40)}`"


def _bindings(run: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    """name → the constructs that bind it in ``run`` (statements for assignments; the for/with/except/def
    construct otherwise), outside nested functions' own scopes."""
    out: dict[str, list[cst.CSTNode]] = {}
    parent = parents_of(run)

    def add(name: str, site: cst.CSTNode) -> None:
        out.setdefault(name, [])
        if site not in out[name]:
            out[name].append(site)

    for node in _walk(run.body):
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            line = parent.get(id(parent.get(id(node)))) if isinstance(node, cst.AssignTarget) else parent.get(id(node))
            for n in _targets(node.target):
                add(n, line if isinstance(line, cst.SimpleStatementLine) else node)
        elif isinstance(node, cst.For):
            for n in _targets(node.target):
                add(n, node)
        elif isinstance(node, cst.AsName):
            for n in _targets(node.name):
                add(n, parent.get(id(node)) or node)
        elif isinstance(node, cst.NamedExpr):
            for n in _targets(node.target):
                add(n, node)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            add(node.name.value, node)
    return out


def _targets(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _targets(el.value)]
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    return []


def _closure(facts: LoopFacts, exits: list) -> set[str]:
    """The run() locals the exits' rewards read, transitively through every place that binds them."""
    assert facts.run is not None
    bindings = _bindings(facts.run)
    names: set[str] = set()
    todo = [n for e in exits for n in reads(e.reward) if n in bindings]
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        for site in bindings[name]:
            todo += [n for n in reads(_bound_value(site)) if n in bindings]
    return names


def _carried_code(facts: LoopFacts, exits: list) -> list[cst.CSTNode]:
    """The code that computes the exits' rewards in run(): the expressions and what binds the names they read."""
    assert facts.run is not None
    bindings = _bindings(facts.run)
    return [*(e.reward for e in exits), *(_bound_value(s) for n in _closure(facts, exits) for s in bindings[n])]


def _bound_value(site: cst.CSTNode) -> cst.CSTNode:
    if isinstance(site, cst.For):
        return site.iter
    if isinstance(site, cst.SimpleStatementLine):
        return site
    if isinstance(site, cst.With):
        return cst.Tuple([cst.Element(i.item) for i in site.items])
    return site


def _inside_any(node: cst.CSTNode, roots: list[cst.CSTNode]) -> bool:
    return any(any(n is node for n in _walk(root)) for root in roots)


def _unneeded(facts: LoopFacts, plan: RewardPlan, dropped: set[int]) -> set[int]:
    """Ids of the moved statements run() itself no longer needs (nothing it keeps reads what they bind)."""
    assert facts.run is not None
    skip = dropped | {id(s) for s in plan.statements} | {id(e.call) for e in facts.exits}
    kept_reads = _reads_skipping(facts.run.body, skip)
    kept_reads |= {n for e in facts.exits for n in reads(e.messages)}
    out: set[int] = set()
    for stmt in reversed(plan.statements):
        bound = {n for t in stmt.body[0].targets for n in _targets(t.target)} if isinstance(stmt.body[0], cst.Assign) \
            else set(_targets(stmt.body[0].target))
        if bound & kept_reads:
            kept_reads |= reads(stmt)
        else:
            out.add(id(stmt))
    return out


def _reads_skipping(root: cst.CSTNode, skip: set[int]) -> set[str]:
    """Names read under ``root``, leaving out the subtrees whose id is in ``skip``."""
    out: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, cst.Attribute):
            stack.append(node.value)
            continue
        if isinstance(node, cst.Arg):
            stack.append(node.value)
            continue
        if isinstance(node, cst.Name):
            out.add(node.value)
            continue
        stack.extend(_kids(node))
    return out
