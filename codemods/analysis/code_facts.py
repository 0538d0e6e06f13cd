"""Read-only questions about pieces of code the planner asks: who calls a name and how, what an expression reads,
where an input comes from (handler arguments, argparse options), what a statement does at process level."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods.analysis.body import Process, body_facts, code, names_in
from codemods.analysis.module import assigned_name
from codemods.base import literal_eval
from codemods.syntax import block_statements
from codemods.visit import visit as fast_visit

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel
    from codemods.framework import Framework


_IMAGE_KEYS = ("input_image", "input_file", "image_url", "input_audio", "image", "document", "file_data", "file_id")


class IndirectInputs(cst.CSTVisitor):
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




def calls_only(stmt: cst.CSTNode, name: str) -> bool:
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


def calls_of(node: cst.CSTNode, name: str) -> list[cst.Call]:
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


def interactive_calls(model: ModuleModel, fw: "Framework", name: str) -> list[Process]:
    """The interactive and process-level calls of the top-level function ``name`` (what
    :func:`interactive_function` words), in order; empty for a function that runs agents or has none."""
    i = model.functions.get(name)
    if i is None or name in model.helpers or name in model.runners or not interactive_function(model, fw, name):
        return []
    func = model.body[i]
    assert isinstance(func, cst.FunctionDef)
    return body_facts(list(block_statements(func.body)), fw, set()).process


def interactive_function(model: ModuleModel, fw: "Framework", name: str) -> str:
    """Why the top-level function ``name`` must not run inside a rollout (it reads input, exits, sleeps…), or ""."""
    cache = model.interactive
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
    facts = body_facts(list(block_statements(func.body)), fw, set())
    if facts.process:
        x = facts.process[0]
        cache[name] = _PROCESS_WHAT.get(x.kind, "{}").format(x.what)
    return cache[name]


def is_expr_stmt_of(stmt: cst.CSTNode, call: cst.Call) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Expr) and small.value is call for small in stmt.body
    )


def self_assignments(method: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
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


def builds_agent(method: cst.FunctionDef, fw: "Framework") -> bool:
    visitor = AgentCtorFinder(fw)
    fast_visit(method.body, visitor)
    return visitor.found


class AgentCtorFinder(cst.CSTVisitor):
    """Whether the code calls an agent constructor of ``fw`` (``found``)."""

    def __init__(self, fw: "Framework") -> None:
        super().__init__()
        self.fw = fw
        self.found = False

    def visit_Call(self, n: cst.Call) -> None:
        if self.fw.is_agent_ctor(n):
            self.found = True


def describe_stmt(stmt: cst.CSTNode) -> str:
    if isinstance(stmt, cst.FunctionDef):
        return f"`{stmt.name.value}`"
    if isinstance(stmt, cst.ClassDef):
        return f"class `{stmt.name.value}`"
    return f"`{code(stmt, 40)}`"


def subexpr_codes(node: cst.CSTNode) -> list[str]:
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


def text_of(expr: cst.BaseExpression, access: cst.BaseExpression) -> bool:
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


def access_around(root: cst.CSTNode, name: cst.Name) -> Optional[cst.BaseExpression]:
    """The longest access chain rooted at ``name`` under ``root``: ``name.x``, ``name["k"]``,
    ``name.get("k"[, default])`` and chains of them (``request.input.get("prompt", "")``,
    ``event["body"]["message"]``); None when ``name`` is used on its own or only through ``.get`` without a key."""
    visitor = _AccessAround(name)
    fast_visit(root, visitor)
    res = visitor.found
    if res is None or (isinstance(res, cst.Attribute) and res.attr.value == "get"):
        return None
    return res


def _is_access_chain(expr: cst.CSTNode, name: cst.Name) -> bool:
    """``expr`` reads a part of ``name`` by attribute, literal key or ``.get(literal[, default])`` (any depth)."""
    while expr is not name:
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
                and isinstance(expr.slice[0].slice.value, (cst.SimpleString, cst.Integer)):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
                and 1 <= len(expr.args) <= 2 and isinstance(expr.args[0].value, cst.SimpleString):
            expr = expr.func.value
        else:
            return False
    return True


class _AccessAround(cst.CSTVisitor):
    """The outermost access chain rooted at the node ``name`` (by identity): met first in preorder (``found``)."""

    def __init__(self, name: cst.Name) -> None:
        super().__init__()
        self.name = name
        self.found: Optional[cst.BaseExpression] = None

    def _check(self, n: cst.BaseExpression) -> bool:
        if self.found is None and _is_access_chain(n, self.name):
            self.found = n
            return False
        return self.found is None

    def visit_Call(self, n: cst.Call) -> bool:
        return self._check(n)

    def visit_Subscript(self, n: cst.Subscript) -> bool:
        return self._check(n)

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        return self._check(n)


def attributes_of(stmt: cst.CSTNode, var: str) -> list[str]:
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


def attribute_nodes(stmts: Sequence[cst.CSTNode], var: Optional[str], attr: str) -> list[cst.Attribute]:
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


def is_parser_stmt(stmt: cst.CSTNode, args_var: Optional[str]) -> bool:
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
    if args_var is not None and assigned_name(stmt) == args_var and "parse_" in text:
        return True
    return False


def argparse_defaults(stmts: Sequence[cst.CSTNode]) -> dict[str, Optional[cst.BaseExpression]]:
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


def media_key(expr: cst.BaseExpression) -> Optional[str]:
    """The first media part type in a literal input (``input_image`` …), if any."""
    text = code(expr, 100_000)
    for key in _IMAGE_KEYS:
        if f'"{key}"' in text or f"'{key}'" in text:
            return key
    return None


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


def is_output_stmt(stmt: cst.CSTNode) -> bool:
    """``stmt`` only prints or logs: ``print(...)`` or ``<logger>.info(...)`` (any level) as a statement line."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    if not isinstance(call, cst.Call):
        return False
    f = call.func
    return (isinstance(f, cst.Name) and f.value == "print") or (
        isinstance(f, cst.Attribute) and f.attr.value in _LOG_METHODS)


