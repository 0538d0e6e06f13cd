"""Facts about a legacy ``RolloutAgentLoop`` subclass, for the ``legacy-loop`` rule: every place where its code
touches the legacy API (``ctx.chat``, ``ctx.request.*``, ``ctx.complete``, …, and ``request.*`` in ``get_tools``),
its exits, its ``__init__``, its members. Read-only: nothing here changes the tree.

The rewrite keeps the loop's own code and translates only these places, so no shape of the loop's tool code has to
be recognised: :func:`analyse_loop` classifies each use (:class:`Use`) or records why it has no translation
(``LoopFacts.problems``, the precise reason of the TODO).
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from codemods.base import ImportTable, dotted_name
from codemods.visit import SOLID_KINDS, solid_kind_of, visited_fields

LOOP_BASES = (
    "osmosis_ai.RolloutAgentLoop",
    "osmosis_ai.rollout.RolloutAgentLoop",
    "osmosis_ai.rollout.core.RolloutAgentLoop",
    "osmosis_ai.rollout.core.base.RolloutAgentLoop",
    "osmosis_compat.legacy.RolloutAgentLoop",
    "osmosis_compat.legacy.base.RolloutAgentLoop",
)
BUILTINS = frozenset(dir(builtins))

#: ``ctx.request.<field>`` (``request.<field>`` in ``get_tools``) → the kind of :class:`Use` it is
REQUEST_FIELDS = {
    "messages": "prompt", "metadata": "metadata", "max_turns": "max_turns", "max_tokens_total": "max_tokens_total",
    "rollout_id": "rollout_id", "api_key": "api_key", "completion_params": "params",
}
#: ``ctx.<attr>`` used as a value → kind
CTX_VALUES = {"tools": "tools", "debug_enabled": "debug"}
#: ``ctx.<method>(...)`` as a statement of its own: dropped (per-rollout metrics and debug file; 0.3 has neither)
CTX_STATEMENTS = ("record_tool_call", "log_event")


@dataclass
class Use:
    """One place where the loop's code touches the legacy API.

    ``kind``: ``chat`` (a ``ctx.chat(...)`` call), ``prompt`` / ``metadata`` / ``max_turns`` / ``max_tokens_total``
    / ``rollout_id`` / ``api_key`` / ``params`` (a ``<request>.<field>`` attribute), ``params_splat`` (the
    ``**ctx.request.completion_params`` argument of a chat call), ``request_arg`` (``ctx.request`` handed to
    ``self.get_tools``), ``tools`` / ``debug`` (``ctx.tools`` / ``ctx.debug_enabled``), ``complete`` / ``error``
    (a ``return ctx.complete(...)`` / ``return ctx.error(...)``: ``node`` is the Return), ``drop`` (a
    ``ctx.record_tool_call(...)`` / ``ctx.log_event(...)`` statement: ``node`` is the statement). ``on_request``:
    the attribute is read on ``ctx.request`` (else on ``get_tools``' own ``request``). ``method``: the method it is
    in (``run``, ``get_tools``, or a method ``run()`` hands ``ctx`` to).
    """

    kind: str
    node: cst.CSTNode
    method: str
    on_request: bool = True


@dataclass
class Exit:
    """A ``return ctx.complete(final_messages, finish_reason, reward)`` of ``run()``."""

    ret: cst.Return
    call: cst.Call
    messages: cst.BaseExpression
    reward: Optional[cst.BaseExpression]  # None: no reward (or a literal None)
    statement: cst.BaseStatement  # the statement of run()'s body that holds it (itself when it is one)


@dataclass
class LoopFacts:
    """What the rewrite needs to know about one loop class (see the module docstring)."""

    cls: cst.ClassDef
    name: str
    base: Optional[cst.Arg]  # the RolloutAgentLoop base
    loop_name: Optional[cst.BaseExpression]  # the class attribute `name = …`
    run: Optional[cst.FunctionDef]
    self_name: str
    ctx_name: Optional[str]
    get_tools: Optional[cst.FunctionDef]
    reads_request: bool  # get_tools reads its request (it is handed the workflow context)
    init: Optional[cst.FunctionDef]
    init_params: bool  # __init__ takes parameters beyond self
    init_required: list[str]
    methods: dict[str, cst.FunctionDef]
    class_attrs: dict[str, cst.SimpleStatementLine]
    instance_attrs: set[str]  # self.<x> assigned in some method: per-instance state
    uses: list[Use] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    helpers: dict[str, str] = field(default_factory=dict)  # methods run() hands ctx to → their ctx parameter
    problems: list[str] = field(default_factory=list)  # why it cannot be translated, each precise

    def uses_of(self, *kinds: str) -> list[Use]:
        return [u for u in self.uses if u.kind in kinds]


# ------------------------------------------------------------------------------------------------ module index


@dataclass
class ModuleIndex:
    """Top-level definitions of a module: functions, assignments (name → value), and every bound name."""

    functions: dict[str, cst.FunctionDef]
    assigns: dict[str, cst.BaseExpression]
    assign_counts: dict[str, int]
    bound: set[str]

    @classmethod
    def of(cls, module: cst.Module, table: ImportTable) -> ModuleIndex:
        functions: dict[str, cst.FunctionDef] = {}
        assigns: dict[str, cst.BaseExpression] = {}
        counts: dict[str, int] = {}
        bound: set[str] = set(table.names) | set(table.modules)
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef):
                functions[stmt.name.value] = stmt
                bound.add(stmt.name.value)
            elif isinstance(stmt, cst.ClassDef):
                bound.add(stmt.name.value)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    for target, value in _assignments(small):
                        counts[target] = counts.get(target, 0) + 1
                        bound.add(target)
                        if value is not None:
                            assigns[target] = value
            else:
                for node in _walk(stmt):
                    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                        bound.add(node.name.value)
                    elif isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                        bound.add(node.target.value)
        return cls(functions, assigns, counts, bound)

    def single_assign(self, name: str) -> Optional[cst.BaseExpression]:
        return self.assigns.get(name) if self.assign_counts.get(name) == 1 else None


def _assignments(small: cst.BaseSmallStatement) -> list[tuple[str, Optional[cst.BaseExpression]]]:
    """(name, value) for each plain name a small statement binds (value None when it is not the only target)."""
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
        value: Optional[cst.BaseExpression] = small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        targets, value = [small.target], small.value
    else:
        return []
    out: list[tuple[str, Optional[cst.BaseExpression]]] = []
    for t in targets:
        if isinstance(t, cst.Name):
            out.append((t.value, value if len(targets) == 1 else None))
        elif isinstance(t, (cst.Tuple, cst.List)):
            out += [(el.value.value, None) for el in t.elements if isinstance(el.value, cst.Name)]
    return out


# ------------------------------------------------------------------------------------------------ tree helpers


_FIELDS: dict[type, tuple[str, ...]] = {}
_DESCENDANTS: dict[int, tuple[cst.CSTNode, list[cst.CSTNode], int, int]] = {}  # id → (node, preorder, start, end)


def _kids(node: cst.CSTNode) -> list[cst.CSTNode]:
    # from the dataclass fields (in their order), those libcst visits (the others hold strings and flags):
    # libcst's ``children`` runs a visitor per call, ~20x slower. Whitespace nodes are left out: no analysis here
    # looks at them (comments are read from leading_lines directly), and they are over half of a tree's nodes
    names = _FIELDS.get(type(node))
    if names is None:
        visited = visited_fields(type(node))
        names = _FIELDS[type(node)] = tuple(
            f.name for f in dataclasses.fields(node) if visited is None or f.name in visited)
    out: list[cst.CSTNode] = []
    kinds = SOLID_KINDS
    for name in names:
        v = getattr(node, name)
        k = kinds.get(type(v))
        if k is None:
            k = solid_kind_of(v)
        if k == 1:
            out.append(v)
        elif k == 2:
            out.extend([x for x in v if kinds.get(type(x)) == 1 or (type(x) not in kinds and solid_kind_of(x) == 1)])
    return out


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under ``node`` (itself included; whitespace nodes left out), depth first; memoised while
    :func:`walk_cache` is active (a later walk of any node of a walked tree is a slice of its preorder)."""
    hit = _DESCENDANTS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1][hit[2]:hit[3]]
    order: list[cst.CSTNode] = []
    fresh: list[tuple[cst.CSTNode, int, int]] = []  # (node, start, end) of the nodes listed by this walk
    _walk_into(node, order, fresh)
    for n, start, end in fresh:
        _DESCENDANTS[id(n)] = (n, order, start, end)
    return order[:]


