"""Recognising the documented tool loop in a ``RolloutAgentLoop`` subclass (the ``legacy-loop`` rule's analysis).

:func:`analyse` returns a :class:`LoopPlan` when the class is the "Complete Agent Example" shape of
``seeds/legacy-agent-loop.md`` — and nothing the rewrite would lose — else :class:`NotRecognised` with the reason.
It is deliberately strict: whatever it does not understand makes the rule *wrap* the loop (behaviour kept by the
adapter) instead of rewriting it. Pure: reads the tree, changes nothing.
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import libcst as cst

from codemods.base import ImportTable, dotted_name, literal_eval
from codemods.visit import SOLID_KINDS, solid_kind_of, visited_fields

LOOP_BASES = (
    "osmosis_ai.RolloutAgentLoop",
    "osmosis_ai.rollout.RolloutAgentLoop",
    "osmosis_ai.rollout.core.RolloutAgentLoop",
    "osmosis_ai.rollout.core.base.RolloutAgentLoop",
    "osmosis_compat.legacy.RolloutAgentLoop",
    "osmosis_compat.legacy.base.RolloutAgentLoop",
)
_TOOLS_MODULES = ("osmosis_ai.rollout.tools", "osmosis_ai.rollout")
_SCHEMA_MODULES = ("osmosis_ai", "osmosis_ai.rollout", "osmosis_ai.rollout.core", "osmosis_ai.rollout.core.schemas")
# calls run() may make besides the loop's own: they compute nothing the rewrite would lose
_PURE_BUILTINS = {"list", "len", "range", "min", "max", "str", "int", "float", "dict", "sum", "enumerate", "bool", "round"}
_DROPPED_CTX = {"log_event", "record_tool_call"}  # debug log / metrics only
_BUILTINS = set(dir(builtins))


@dataclass
class ToolPlan:
    """One tool: its schema (exact name, description, parameters) and the module-level function that runs it."""

    name: str
    description: str
    parameters: Any
    function: str


@dataclass
class LoopPlan:
    """What the rewrite needs to know about a recognised loop."""

    class_name: str
    loop_name: str
    tools: list[ToolPlan]
    max_turns: int
    max_turns_from_request: bool
    params: list[tuple[str, Any]]  # constant ctx.chat kwargs → OsmosisRolloutModel(params=…)
    messages_var: str
    metadata_expr_nodes: list[cst.Attribute]  # ctx.request.metadata occurrences in the reward expression
    reward: Optional[cst.BaseExpression]  # None: the loop passed no reward (no grader is written)
    reward_statements: list[cst.SimpleStatementLine]  # statements computing locals the reward reads, in order
    grader_members: list[cst.BaseStatement]  # helper methods / class attributes the reward uses, in class order
    dropped: list[str] = field(default_factory=list)  # what of run() the rewrite leaves out (edit message)
    # "decorate": the tool functions get Strands @tool decorators (literal schemas, registry/dispatcher executor);
    # "adapter": the loop's own executor runs each call (legacy_strands_tools); "none": the loop has no tools
    tool_mode: str = "decorate"
    schemas_expr: Optional[str] = None  # adapter: source of the tool schema list (module code or self.get_tools(None))
    executor: Optional[str] = None  # adapter: source of the executor (a module function or self.<method>)
    workflow_members: list[cst.BaseStatement] = field(default_factory=list)  # class members moved into the workflow
    sequential: bool = False  # the loop ran tool calls one at a time (a `for` over them), not concurrently
    reward_note: Optional[str] = None  # why the reward needs a human look (a TODO on the grader)


@dataclass
class NotRecognised:
    reason: str


Result = Union[LoopPlan, NotRecognised]


class _Stop(Exception):
    pass


def _no(reason: str) -> None:
    raise _Stop(reason)


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
                    targets: list[cst.BaseExpression] = []
                    value = None
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                        value = small.value
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        targets, value = [small.target], small.value
                    for t in targets:
                        if isinstance(t, cst.Name):
                            counts[t.value] = counts.get(t.value, 0) + 1
                            bound.add(t.value)
                            if value is not None and len(targets) == 1:
                                assigns[t.value] = value
                        elif isinstance(t, (cst.Tuple, cst.List)):
                            for el in t.elements:
                                if isinstance(el.value, cst.Name):
                                    bound.add(el.value.value)
                                    counts[el.value.value] = counts.get(el.value.value, 0) + 2
            else:
                for node in _walk(stmt):
                    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                        bound.add(node.name.value)
        return cls(functions, assigns, counts, bound)

    def single_assign(self, name: str) -> Optional[cst.BaseExpression]:
        return self.assigns.get(name) if self.assign_counts.get(name) == 1 else None


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
    :func:`walk_cache` is active.

    The first walk of a tree lists it once in preorder and remembers, for every node in it, where its subtree
    starts and ends in that list (a subtree is a contiguous run of a preorder): a later walk of any of them is a
    slice, not a new traversal."""
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

    def __exit__(self, *exc: object) -> None:
        _DESCENDANTS.clear()