def statements_reading(stmts: Sequence[cst.CSTNode], name: str) -> list[cst.SimpleStatementLine]:
    """The statement lines under ``stmts`` (nested blocks too, not nested functions) that read ``name``."""
    out: list[cst.SimpleStatementLine] = []
    for s in stmts:
        fast_visit(s, _LinesReading(name, out))
    return out


class _LinesReading(cst.CSTVisitor):
    def __init__(self, name: str, out: list[cst.SimpleStatementLine]) -> None:
        super().__init__()
        self.name = name
        self.out = out

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
        if any(x.value == self.name for x in names_in(n)):
            self.out.append(n)
        return False


def yield_lines(stmts: Sequence[cst.CSTNode]) -> list[cst.SimpleStatementLine]:
    """The statement lines ``yield x`` under ``stmts`` (nested blocks too, not nested functions)."""
    out: list[cst.SimpleStatementLine] = []
    for s in stmts:
        fast_visit(s, _YieldLines(out))
    return out


class _YieldLines(cst.CSTVisitor):
    def __init__(self, out: list[cst.SimpleStatementLine]) -> None:
        super().__init__()
        self.out = out

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False

    def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
        if len(n.body) == 1 and isinstance(n.body[0], cst.Expr) and isinstance(n.body[0].value, cst.Yield):
            self.out.append(n)
        return False


def called_once(stmts: Sequence[cst.CSTNode], name: str) -> bool:
    """``name(...)`` is called exactly once under ``stmts``, outside loops, comprehensions and nested functions: what
    it builds is built once per run of the block."""
    calls, repeated = call_sites(stmts, name)
    return calls == 1 and not repeated