def _walk_into(n: cst.CSTNode, order: list[cst.CSTNode], fresh: list[tuple[cst.CSTNode, int, int]]) -> None:
    """Append ``n`` and the nodes under it to ``order`` in preorder, and to ``fresh`` (node, start, end) for every
    node walked rather than copied from an earlier walk (for :func:`_walk`)."""
    seen = _DESCENDANTS.get(id(n))
    if seen is not None and seen[0] is n:
        order.extend(seen[1][seen[2]:seen[3]])  # a subtree walked before: copied, not walked again
        return
    start = len(order)
    order.append(n)
    for kid in _kids(n):
        _walk_into(kid, order, fresh)
    fresh.append((n, start, len(order)))


class walk_cache:
    """Scope of the :func:`_walk` memo (one rule run: the nodes stay alive, so ids are stable)."""

    def __enter__(self) -> None:
        _DESCENDANTS.clear()
        _READS.clear()

    def __exit__(self, *exc: object) -> None:
        _DESCENDANTS.clear()
        _READS.clear()


def parents_of(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """id(node) → parent for every node under ``root`` (whitespace left out), from the memoised walk."""
    out: dict[int, cst.CSTNode] = {}
    for node in _walk(root):
        for kid in _kids(node):
            out[id(kid)] = node
    return out


def src(node: cst.CSTNode, limit: int = 60) -> str:
    """``node``'s code on one line, cut at ``limit`` characters (for messages)."""
    text = " ".join(cst.Module(body=[]).code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_READS: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}  # memo of reads(), cleared with the walk memo


def reads(node: cst.CSTNode) -> frozenset[str]:
    """Names read in ``node``: not attribute names after a dot, keyword-argument names, definition and parameter
    names, or names bound by a comprehension or lambda inside it. Memoised while :func:`walk_cache` is active."""
    hit = _READS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out: set[str] = set()
    bound: set[str] = set()
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        elif isinstance(n, cst.Attribute):
            stack.append(n.value)  # not the name after the dot
        elif isinstance(n, cst.Arg):
            stack.append(n.value)  # not a keyword's name
        elif isinstance(n, cst.ImportAlias):
            continue
        elif isinstance(n, cst.Param):
            stack.extend(k for k in _kids(n) if k is not n.name)
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(k for k in _kids(n) if k is not n.name)
        else:
            if isinstance(n, cst.CompFor):
                bound.update(x.value for x in _walk(n.target) if isinstance(x, cst.Name))
            elif isinstance(n, cst.Lambda):
                bound.update(p.name.value for p in n.params.params)
            stack.extend(_kids(n))
    result = frozenset(out - bound)
    _READS[id(node)] = (node, result)
    return result


def self_reads(node: cst.CSTNode, self_name: str) -> set[str]:
    """The attributes ``node`` reads on ``self_name`` (``self.<x>``)."""
    return {n.attr.value for n in _walk(node)
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == self_name}


def body_statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
    """The statements of a function's body (a one-line body as one statement)."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return [cst.SimpleStatementLine(body=list(body.body))]
    return list(body.body)


def is_docstring(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def params_of(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]


# ------------------------------------------------------------------------------------------------ the class


def analyse_loop(cls: cst.ClassDef, table: ImportTable) -> LoopFacts:
    """The facts of the loop class ``cls`` (see :class:`LoopFacts`); never raises on an odd shape — what has no
    translation is a problem with its reason."""
    members = list(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else []
    methods = {m.name.value: m for m in members if isinstance(m, cst.FunctionDef)}
    class_attrs: dict[str, cst.SimpleStatementLine] = {}
    for m in members:
        if isinstance(m, cst.SimpleStatementLine):
            for small in m.body:
                for name, _ in _assignments(small):
                    class_attrs[name] = m
    loop_name = None
    stmt = class_attrs.get("name")
    if stmt is not None and isinstance(stmt.body[0], (cst.Assign, cst.AnnAssign)):
        loop_name = stmt.body[0].value
    run, get_tools, init = methods.get("run"), methods.get("get_tools"), methods.get("__init__")
    facts = LoopFacts(
        cls=cls, name=cls.name.value, base=next((b for b in cls.bases if table.matches(b.value, LOOP_BASES)), None),
        loop_name=loop_name, run=run, self_name="self", ctx_name=None, get_tools=get_tools, reads_request=False,
        init=init, init_params=False, init_required=[], methods=methods, class_attrs=class_attrs,
        instance_attrs=_instance_attrs(methods),
    )
    if init is not None:
        p = init.params
        extra = [*p.posonly_params, *p.params][1:] + list(p.kwonly_params)
        facts.init_params = bool(extra) or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None
        facts.init_required = [x.name.value for x in extra if x.default is None]
    if run is None:
        facts.problems.append("it defines no run() of its own")
        return facts
    if run.asynchronous is None:
        facts.problems.append("its run() is not async")
    names = params_of(run)
    facts.self_name = names[0] if names else "self"
    facts.ctx_name = names[1] if len(names) > 1 else None
    if facts.ctx_name is not None:
        _RunScan(facts, run).scan()
    if get_tools is not None:
        _scan_get_tools(facts, get_tools)
    return facts


def _instance_attrs(methods: dict[str, cst.FunctionDef]) -> set[str]:
    out: set[str] = set()
    for fn in methods.values():
        names = params_of(fn)
        if not names:
            continue
        for node in _walk(fn):
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.AssignTarget):
                targets = [node.target]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
            for t in targets:
                for n in _walk(t):
                    if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == names[0]:
                        out.add(n.attr.value)
    return out


class _RunScan:
    """Classifies every use of ``ctx`` in ``run()`` — and in the loop's own methods ``run()`` hands ``ctx`` to
    (``await self._step(ctx, messages)``: scanned with their parameter as ``ctx``) — into :class:`Use` /
    :class:`Exit` / problems."""

    def __init__(self, facts: LoopFacts, fn: cst.FunctionDef, ctx: Optional[str] = None) -> None:
        self.facts, self.run = facts, fn
        self.method = fn.name.value
        self.ctx = ctx or facts.ctx_name
        self.self_name = (params_of(fn) or ["self"])[0]
        self.parent = parents_of(fn)

    def scan(self) -> None:
        for node in _walk(self.run.body):
            if isinstance(node, cst.Name) and node.value == self.ctx and self._is_reference(node):
                self._classify(node)
            elif isinstance(node, cst.Return) and node.value is not None and self.method == "run":
                self._check_return(node)

    def _is_reference(self, node: cst.Name) -> bool:
        p = self.parent.get(id(node))
        return not (isinstance(p, cst.Attribute) and p.attr is node or isinstance(p, cst.Arg) and p.keyword is node
                    or isinstance(p, (cst.Param, cst.FunctionDef, cst.ClassDef)))

    def _problem(self, text: str) -> None:
        if text not in self.facts.problems:
            self.facts.problems.append(text)

    def _classify(self, name: cst.Name) -> None:
        p = self.parent.get(id(name))
        if not (isinstance(p, cst.Attribute) and p.value is name):
            if isinstance(p, cst.Arg) and self._into_method(p):
                return
            call = self._enclosing_call(name)
            where = f"to `{src(call.func, 40)}(…)`" if call is not None else f"in `{src(p, 50)}`"
            self._problem(f"{self.method}() hands `{self.ctx}` itself {where}: only its attributes have a translation")
            return
        attr, above = p.attr.value, self.parent.get(id(p))
        if attr == "request":
            self._classify_request(p, above)
        elif attr in ("chat", "complete", "error") and isinstance(above, cst.Call) and above.func is p:
            self._classify_call(attr, above)
        elif attr in CTX_VALUES:
            self.facts.uses.append(Use(CTX_VALUES[attr], p, self.method))
        elif attr in CTX_STATEMENTS and isinstance(above, cst.Call) and above.func is p:
            expr = self.parent.get(id(above))
            line = self.parent.get(id(expr))
            if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                self.facts.uses.append(Use("drop", line, self.method))
            else:
                self._problem(f"the value of `{src(above, 50)}` is used: it has no osmosis-ai 0.3 equivalent")
        else:
            self._problem(f"`{self.ctx}.{attr}` has no osmosis-ai 0.3 equivalent (used in `{src(above or p, 50)}`)")

    def _into_method(self, arg: cst.Arg) -> bool:
        """``ctx`` handed to a method of the loop (``self.<m>(…, ctx, …)``): that method is scanned with its
        parameter as ``ctx``; the call stays as it is (it hands over the workflow context)."""
        call = self.parent.get(id(arg))
        head = dotted_name(call.func) if isinstance(call, cst.Call) else None
        method = self.facts.methods.get(head.partition(".")[2]) if head and head.startswith(f"{self.self_name}.") \
            else None
        if method is None or method is self.facts.run or method is self.facts.get_tools or arg.star:
            return False
        names = params_of(method)
        position = [a for a in call.args if a.keyword is None].index(arg) + 1 if arg.keyword is None else None
        param = names[position] if position is not None and position < len(names) else (
            arg.keyword.value if arg.keyword is not None and arg.keyword.value in names else None)
        if param is None:
            return False
        scanned = self.facts.helpers.get(method.name.value)
        if scanned is None:
            self.facts.helpers[method.name.value] = param
            _RunScan(self.facts, method, param).scan()
        return scanned in (None, param)

    def _classify_request(self, req: cst.Attribute, above: Optional[cst.CSTNode]) -> None:
        if isinstance(above, cst.Attribute) and above.value is req and above.attr.value in REQUEST_FIELDS:
            kind = REQUEST_FIELDS[above.attr.value]
            arg = self.parent.get(id(above))
            call = self.parent.get(id(arg))
            if kind == "params" and isinstance(arg, cst.Arg) and arg.star == "**" and self._is_chat(call):
                self.facts.uses.append(Use("params_splat", arg, self.method))
            else:
                self.facts.uses.append(Use(kind, above, self.method))
            return
        if isinstance(above, cst.Arg) and above.keyword is None and not above.star:
            call = self.parent.get(id(above))
            if isinstance(call, cst.Call) and dotted_name(call.func) == f"{self.self_name}.get_tools":
                self.facts.uses.append(Use("request_arg", req, self.method))
                return
        if isinstance(above, cst.Attribute) and above.value is req:
            self._problem(f"`{self.ctx}.request.{above.attr.value}` has no osmosis-ai 0.3 equivalent")
        else:
            self._problem(f"{self.method}() uses `{self.ctx}.request` as a value (`{src(above or req, 50)}`): the legacy "
                          "request has no osmosis-ai 0.3 equivalent")

    def _is_chat(self, call: Optional[cst.CSTNode]) -> bool:
        return isinstance(call, cst.Call) and dotted_name(call.func) == f"{self.ctx}.chat"

    def _classify_call(self, attr: str, call: cst.Call) -> None:
        if attr == "chat":
            if any(a.star == "*" for a in call.args) or not call.args or call.args[0].keyword is not None \
                    and call.args[0].keyword.value != "messages":
                self._problem(f"`{src(call, 50)}` passes its messages in a way the rewrite does not follow")
                return
            self.facts.uses.append(Use("chat", call, self.method))
            return
        ret = self.parent.get(id(call))
        if self.method != "run":
            self._problem(f"`{src(call, 50)}` is in {self.method}(), not in run(): the rewrite turns only "
                          f"run()'s own `return {self.ctx}.{attr}(…)` into the workflow's result")
            return
        if not isinstance(ret, cst.Return) or self._in_nested_function(ret):
            self._problem(f"`{src(call, 50)}` is not returned by run() itself: the rewrite turns only "
                          f"`return {self.ctx}.{attr}(…)` into the workflow's result")
            return
        args = _call_args(call, ("final_messages", "finish_reason", "reward") if attr == "complete"
                          else ("error_message", "final_messages"))
        if args is None:
            self._problem(f"`{src(call, 50)}` passes arguments the rewrite cannot read (* or ** or unknown names)")
            return
        first = args.get("final_messages" if attr == "complete" else "error_message")
        if first is None:
            self._problem(f"`{src(call, 50)}` has no {'messages' if attr == 'complete' else 'error message'}")
            return
        self.facts.uses.append(Use(attr, ret, self.method))
        if attr == "complete":
            reward = args.get("reward")
            if isinstance(reward, cst.Name) and reward.value == "None":
                reward = None
            self.facts.exits.append(Exit(ret, call, first, reward, self._top_statement(ret)))

    def _check_return(self, ret: cst.Return) -> None:
        value = ret.value
        if self._in_nested_function(ret) or isinstance(value, cst.Name) and value.value == "None":
            return
        if isinstance(value, cst.Call) and dotted_name(value.func) in (f"{self.ctx}.complete", f"{self.ctx}.error"):
            return
        self._problem(f"run() returns `{src(value, 50)}`, not {self.ctx}.complete(…) / {self.ctx}.error(…): a "
                      "prebuilt RolloutResult has no osmosis-ai 0.3 equivalent")

    def _in_nested_function(self, node: cst.CSTNode) -> bool:
        p = self.parent.get(id(node))
        while p is not None and p is not self.run:
            if isinstance(p, (cst.FunctionDef, cst.Lambda)):
                return True
            p = self.parent.get(id(p))
        return False

    def _top_statement(self, node: cst.CSTNode) -> cst.BaseStatement:
        body = self.run.body
        p, child = self.parent.get(id(node)), node
        while p is not None and p is not body:
            p, child = self.parent.get(id(p)), p
        return child  # type: ignore[return-value]

    def _enclosing_call(self, node: cst.CSTNode) -> Optional[cst.Call]:
        p = self.parent.get(id(node))
        while p is not None and not isinstance(p, cst.BaseStatement):
            if isinstance(p, cst.Call):
                return p
            p = self.parent.get(id(p))
        return None


def _call_args(call: cst.Call, names: tuple[str, ...]) -> Optional[dict[str, cst.BaseExpression]]:
    """The arguments of ``call`` by parameter name (``names`` in positional order); None for * / ** / unknown."""
    out: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if i >= len(names):
                return None
            out[names[i]] = arg.value
        elif arg.keyword.value in names:
            out[arg.keyword.value] = arg.value
        else:
            return None
    return out


def _scan_get_tools(facts: LoopFacts, fn: cst.FunctionDef) -> None:
    """``request.<field>`` in ``get_tools(self, request)``: translated like ``ctx.request.<field>`` (the method is
    handed the workflow context); any other use of ``request`` is a problem."""
    names = params_of(fn)
    if len(names) < 2:
        return
    request = names[1]
    parent = parents_of(fn)
    for node in _walk(fn.body):
        if not (isinstance(node, cst.Name) and node.value == request):
            continue
        p = parent.get(id(node))
        if isinstance(p, cst.Attribute) and p.attr is node or isinstance(p, cst.Arg) and p.keyword is node:
            continue
        facts.reads_request = True
        if isinstance(p, cst.Attribute) and p.value is node and p.attr.value in REQUEST_FIELDS:
            kind = REQUEST_FIELDS[p.attr.value]
            facts.uses.append(Use(kind, p, "get_tools", on_request=False))
        else:
            what = f"`{request}.{p.attr.value}`" if isinstance(p, cst.Attribute) else f"`{request}` itself"
            facts.problems.append(f"get_tools() reads {what}, which has no osmosis-ai 0.3 equivalent")