def _is_attr(expr: cst.CSTNode, dotted: str) -> bool:
    return isinstance(expr, (cst.Attribute, cst.Name)) and dotted_name(expr) == dotted


def _literal(node: cst.BaseExpression) -> Any:
    """The Python value of a literal expression (dict/list/str/number/bool/None), else raise _Stop."""
    # the common shapes directly (code generation per leaf is the slow path)
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)) and not node.lpar:
        try:
            return literal_eval(node.value)
        except (ValueError, SyntaxError):
            _no(f"`{node.value}` is not a literal")
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.Dict) and not node.lpar and all(isinstance(e, cst.DictElement) for e in node.elements):
        return {_literal(e.key): _literal(e.value) for e in node.elements}
    if isinstance(node, cst.List) and not node.lpar and all(isinstance(e, cst.Element) for e in node.elements):
        return [_literal(e.value) for e in node.elements]
    try:
        return literal_eval(cst.Module(body=[]).code_for_node(node).strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        _no(f"`{_src(node)}` is not a literal")


def _src(node: cst.CSTNode, limit: int = 60) -> str:
    text = " ".join(cst.Module(body=[]).code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kwargs(call: cst.Call) -> dict[str, cst.BaseExpression]:
    out = {}
    for arg in call.args:
        if arg.star or arg.keyword is None:
            _no(f"`{_src(call)}` has positional or ** arguments")
        out[arg.keyword.value] = arg.value
    return out


def _body_statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return [cst.SimpleStatementLine(body=list(body.body))]
    stmts = list(body.body)
    if stmts and isinstance(stmts[0], cst.SimpleStatementLine) and isinstance(stmts[0].body[0], cst.Expr) and isinstance(
        stmts[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)
    ):
        stmts = stmts[1:]
    return stmts


# ------------------------------------------------------------------------------------------------ tool schemas


def _schema_from_dict(value: Any) -> tuple[str, str, Any]:
    if not isinstance(value, dict) or value.get("type") != "function" or not isinstance(value.get("function"), dict):
        _no("a tool schema is not a {'type': 'function', 'function': {...}} dict")
    fn = value["function"]
    name, desc = fn.get("name"), fn.get("description")
    if not isinstance(name, str) or not isinstance(desc, str):
        _no("a tool schema has no literal name or description")
    params = fn.get("parameters", {"type": "object", "properties": {}, "required": []})
    return name, desc, params


def _pydantic_value(node: cst.BaseExpression, table: ImportTable) -> Any:
    """Evaluate literal ``OpenAIFunction*Schema(...)`` constructor trees into the dicts they dump to."""
    if isinstance(node, cst.Call):
        which = table.matches(node.func, [f"{m}.{n}" for m in _SCHEMA_MODULES for n in (
            "OpenAIFunctionToolSchema", "OpenAIFunctionSchema", "OpenAIFunctionParametersSchema",
            "OpenAIFunctionPropertySchema")])
        if which is None and isinstance(node.func, cst.Name) and node.func.value.startswith("OpenAIFunction"):
            which = node.func.value
        if which is None:
            _no(f"`{_src(node)}` is not a literal tool schema")
        kind = which.rpartition(".")[2]
        kw = {k: _pydantic_value(v, table) for k, v in _kwargs(node).items()}
        if kind == "OpenAIFunctionPropertySchema":
            return {k: kw[k] for k in ("type", "description", "enum") if kw.get(k) is not None}  # extras ignored
        if kind == "OpenAIFunctionParametersSchema":
            props = kw.get("properties", {})
            if isinstance(props, dict):
                props = {k: ({f: v[f] for f in ("type", "description", "enum") if v.get(f) is not None}
                             if isinstance(v, dict) else v) for k, v in props.items()}
            return {"type": kw.get("type"), "properties": props, "required": kw.get("required")}
        if kind == "OpenAIFunctionSchema":
            kw.setdefault("parameters", {"type": "object", "properties": {}, "required": []})
            return kw
        return kw
    if isinstance(node, cst.Dict):
        out = {}
        for el in node.elements:
            if not isinstance(el, cst.DictElement):
                _no("a tool schema uses ** in a dict")
            out[_literal(el.key)] = _pydantic_value(el.value, table)
        return out
    if isinstance(node, (cst.List, cst.Tuple)):
        return [_pydantic_value(el.value, table) for el in node.elements]
    return _literal(node)


def _tool_schemas(expr: cst.BaseExpression, index: ModuleIndex, table: ImportTable) -> list[tuple[str, str, Any]]:
    if isinstance(expr, cst.Name):
        value = index.single_assign(expr.value)
        if value is None:
            _no(f"get_tools() returns `{expr.value}`, which is not one module-level list")
        expr = value
    if not isinstance(expr, cst.List):
        _no("get_tools() does not return a list literal of tool schemas")
    out = []
    for el in expr.elements:
        if isinstance(el, cst.StarredElement):
            _no("the tool list uses *")
        node = el.value
        if isinstance(node, cst.Name) and index.single_assign(node.value) is not None:
            node = index.single_assign(node.value)
        out.append(_schema_from_dict(_pydantic_value(node, table)))
    if not out:
        _no("the loop declares no tools")
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        _no("two tool schemas have the same name")
    return out


# ------------------------------------------------------------------------------------------------ tool executor


def _executor_mapping(fn: cst.FunctionDef, index: ModuleIndex, table: ImportTable) -> dict[str, str]:
    """tool name → module-level function, from a registry dict the executor reads or its if/elif dispatcher."""
    mapping: dict[str, str] = {}
    star_call = from_registry = False
    for node in _walk(fn):
        if isinstance(node, cst.Name) and node.value in index.assigns and isinstance(index.assigns[node.value], cst.Dict):
            reg = index.single_assign(node.value)
            if reg is None:
                continue
            for el in reg.elements:
                if not (isinstance(el, cst.DictElement) and isinstance(el.value, cst.Name)):
                    _no(f"the tool registry `{node.value}` is not a dict of names")
                mapping[_literal(el.key)] = el.value.value
                from_registry = True
        if isinstance(node, cst.If) and isinstance(node.test, cst.Comparison) and len(node.test.comparisons) == 1:
            comp = node.test.comparisons[0]
            if isinstance(comp.operator, cst.Equal):
                lit = comp.comparator if isinstance(comp.comparator, cst.SimpleString) else (
                    node.test.left if isinstance(node.test.left, cst.SimpleString) else None)
                if lit is not None:
                    calls = [c for s in node.body.body for c in _walk(s) if isinstance(c, cst.Call)
                             and isinstance(c.func, cst.Name) and c.func.value in index.functions]
                    if len(calls) != 1:
                        _no(f"the dispatcher branch for {lit.value} does not call exactly one tool function")
                    call = calls[0]
                    params = _params(index.functions[call.func.value])
                    for i, arg in enumerate(call.args):
                        ok = arg.star == "**" or (
                            isinstance(arg.value, cst.Subscript) and len(arg.value.slice) == 1
                            and isinstance(arg.value.slice[0].slice, cst.Index)
                            and isinstance(arg.value.slice[0].slice.value, cst.SimpleString)
                            and _literal(arg.value.slice[0].slice.value)
                            == (arg.keyword.value if arg.keyword else (params[i] if i < len(params) else None))
                        )
                        if not ok:
                            _no(f"the dispatcher calls `{_src(call)}`: arguments are not passed through by name")
                    mapping[_literal(lit)] = call.func.value
        if isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].star == "**":
            star_call = True
    if not mapping:
        _no("the tool executor has neither a name→function registry nor an if/elif dispatcher")
    if from_registry and not star_call:
        _no("the tool executor does not call the registered function with the model's arguments (fn(**args))")
    # what goes back to the model must be the tool's value, as Strands returns it
    for node in _walk(fn):
        if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("create_tool_result"):
            if len(node.args) != 2:
                _no("create_tool_result() is not called with (id, content)")
            content = node.args[1].value
            if isinstance(content, cst.Call) and dotted_name(content.func) in ("str", "serialize_tool_result", "json.dumps") \
                    and len(content.args) == 1:
                content = content.args[0].value
            if isinstance(content, cst.Await):
                content = content.expression
            # the tool's own value: a variable holding it, or the tool call itself
            if not (isinstance(content, cst.Name) or (isinstance(content, cst.Call) and content.args and all(
                a.star == "**" or isinstance(a.value, cst.Subscript) for a in content.args
            ))):
                _no(f"the tool executor post-processes results (`{_src(node.args[1].value)}`)")
    return mapping


def _params(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]


# ------------------------------------------------------------------------------------------------ the class


def _free_names(node: cst.CSTNode) -> list[cst.Name]:
    """Names read in ``node`` (not attribute names after a dot, not keyword-argument names)."""
    out: list[cst.Name] = []
    _free_names_into(node, out)
    return out


def _free_names_into(n: cst.CSTNode, out: list[cst.Name]) -> None:
    """Append to ``out`` the names read in ``n``, in order (for :func:`_free_names`)."""
    if isinstance(n, cst.Name):
        out.append(n)
        return
    if isinstance(n, cst.Attribute):
        _free_names_into(n.value, out)
        return
    if isinstance(n, cst.Arg):
        _free_names_into(n.value, out)
        return
    for c in n.children:
        _free_names_into(c, out)


def analyse(cls: cst.ClassDef, module: cst.Module, table: ImportTable, index: ModuleIndex) -> Result:
    """Recognise the documented tool loop in ``cls`` (see the module docstring)."""
    try:
        return _analyse(cls, table, index)
    except _Stop as stop:
        return NotRecognised(str(stop))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        # a shape the analysis did not foresee: wrapping keeps the behaviour, so that is the safe answer
        return NotRecognised(f"its shape was not understood ({type(exc).__name__}: {exc})")


def _parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    out: dict[int, cst.CSTNode] = {}
    for node in _walk(root):
        for kid in _kids(node):
            out[id(kid)] = node
    return out


def _members_closure(start: set[str], methods: dict[str, cst.FunctionDef], attrs: dict[str, cst.SimpleStatementLine],
                     members: list[tuple[str, cst.BaseStatement]], what: str) -> list[cst.BaseStatement]:
    """The class members ``start`` names and those they use through ``self.<name>`` (transitively), class order."""
    needed: set[str] = set()
    todo = list(start)
    while todo:
        attr = todo.pop()
        if attr in needed:
            continue
        if attr not in methods and attr not in attrs:
            _no(f"{what} uses self.{attr}, which the class does not define")
        if attr == "run":
            _no(f"{what} calls self.run()")
        needed.add(attr)
        if attr in methods:
            self_name = (_params(methods[attr]) or ["self"])[0]
            for node in _walk(methods[attr]):
                if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name:
                    todo.append(node.attr.value)
    return [stmt for name, stmt in members if name in needed]


def _analyse(cls: cst.ClassDef, table: ImportTable, index: ModuleIndex) -> LoopPlan:
    if cls.keywords or len(cls.bases) != 1 or cls.decorators:
        _no("the class has other bases, keywords or decorators")
    methods: dict[str, cst.FunctionDef] = {}
    attrs: dict[str, cst.SimpleStatementLine] = {}
    members: list[tuple[str, cst.BaseStatement]] = []
    loop_name = None
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.FunctionDef):
            if stmt.decorators:
                _no(f"the method {stmt.name.value}() is decorated")
            methods[stmt.name.value] = stmt
            members.append((stmt.name.value, stmt))
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if i == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            target = small.target if isinstance(small, cst.AnnAssign) else (
                small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None)
            if isinstance(target, cst.Name):
                value = small.value
                if target.value == "name":
                    if not isinstance(value, cst.SimpleString):
                        _no("the loop's `name` is not a string literal")
                    loop_name = _literal(value)
                attrs[target.value] = stmt
                members.append((target.value, stmt))
                continue
            if isinstance(small, cst.Pass):
                continue
        _no(f"the class body has a statement the rewrite has no place for (`{_src(stmt)}`)")
    if not loop_name:
        _no("the loop has no `name = \"...\"`")
    if "__init__" in methods:
        _no("the class defines __init__ (per-instance state)")
    get_tools, run = methods.get("get_tools"), methods.get("run")
    if get_tools is None or run is None or run.asynchronous is None:
        _no("the class lacks get_tools() or async run()")

    params = _params(run)
    if len(params) != 2:
        _no("run() does not take (self, ctx)")
    self_name, ctx = params

    def is_ctx(expr: cst.CSTNode, *attrs_: str) -> bool:
        return _is_attr(expr, ".".join((ctx, *attrs_)))

    chats, completes, batches = [], [], []
    for node in _walk(run.body):
        if isinstance(node, cst.Call):
            if is_ctx(node.func, "chat"):
                chats.append(node)
            elif is_ctx(node.func, "complete"):
                completes.append(node)
            elif table.matches(node.func, [f"{m}.execute_tool_calls" for m in _TOOLS_MODULES]) or _is_attr(
                node.func, "execute_tool_calls"
            ):
                batches.append(node)
    if len(chats) != 1:
        _no(f"run() makes {len(chats)} ctx.chat() calls (the rewrite needs one, in the turn loop)")
    if not completes:
        _no("run() never returns ctx.complete()")
    if len(batches) > 1:
        _no("run() calls execute_tool_calls() more than once")
    chat = chats[0]

    # the messages: built from the request's, completed with the loop's
    stmts = _body_statements(run)
    heads = [c.args[0].value if c.args and c.args[0].keyword is None and not c.args[0].star else None for c in completes]
    if not all(isinstance(h, cst.Name) for h in heads) or len({h.value for h in heads}) != 1:
        _no("ctx.complete() does not always get the message list as its first argument")
    messages_var = heads[0].value
    init = None
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            a = stmt.body[0]
            if len(a.targets) == 1 and _is_attr(a.targets[0].target, messages_var):
                init = a.value
                break
    req_msgs = lambda e: is_ctx(e, "request", "messages")  # noqa: E731
    if init is None or not (
        req_msgs(init)
        or (isinstance(init, cst.Call) and _is_attr(init.func, "list") and len(init.args) == 1 and req_msgs(init.args[0].value))
        or (isinstance(init, cst.Call) and isinstance(init.func, cst.Attribute) and req_msgs(init.func.value)
            and init.func.attr.value == "copy" and not init.args)
        or (isinstance(init, cst.List) and len(init.elements) == 1 and isinstance(init.elements[0], cst.StarredElement)
            and req_msgs(init.elements[0].value))
    ):
        _no(f"`{messages_var}` does not start as the request's messages")
    if not chat.args or not _is_attr(chat.args[0].value, messages_var):
        _no(f"ctx.chat() is not called with `{messages_var}`")
    result_var = None
    for node in _walk(run.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Await) and node.value.expression is chat \
                and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            result_var = node.targets[0].target.value
    if result_var is None:
        _no("the reply of ctx.chat() is not assigned to a variable")
    local_assigns = {}
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) \
                and len(s.body[0].targets) == 1 and isinstance(s.body[0].targets[0].target, cst.Name):
            local_assigns.setdefault(s.body[0].targets[0].target.value, []).append(s.body[0].value)

    def writes_of(name: str) -> int:
        return sum(1 for n in _walk(run.body) if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For))
                   and any(_is_attr(t, name) for t in _targets(n)))

    # the turn loop: `for … in range(<limit>)`, or no loop at all (one model call)
    loop = next((s for s in stmts if isinstance(s, cst.For) and any(n is chat for n in _walk(s))), None)
    dropped: list[str] = []
    if loop is None:
        if not any(isinstance(s, cst.SimpleStatementLine) and any(n is chat for n in _walk(s)) for s in stmts):
            _no("ctx.chat() is neither in a `for … in range(max_turns)` loop nor a statement of run()")
        max_turns, from_request = 1, False
    else:
        if not (isinstance(loop.iter, cst.Call) and _is_attr(loop.iter.func, "range") and len(loop.iter.args) == 1):
            _no("the ctx.chat turns are not a `for … in range(max_turns)` loop")
        limit = loop.iter.args[0].value
        if isinstance(limit, cst.Name) and len(local_assigns.get(limit.value, [])) == 1 and writes_of(limit.value) == 1:
            limit = local_assigns[limit.value][0]
        if isinstance(limit, cst.Attribute) and _is_attr(limit.value, self_name) and limit.attr.value in attrs:
            small = attrs[limit.attr.value].body[0]
            limit = small.value if small.value is not None else limit
        if is_ctx(limit, "request", "max_turns"):
            max_turns, from_request = 10, True  # the legacy RolloutRequest default
        elif isinstance(limit, cst.Integer):
            max_turns, from_request = int(limit.value), False
        else:
            _no(f"the turn limit `{_src(limit)}` is neither ctx.request.max_turns nor a number")
        # the loop may stop only where a Strands agent stops: a reply without tool calls (or the token budget)
        parents = _parents(loop)
        for node in _walk(loop.body):
            if not isinstance(node, (cst.Break, cst.Return, cst.Continue)):
                continue
            if isinstance(node, cst.Continue):
                _no("the turn loop uses `continue`")
            if isinstance(node, cst.Return) and not (isinstance(node.value, cst.Call) and node.value in completes):
                _no("the turn loop returns something other than ctx.complete(…)")
            up, child = parents.get(id(node)), node
            while up is not None and not isinstance(up, cst.If):
                up, child = parents.get(id(up)), up
            if up is None or child is up.orelse:
                _no("the turn loop stops without a condition")
            test = up.test
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and (
                _is_attr(test.expression, f"{result_var}.has_tool_calls") or _is_attr(test.expression, f"{result_var}.tool_calls")
            ):
                continue
            if any(is_ctx(n, "request", "max_tokens_total") for n in _walk(test)):
                if "the max_tokens_total budget" not in dropped:
                    dropped.append("the max_tokens_total budget")
                continue
            _no(f"the turn loop stops on `{_src(test)}`, where a Strands agent would go on")

    model_params: list[tuple[str, Any]] = []
    for arg in chat.args[1:]:
        if arg.star == "**" and is_ctx(arg.value, "request", "completion_params"):
            dropped.append("**ctx.request.completion_params (sampling params are the controller's)")
        elif arg.keyword is not None and not arg.star:
            model_params.append((arg.keyword.value, _literal(arg.value)))
        else:
            _no(f"ctx.chat() gets `{_src(arg)}`")

    # the reward: every exit passes the same one (or none)
    reward_args = [next((a.value for a in c.args if a.keyword and a.keyword.value == "reward"), None) for c in completes]
    for c in completes:
        if any(a.keyword is None for a in c.args[1:]):
            _no("ctx.complete() gets positional arguments after the messages")
    given = [r for r in reward_args if r is not None and not (isinstance(r, cst.Name) and r.value == "None")]
    reward: Optional[cst.BaseExpression] = None
    reward_note = None
    reward_stmt = None
    pre: list[cst.SimpleStatementLine] = []
    grader_members: list[cst.BaseStatement] = []
    metadata_nodes: list[cst.Attribute] = []
    if given:
        if len({_src(r, 10**6) for r in given}) != 1:
            _no("the exits of run() pass different rewards to ctx.complete()")
        reward = given[0]
        if len(given) != len(completes):
            reward_note = ("an exit of the legacy loop passed no reward (None: left to the platform); the grader gives "
                           "every rollout the reward of the other exit — check that this is what training wants")
    if reward is not None and isinstance(reward, cst.Name) and reward.value != messages_var and reward.value not in index.bound:
        assigns = [
            s for s in _walk(run.body)
            if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))
            and any(_is_attr(t, reward.value) for t in _targets(s))
        ]
        top = [s for s in stmts if isinstance(s, cst.SimpleStatementLine) and s.body[0] in assigns]
        if len(assigns) != 1 or len(top) != 1 or not isinstance(assigns[0], cst.Assign):
            _no(f"`{reward.value}` is not assigned once in run()")
        reward, reward_stmt = assigns[0].value, top[0]

    if reward is not None:
        # locals the reward reads, assigned once by a statement after the turn loop, move with it
        loop_at = stmts.index(loop) if loop is not None else 0
        moved_locals: set[str] = set()
        pending = [n.value for n in _free_names(reward)]
        while pending:
            v = pending.pop()
            if v in moved_locals or v in (messages_var, ctx, self_name) or v in index.bound or v in _BUILTINS:
                continue
            found = [
                s for s in stmts[loop_at + 1:]
                if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)
                and len(s.body[0].targets) == 1 and _is_attr(s.body[0].targets[0].target, v)
            ]
            if len(found) != 1 or writes_of(v) != 1:
                break  # reported by the name check below
            moved_locals.add(v)
            pre.append(found[0])
            pending.extend(n.value for n in _free_names(found[0].body[0].value))
        pre.sort(key=stmts.index)

        # names the reward may use: the messages, ctx.request.metadata, self.<helpers>, module names, builtins
        self_refs: set[str] = set()

        def check_reward_names(expr: cst.CSTNode) -> None:
            for node in _walk(expr):
                if isinstance(node, cst.Attribute) and is_ctx(node, "request", "metadata"):
                    metadata_nodes.append(node)
            for name in _free_names(expr):
                v = name.value
                if v == ctx:
                    if not any(_contains(m, name) for m in metadata_nodes):
                        _no("the reward reads `ctx` beyond ctx.request.metadata")
                elif v == self_name:
                    continue
                elif v == messages_var or v in moved_locals:
                    continue
                elif v in ("metadata", "messages", "sample", "sample_id") and v not in index.bound:
                    _no(f"the reward uses a local `{v}`")
                elif v not in index.bound and v not in _BUILTINS:
                    _no(f"the reward uses `{v}`, a local of run() the grader cannot see")
            for node in _walk(expr):
                if isinstance(node, cst.Attribute) and _is_attr(node.value, self_name):
                    self_refs.add(node.attr.value)
                elif isinstance(node, cst.Name) and node.value == self_name and not any(
                    isinstance(p, cst.Attribute) and p.value is node for p in _walk(expr)
                ):
                    _no("the reward passes `self` around")

        check_reward_names(reward)  # the exits pass the same expression; a local is resolved to its value
        for stmt in pre:
            check_reward_names(stmt.body[0].value)
        if "get_tools" in self_refs:
            _no("the reward calls self.get_tools()")
        grader_members = _members_closure(self_refs, methods, attrs, members, "the reward")
        _check_reward_reads_only_the_answer([reward, *pre, *grader_members], messages_var, index)

    # how the tools run: execute_tool_calls(<calls>, <executor>), or one call at a time in a `for` over the calls
    executor_expr: Optional[cst.BaseExpression] = None
    executor_calls: list[cst.Call] = []
    tool_result_vars: set[str] = set()
    sequential = False
    if batches:
        execute = batches[0]
        if loop is None or not any(n is execute for n in _walk(loop)):
            _no("execute_tool_calls() is not in the turn loop")
        if len(execute.args) != 2 or not _is_attr(execute.args[0].value, f"{result_var}.tool_calls"):
            _no("execute_tool_calls() does not get the reply's tool calls and an executor")
        executor_expr = execute.args[1].value
        executor_calls.append(execute)
        tool_result_vars |= {n.targets[0].target.value for n in _walk(loop) if isinstance(n, cst.Assign)
                             and isinstance(n.value, cst.Await) and n.value.expression is execute
                             and isinstance(n.targets[0].target, cst.Name)}
    elif loop is not None:
        fors = [n for n in _walk(loop.body) if isinstance(n, (cst.For, cst.CompFor))
                and _is_attr(n.iter, f"{result_var}.tool_calls")]
        if len(fors) > 1:
            _no("the turn loop goes over the tool calls more than once")
        if fors:
            per = fors[0]
            if not isinstance(per.target, cst.Name):
                _no("the loop over the tool calls does not bind one name")
            var = per.target.value
            scope_node = per if isinstance(per, cst.For) else next(
                n for n in _walk(loop) if isinstance(n, (cst.ListComp, cst.GeneratorExp)) and n.for_in is per)
            calls = [n for n in _walk(scope_node) if isinstance(n, cst.Call) and len(n.args) == 1
                     and _is_attr(n.args[0].value, var) and not n.args[0].keyword]
            if len(calls) != 1:
                _no("each tool call is not handed to exactly one executor")
            executor_expr = calls[0].func
            executor_calls.append(calls[0])
            sequential = True
            for n in _walk(loop):
                if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                    value = n.value.expression if isinstance(n.value, cst.Await) else n.value
                    if value is calls[0] or value is scope_node:
                        tool_result_vars.add(n.targets[0].target.value)
    executor = None
    executor_is_method = False
    if executor_expr is not None:
        if isinstance(executor_expr, cst.Name):
            executor = index.functions.get(executor_expr.value)
        elif isinstance(executor_expr, cst.Attribute) and _is_attr(executor_expr.value, self_name):
            executor = methods.get(executor_expr.attr.value)
            executor_is_method = True
        imported = isinstance(executor_expr, cst.Name) and executor_expr.value in table.names and executor is None
        if executor is None and not imported:
            _no(f"the tool executor `{_src(executor_expr)}` is not a function of the module or a method of the class")
        if executor is not None and (len(_params(executor)) != (2 if executor_is_method else 1)
                                     or executor.params.star_arg is not cst.MaybeSentinel.DEFAULT
                                     or executor.params.star_kwarg is not None or executor.params.kwonly_params):
            _no(f"the tool executor {executor.name.value}() does not take one tool call")

    # the tools: the documented shape gets decorated Strands tools; any other runs through the loop's own executor
    gt = _body_statements(get_tools)
    gt_params = _params(get_tools)
    if len(gt_params) > 1 and any(n.value == gt_params[1] for n in _free_names(get_tools.body)):
        _no("get_tools() reads the request")
    simple = len(gt) == 1 and isinstance(gt[0], cst.SimpleStatementLine) and isinstance(gt[0].body[0], cst.Return) \
        and gt[0].body[0].value is not None
    tools: list[ToolPlan] = []
    mode = "adapter"
    schemas_expr: Optional[str] = None
    workflow_members: list[cst.BaseStatement] = []
    if executor_expr is None:
        value = gt[0].body[0].value if simple else None
        if isinstance(value, cst.Name) and index.single_assign(value.value) is not None:
            value = index.single_assign(value.value)
        if not (isinstance(value, (cst.List, cst.Tuple)) and not value.elements) and not (
                isinstance(value, cst.Name) and value.value == "None"):
            _no("get_tools() offers tools the loop never runs (no execute_tool_calls() nor a loop over the tool calls)")
        mode = "none"
    else:
        try:
            if executor is None:
                _no("")  # imported from another module: it stays there and runs the calls
            if not simple or executor_is_method and any(
                    _is_attr(n, self_name) for n in _walk(executor.body) if isinstance(n, cst.Name)):
                _no("")
            schemas = _tool_schemas(gt[0].body[0].value, index, table)
            mapping = _executor_mapping(executor, index, table)
            names = [n for n, _, _ in schemas]
            if set(mapping) != set(names) or len(set(mapping.values())) != len(mapping):
                _no("")
            for name, desc, params_schema in schemas:
                fn = index.functions.get(mapping[name])
                if fn is None or fn.decorators or fn.params.star_kwarg is not None or (
                        fn.params.star_arg is not cst.MaybeSentinel.DEFAULT and not isinstance(fn.params.star_arg, cst.ParamStar)):
                    _no("")
                tools.append(ToolPlan(name, desc, params_schema, fn.name.value))
            mode = "decorate"
        except _Stop:
            tools = []
        if mode == "adapter":
            start: set[str] = set()
            value = gt[0].body[0].value if simple else None
            if value is not None and all(n.value in index.bound or n.value in _BUILTINS for n in _free_names(value)):
                schemas_expr = _code(value)
            else:
                start.add("get_tools")
                schemas_expr = "self.get_tools(None)"
            if executor_is_method:
                start.add(executor.name.value)
            workflow_members = _members_closure(start, methods, attrs, members, "the tool executor")
            clash = {n for n, m in members if m in workflow_members} & {"config", "run", "__init__", "name"}
            if clash:
                _no(f"the tool executor uses self.{sorted(clash)[0]}, which the AgentWorkflow base class owns")
        else:
            workflow_members = []
    if executor_is_method and mode == "decorate":
        pass  # the decorated tools replace the executor: nothing of the class moves

    # the message list only grows by the model's replies and the tool results (Strands does exactly that)
    for node in _walk(run.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and any(
            _is_attr(t, messages_var) or (isinstance(t, cst.Subscript) and _is_attr(t.value, messages_var))
            for t in _targets(node)
        ) and node.value is not init:
            _no(f"run() changes `{messages_var}` beyond appending replies and tool results")
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_attr(node.func.value, messages_var):
            arg = node.args[0].value if len(node.args) == 1 and not node.args[0].keyword else None
            inner = arg.expression if isinstance(arg, cst.Await) else arg
            ok = arg is not None and (
                (node.func.attr.value == "append" and (
                    _is_attr(arg, f"{result_var}.message") or (sequential and (
                        inner in executor_calls or (isinstance(arg, cst.Name) and arg.value in tool_result_vars)))))
                or (node.func.attr.value == "extend" and (
                    inner in executor_calls or (isinstance(arg, cst.Name) and arg.value in tool_result_vars)
                    or isinstance(inner, cst.ListComp) and inner.for_in.iter is not None
                    and _is_attr(inner.for_in.iter, f"{result_var}.tool_calls")))
            )
            if not ok:
                _no(f"run() adds `{_src(node)}` to the messages, which the Strands agent would not")

    # everything else run() does must be the loop's bookkeeping, or the rewrite would lose it
    reward_nodes = {id(n) for r in given for n in _walk(r)}
    reward_nodes |= {id(n) for n in _walk(reward_stmt)} if reward_stmt is not None else set()
    reward_nodes |= {id(n) for s in pre for n in _walk(s)}
    attr_heads = {id(n.value) for n in _walk(run.body) if isinstance(n, cst.Attribute)}
    allowed_self = {id(executor_expr.value)} if isinstance(executor_expr, cst.Attribute) else set()
    for node in _walk(run.body):
        if id(node) in reward_nodes:
            continue
        if isinstance(node, cst.Attribute) and _is_attr(node.value, ctx):
            if node.attr.value == "request":
                continue
            if node.attr.value not in ("chat", "complete", *_DROPPED_CTX):
                _no(f"run() uses ctx.{node.attr.value}")
            if node.attr.value in _DROPPED_CTX and f"ctx.{node.attr.value}" not in dropped:
                dropped.append(f"ctx.{node.attr.value}")
        elif isinstance(node, cst.Attribute) and is_ctx(node.value, "request"):
            if node.attr.value not in ("messages", "max_turns", "completion_params", "max_tokens_total"):
                _no(f"run() uses ctx.request.{node.attr.value} outside the reward")
            if node.attr.value == "max_tokens_total" and "the max_tokens_total budget" not in dropped:
                dropped.append("the max_tokens_total budget")
        elif isinstance(node, cst.Name) and node.value == ctx:
            if id(node) not in attr_heads:
                _no("run() passes ctx to other code")
        elif isinstance(node, cst.Name) and node.value == self_name:
            if id(node) in allowed_self:
                continue
            if loop is not None and any(n is node for n in _walk(loop.iter)):
                continue  # range(self.max_turns)
            _no("run() uses self beyond the reward and the executor")
        elif isinstance(node, cst.Call) and node is not chat and node not in completes and node not in executor_calls:
            func = node.func
            if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS and func.value not in index.bound:
                continue
            if isinstance(func, cst.Attribute):
                head = dotted_name(func)
                if head in ("time.monotonic", "time.time", "time.perf_counter") or is_ctx(func.value):
                    continue  # ctx.<method>: vetted by the attribute check
                if func.attr.value == "copy" and not node.args and is_ctx(func.value, "request", "messages"):
                    continue
                if isinstance(func.value, cst.Name) and func.value.value not in index.bound and func.value.value not in (
                    ctx, self_name) and func.attr.value in ("append", "extend", "get", "copy", "items", "keys", "values"):
                    continue
            _no(f"run() calls `{_src(func)}`, which the rewrite would drop")
        elif isinstance(node, (cst.Try, cst.With, cst.While, cst.Raise, cst.Yield)):
            _no(f"run() has a `{type(node).__name__.lower()}` the rewrite would drop")  # awaits: their calls are checked
    return LoopPlan(
        class_name=cls.name.value,
        loop_name=loop_name,
        tools=tools,
        max_turns=max_turns,
        max_turns_from_request=from_request,
        params=model_params,
        messages_var=messages_var,
        metadata_expr_nodes=metadata_nodes,
        reward=reward,
        reward_statements=pre,
        grader_members=grader_members,
        dropped=dropped,
        tool_mode=mode,
        schemas_expr=schemas_expr,
        executor=(_code(executor_expr) if executor_expr is not None and mode == "adapter" else None),
        workflow_members=workflow_members,
        sequential=sequential,
        reward_note=reward_note,
    )


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


_TRANSCRIPT_WORDS = {"tool", "user", "system", "tool_calls", "tool_call_id", "function"}


def _check_reward_reads_only_the_answer(code: list[cst.CSTNode], messages_var: str, index: ModuleIndex) -> None:
    """The grader hands the reward code the final answer only (a one-message list), so code that looks at other
    roles, tool calls or the length of the conversation must keep running in the loop: wrap it. Module-level
    functions the reward calls are followed (that is where the seed keeps such helpers)."""
    seen: set[str] = set()
    todo = list(code)
    while todo:
        node = todo.pop()
        for n in _walk(node):
            if isinstance(n, cst.SimpleString):
                try:
                    value = literal_eval(n.value)
                except (ValueError, SyntaxError):
                    continue
                if value in _TRANSCRIPT_WORDS:
                    _no(f"the reward reads more of the conversation than the final answer ({n.value})")
            elif isinstance(n, cst.Attribute) and n.attr.value == "tool_calls":
                _no("the reward reads the tool calls of the conversation")
            elif isinstance(n, cst.Call) and _is_attr(n.func, "len") and len(n.args) == 1:
                if isinstance(n.args[0].value, cst.Name) and n.args[0].value.value in (messages_var, "messages"):
                    _no("the reward depends on the length of the conversation")
            elif isinstance(n, cst.Name) and n.value in index.functions and n.value not in seen:
                seen.add(n.value)
                todo.append(index.functions[n.value])


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target]


def _contains(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in _walk(tree))