def call_sites(stmts: Sequence[cst.CSTNode], name: str) -> tuple[int, bool]:
    """How many calls ``name(...)`` under ``stmts`` has (``name`` may be ``obj.method``), and whether one is in a loop,
    a comprehension or a nested function (it may run more than once)."""
    v = _CallSites(name)
    for s in stmts:
        fast_visit(s, v)
    return v.calls, v.repeated


class _CallSites(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.depth = 0  # loops, comprehensions, nested functions around the current node
        self.calls = 0
        self.repeated = False

    def _enter(self, _: cst.CSTNode) -> None:
        self.depth += 1

    def _leave(self, _: cst.CSTNode) -> None:
        self.depth -= 1

    visit_For = visit_While = visit_FunctionDef = visit_Lambda = visit_ListComp = visit_SetComp = _enter
    visit_DictComp = visit_GeneratorExp = _enter
    leave_For = leave_While = leave_FunctionDef = leave_Lambda = leave_ListComp = leave_SetComp = _leave
    leave_DictComp = leave_GeneratorExp = _leave

    def visit_Call(self, n: cst.Call) -> None:
        f = n.func
        if (isinstance(f, cst.Name) and f.value == self.name) or (
                isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)
                and f"{f.value.value}.{f.attr.value}" == self.name):
            self.calls += 1
            self.repeated = self.repeated or self.depth > 0


def generator_uses(stmts: Sequence[cst.CSTNode], name: str) -> tuple[int, list[tuple[cst.SimpleStatementLine, cst.Call]]]:
    """How the generator function ``name`` is used under ``stmts`` (not in nested functions): the number of its calls
    that are not iterated (``for x in name(...)`` / ``async for`` are), and the lines among those whose only effect is
    handing the generator to a response (``return StreamingResponse(name(q), ...)``, ``return name(q)``): a client
    would have iterated it there."""
    v = _GeneratorUses(name)
    for s in stmts:
        fast_visit(s, v)
    return v.calls - v.iterated, v.handed


class _GeneratorUses(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.calls = 0
        self.iterated = 0
        self.handed: list[tuple[cst.SimpleStatementLine, cst.Call]] = []

    def _is_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == self.name

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_For(self, n: cst.For) -> None:
        if self._is_call(n.iter):
            self.iterated += 1

    def visit_Call(self, n: cst.Call) -> None:
        if self._is_call(n):
            self.calls += 1

    def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
        if len(n.body) != 1 or not isinstance(n.body[0], (cst.Return, cst.Expr)):
            return
        value = n.body[0].value
        if value is None:
            return
        if self._is_call(value):
            self.handed.append((n, value))
        elif isinstance(value, cst.Call):
            inner = [a.value for a in value.args if self._is_call(a.value)]
            if len(inner) == 1 and not any(isinstance(x, cst.Call) for a in value.args if a.value is not inner[0]
                                           for x in [a.value]):
                self.handed.append((n, inner[0]))


_MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove", "add",
                       "discard"})


def stateful_uses(stmts: Sequence[cst.CSTNode]) -> dict[str, str]:
    """Names under ``stmts`` (not in nested functions) used as state: entered as a context manager (``with client:``)
    or changed in place (``history.append(x)``, ``cache[k] = v``) → how (human words)."""
    v = _StatefulUses()
    for s in stmts:
        fast_visit(s, v)
    return v.out


class _StatefulUses(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.out: dict[str, str] = {}

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        return False

    def visit_WithItem(self, n: cst.WithItem) -> None:
        if isinstance(n.item, cst.Name):
            self.out.setdefault(n.item.value, f"entered with `with {n.item.value}:`")

    def visit_Call(self, n: cst.Call) -> None:
        f = n.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in _MUTATORS:
            self.out.setdefault(f.value.value, f"changed in place (`{f.value.value}.{f.attr.value}(...)`)")

    def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
        t = n.target
        if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name):
            self.out.setdefault(t.value.value, f"changed in place (`{t.value.value}[...] = ...`)")
