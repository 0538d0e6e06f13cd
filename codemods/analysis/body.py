"""Facts about one block of code that runs agents (a function body, module-level script code, a ``__main__`` block).

:func:`body_facts` walks the statements once and records what the plan needs: every name stored and loaded, every
agent built (``Agent(...)``) and every run site (as the framework :class:`Dialect` recognises them), with their
context — in a loop, inside ``gather``, inside a nested ``def``, awaited or not — plus the interactive and
process-level code the block contains (``input()``, ``exit()``, argparse, ``time.sleep``, servers, ``while True``).
Nested ``def``/``class``/``lambda`` bodies are looked into only to find agents and run sites (they are reported as
nested); their names do not count as the block's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence

import libcst as cst

from codemods.base import ImportTable, dotted_name
from codemods.visit import visit as fast_visit

# ------------------------------------------------------------------------------------------------ the dialect


@dataclass
class RunShape:
    """How a framework runs an agent at one call: what the analysis needs to know about the call."""

    agent: cst.BaseExpression  # the agent (or Swarm/Graph) the call runs
    method: str  # "call", "invoke_async", "stream_async", "structured_output", "run", "run_sync", "run_streamed", …
    input_arg: Optional[cst.Arg]  # the argument that carries the input (None: none given)
    session: Optional[cst.BaseExpression] = None  # an explicit ``session=`` (OpenAI Agents)
    run_config: Optional[cst.BaseExpression] = None  # an explicit ``run_config=`` (OpenAI Agents)
    is_async_call: bool = False  # returns an awaitable (``invoke_async``, ``Runner.run``)
    is_stream: bool = False  # returns an async iterator / streaming result (not awaited)


class Dialect(Protocol):
    """What :func:`body_facts` asks the framework."""

    table: ImportTable

    def is_agent_ctor(self, call: cst.Call) -> bool: ...

    def is_group_ctor(self, call: cst.Call) -> bool: ...

    def is_osmosis_agent_ctor(self, call: cst.Call) -> bool: ...

    def run_shape(self, call: cst.Call, agents: set[str]) -> Optional[RunShape]: ...


# ------------------------------------------------------------------------------------------------ facts


@dataclass
class Ctor:
    """An agent built in the block: ``var = Agent(...)`` (``var`` None when not bound to a plain name)."""

    call: cst.Call
    var: Optional[str]
    stmt: cst.CSTNode
    top: cst.CSTNode
    in_loop: bool
    nested: Optional[str]  # name of the nested def it is built in, if any


@dataclass
class RunSite:
    """One run of an agent in the block."""

    call: cst.Call
    shape: RunShape
    agent: Optional[str]  # the agent variable (None when the agent is not a plain name)
    stmt: cst.CSTNode  # innermost statement containing the call
    top: cst.CSTNode  # statement of the block's top level containing it
    awaited: bool  # the call is the operand of ``await``
    in_loop: str  # "" or the kind of the innermost loop around it ("for", "while True", "comprehension", …)
    in_gather: bool  # an argument of gather/create_task/wait/as_completed (an awaitable kept for concurrency)
    in_asyncio_run: bool  # the argument of ``asyncio.run(...)`` (in run() it is simply awaited)
    nested: Optional[str]  # the nested def it is in, if any
    nested_async: bool
    in_lambda: bool
    order: int
    input_kind: str = ""  # set by the planner (see codemods.analysis.program)


@dataclass
class Assign:
    """``name = value`` (or an augmented / annotated / for / with target) in the block."""

    name: str
    value: Optional[cst.BaseExpression]  # None for targets without one expression (for, with, tuple unpacking)
    stmt: cst.CSTNode
    top: cst.CSTNode
    in_loop: bool
    nested: Optional[str]
    simple: bool  # a plain ``name = value`` statement line (one target, one statement on the line)


@dataclass
class Process:
    """Interactive or process-level code: it must not move into ``AgentWorkflow.run()``."""

    node: cst.CSTNode
    stmt: cst.CSTNode
    top: cst.CSTNode
    what: str  # human wording, e.g. "`input()`"
    kind: str  # "input", "exit", "argparse", "argv", "sleep", "server", "repl", "confirm"
    in_loop: bool
    nested: Optional[str] = None
    # a confirmation's declared answer when no one is there (``default=True``), if it is a plain literal
    default: Optional[cst.BaseExpression] = None


@dataclass
class BodyFacts:
    """Everything :func:`body_facts` found in one block."""

    stores: dict[str, list[Assign]] = field(default_factory=dict)
    loads: dict[str, list[cst.Name]] = field(default_factory=dict)
    ctors: list[Ctor] = field(default_factory=list)
    runs: list[RunSite] = field(default_factory=list)
    process: list[Process] = field(default_factory=list)
    exits: list[tuple[cst.Call, cst.CSTNode, bool]] = field(default_factory=list)  # (call, stmt, becomes `return`)
    yields: list[cst.Yield] = field(default_factory=list)  # ``yield`` expressions of the block itself
    nested_defs: dict[str, cst.FunctionDef] = field(default_factory=dict)
    globals_declared: set[str] = field(default_factory=set)
    parents: dict[int, cst.CSTNode] = field(default_factory=dict)  # id(expression) → parent, inside run inputs
    foreign: list[tuple[cst.Call, str]] = field(default_factory=list)  # other agent classes built (SandboxAgent…)

    def load_count(self, name: str) -> int:
        return len(self.loads.get(name, ()))


_GATHER = {"asyncio.gather", "asyncio.create_task", "asyncio.wait", "asyncio.as_completed", "asyncio.ensure_future",
           "asyncio.wait_for", "asyncio.shield", "asyncio.TaskGroup.create_task"}
_SLEEP = {"time.sleep"}
_EXIT = {"sys.exit", "os._exit"}
_SERVERS = {"uvicorn.run", "hypercorn.run", "waitress.serve", "gunicorn.run", "socketserver.serve_forever"}
_ARGPARSE = {"argparse.ArgumentParser", "argparse"}
_UI_READS = {"chat_input", "text_input", "text_area"}  # Streamlit widgets a page reads its prompt from
_INTERACTIVE_NAMES = {"input", "raw_input", "getpass", "confirm", "ask", "prompt"}


_INTERACTIVE_RE = re.compile(r"^(input_\w+|\w+_input|get_input|ask_user\w*|prompt_user\w*|confirm\w*|\w+_confirm)$")
_INTERACTIVE_MODULES = ("click.", "typer.", "rich.prompt.", "questionary.", "inquirer.", "prompt_toolkit.")


def declared_default(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The literal a prompt call declares as its answer when nobody answers (``default=True``, ``fallback="n"``;
    click, typer, rich and questionary all spell it so), or None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("default", "fallback"):
            value = arg.value
            if isinstance(value, cst.Name) and value.value in ("True", "False", "None") \
                    or isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)):
                return value
    return None


def _is_interactive_func(name: str, source: str = "") -> bool:
    """``input``, ``input_with_fallback``, ``get_user_input``, ``Prompt.ask``, ``click.prompt``, ``confirm``…
    (``name``: the resolved name; ``source``: the callee as written)."""
    last = name.rsplit(".", 1)[-1]
    if name in ("input", "raw_input", "getpass", "getpass.getpass"):
        return True
    if name.startswith(_INTERACTIVE_MODULES) and last in ("prompt", "ask", "confirm", "text", "select"):
        return True
    if "." in (source or name):
        return False  # a method of some object (`result.to_input_list()`): not a read from the user
    return bool(_INTERACTIVE_RE.match(last))


class _Walker(cst.CSTVisitor):
    def __init__(self, dialect: Dialect, facts: BodyFacts, agents: set[str], producers: Sequence[str] = ()) -> None:
        self.d = dialect
        self.producers = set(producers)
        self.f = facts
        self.agents = agents  # names bound to agents (module-level ones passed in, local ones added as found)
        self.stmt_stack: list[cst.CSTNode] = []
        self.loop_stack: list[str] = []
        self.nested_stack: list[tuple[str, bool]] = []  # (name, async)
        self.lambda_depth = 0
        self.await_operands: set[int] = set()
        self.gather_args: set[int] = set()
        self.asyncio_run_args: set[int] = set()
        self.store_ids: set[int] = set()
        self.attr_ids: set[int] = set()
        self.order = 0
        self._hooks = self._HOOKS.setdefault(type(self), {})

    # -- context
    @property
    def stmt(self) -> cst.CSTNode:
        return self.stmt_stack[-1]

    @property
    def top(self) -> cst.CSTNode:
        return self.stmt_stack[0]

    @property
    def nested(self) -> Optional[str]:
        return self.nested_stack[-1][0] if self.nested_stack else None

    # per walker class, node type → (is a statement, visit_<Node>, leave_<Node>): what CSTVisitor.on_visit/on_leave
    # look up by name on every node, looked up once per type (this walk visits every node of every driver)
    _HOOKS: dict[type, dict[type, tuple[bool, object, object]]] = {}
    # on_visit/on_leave below do nothing on a whitespace node but call its hooks: codemods.visit skips those subtrees
    # (unless a subclass hooks a whitespace type)
    skip_whitespace = True

    def _hooks_of(self, kind: type) -> tuple[bool, object, object]:
        hooks = self._hooks.get(kind)
        if hooks is None:
            hooks = self._hooks[kind] = (
                issubclass(kind, (cst.SimpleStatementLine, cst.BaseCompoundStatement)),
                getattr(type(self), f"visit_{kind.__name__}", None),
                getattr(type(self), f"leave_{kind.__name__}", None),
            )
        return hooks

    def on_visit(self, node: cst.CSTNode) -> bool:
        is_stmt, enter, _ = self._hooks_of(type(node))
        if is_stmt:
            self.stmt_stack.append(node)
        return enter is None or enter(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        is_stmt, _, leave = self._hooks_of(type(original_node))
        if leave is not None:
            leave(self, original_node)
        if is_stmt:
            self.stmt_stack.pop()

    # -- scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if not self.nested_stack:
            self.f.nested_defs[node.name.value] = node
        self._store(node.name.value, None, simple=False)
        self.nested_stack.append((node.name.value, node.asynchronous is not None))
        for p in (*node.params.params, *node.params.posonly_params, *node.params.kwonly_params):
            if p.default is not None:
                fast_visit(p.default, self)
        for deco in node.decorators:
            fast_visit(deco, self)
        fast_visit(node.body, self)
        self.nested_stack.pop()
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._store(node.name.value, None, simple=False)
        self.nested_stack.append((node.name.value, False))
        fast_visit(node.body, self)
        self.nested_stack.pop()
        return False

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.lambda_depth += 1

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.lambda_depth -= 1

    def visit_Global(self, node: cst.Global) -> None:
        self.f.globals_declared.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.f.globals_declared.update(n.name.value for n in node.names)

    # -- loops
    def visit_For(self, node: cst.For) -> bool:
        self._targets(node.target, None)
        fast_visit(node.iter, self)
        self.loop_stack.append("async for" if node.asynchronous else "for")
        fast_visit(node.body, self)
        self.loop_stack.pop()
        if node.orelse is not None:
            fast_visit(node.orelse, self)
        return False

    def visit_While(self, node: cst.While) -> bool:
        fast_visit(node.test, self)
        kind = "while True" if isinstance(node.test, cst.Name) and node.test.value == "True" else "while"
        self.loop_stack.append(kind)
        fast_visit(node.body, self)
        self.loop_stack.pop()
        if node.orelse is not None:
            fast_visit(node.orelse, self)
        return False

    def _comp(self, node) -> bool:
        self.loop_stack.append("comprehension")
        for f in _comp_fors(node.for_in):
            self._targets(f.target, None)
        return True

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comp(node)

    def leave_ListComp(self, node: cst.ListComp) -> None:
        self.loop_stack.pop()

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comp(node)

    def leave_SetComp(self, node: cst.SetComp) -> None:
        self.loop_stack.pop()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comp(node)

    def leave_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self.loop_stack.pop()

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comp(node)

    def leave_DictComp(self, node: cst.DictComp) -> None:
        self.loop_stack.pop()

    # -- names
    def _store(self, name: str, value: Optional[cst.BaseExpression], simple: bool) -> None:
        if self.nested_stack:
            return
        self.f.stores.setdefault(name, []).append(Assign(
            name, value, self.stmt, self.top, bool(self.loop_stack), self.nested, simple))

    def _targets(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], simple: bool = False) -> None:
        if isinstance(target, cst.Name):
            self.store_ids.add(id(target))
            self._store(target.value, value, simple)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._targets(el.value, None)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        simple = (
            len(node.targets) == 1
            and isinstance(self.stmt, cst.SimpleStatementLine)
            and len(self.stmt.body) == 1
        )
        for t in node.targets:
            self._targets(t.target, node.value, simple)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and self._agent_valued(node.value):
            self.agents.add(node.targets[0].target.value)
        if len(node.targets) == 1 and _self_attr(node.targets[0].target) and self._agent_valued(node.value):
            self.agents.add(_self_attr(node.targets[0].target))

    def _agent_valued(self, value: cst.BaseExpression) -> bool:
        """An agent: built here, got from a factory of the module, an alias, or the agent a run ended with."""
        if isinstance(value, cst.Await) and isinstance(value.expression, cst.Call) \
                and isinstance(value.expression.func, cst.Name) and value.expression.func.value in self.producers:
            return True  # an async factory's agent
        if isinstance(value, cst.Call):
            if self.d.is_agent_ctor(value) or self.d.is_group_ctor(value) or self.d.is_osmosis_agent_ctor(value):
                return True  # an Osmosis agent (migrated already) is an agent too: its runs are runs
            return isinstance(value.func, cst.Name) and value.func.value in self.producers
        if isinstance(value, cst.Name):
            return value.value in self.agents
        return isinstance(value, cst.Attribute) and value.attr.value in ("last_agent", "current_agent")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._targets(node.target, node.value, isinstance(self.stmt, cst.SimpleStatementLine) and len(self.stmt.body) == 1)
            if isinstance(node.target, cst.Name) and self._agent_valued(node.value):
                self.agents.add(node.target.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            # an augmented target is read and written
            self._store(node.target.value, None, False)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._targets(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target, node.value)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.store_ids.add(id(node.name.name))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attr_ids.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.attr_ids.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.attr_ids.add(id(node.name))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.store_ids or id(node) in self.attr_ids:
            return
        self.f.loads.setdefault(node.value, []).append(node)

    # -- expressions
    def visit_Yield(self, node: cst.Yield) -> None:
        if not self.nested_stack:
            self.f.yields.append(node)

    def visit_Await(self, node: cst.Await) -> None:
        self.await_operands.add(id(node.expression))

    def visit_Call(self, node: cst.Call) -> None:
        resolved = self.d.table.resolve(node.func)
        func_name = dotted_name(node.func) or ""
        if resolved in _GATHER or func_name in ("asyncio.gather", "gather", "create_task", "tg.create_task") or (
            isinstance(node.func, cst.Attribute) and node.func.attr.value == "create_task"
        ):
            for a in node.args:
                self.gather_args.add(id(a.value))
        root = (resolved or "").split(".", 1)[0]
        if resolved and root in ("agents", "strands") and resolved.rsplit(".", 1)[-1].endswith("Agent") \
                and not self.d.is_agent_ctor(node) and not resolved.rsplit(".", 1)[-1].startswith("Osmosis"):
            self.f.foreign.append((node, resolved))  # SandboxAgent, RealtimeAgent…: not the class migrated
        if resolved == "asyncio.run" and len(node.args) == 1:
            self.asyncio_run_args.add(id(node.args[0].value))
        self._process(node, resolved, func_name)
        if self.d.is_agent_ctor(node):
            var = None
            stmt = self.stmt
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                small = stmt.body[0]
                if isinstance(small, cst.Assign) and small.value is node and len(small.targets) == 1:
                    t = small.targets[0].target
                    var = t.value if isinstance(t, cst.Name) else _self_attr(t)
                elif isinstance(small, cst.AnnAssign) and small.value is node and isinstance(small.target, cst.Name):
                    var = small.target.value
            self.f.ctors.append(Ctor(node, var, self.stmt, self.top, bool(self.loop_stack), self.nested))
        shape = self.d.run_shape(node, self.agents)
        if shape is not None:
            agent = shape.agent.value if isinstance(shape.agent, cst.Name) else None
            if agent is None and isinstance(shape.agent, cst.Attribute) and isinstance(shape.agent.value, cst.Name) \
                    and shape.agent.value.value == "self":
                agent = f"self.{shape.agent.attr.value}"  # an agent kept on the object (`self.agent`)
            self.order += 1
            self.f.runs.append(RunSite(
                call=node, shape=shape, agent=agent, stmt=self.stmt, top=self.top,
                awaited=id(node) in self.await_operands,
                in_loop=self.loop_stack[-1] if self.loop_stack else "",
                in_gather=id(node) in self.gather_args,
                in_asyncio_run=id(node) in self.asyncio_run_args,
                nested=self.nested,
                nested_async=bool(self.nested_stack and self.nested_stack[-1][1]),
                in_lambda=self.lambda_depth > 0,
                order=self.order,
            ))

    def _process(self, node: cst.Call, resolved: Optional[str], func_name: str) -> None:
        name = resolved or func_name
        in_loop = bool(self.loop_stack)
        if not name:
            return
        last = name.rsplit(".", 1)[-1]
        if _is_interactive_func(name, func_name):
            kind = "confirm" if "confirm" in last.lower() else "input"
            self.f.process.append(Process(node, self.stmt, self.top, f"`{func_name or name}()`", kind, in_loop,
                                          self.nested, declared_default(node) if kind == "confirm" else None))
        elif name in ("exit", "quit") or name in _EXIT:
            zero = not node.args or (
                len(node.args) == 1 and isinstance(node.args[0].value, (cst.Integer, cst.Name))
                and getattr(node.args[0].value, "value", "") in ("0", "None")
            )
            if not self.nested_stack:
                self.f.exits.append((node, self.stmt, zero))
            if not zero or self.nested_stack:
                self.f.process.append(Process(node, self.stmt, self.top, f"`{func_name or name}(...)`", "exit", in_loop, self.nested))
        elif name in _SLEEP:
            self.f.process.append(Process(node, self.stmt, self.top, f"`{func_name}()`", "sleep", in_loop, self.nested))
        elif name in _SERVERS or (last in ("serve_forever", "run_forever", "run_polling")) or (
            last == "run" and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
            and node.func.value.value in ("app", "application", "server", "bot", "demo", "ui", "iface")
        ) or last == "launch" and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) and node.func.value.value in ("demo", "ui", "iface", "app") \
                or name.startswith("streamlit.") and last in _UI_READS:  # a UI's widget gives the input: it is a UI
            self.f.process.append(Process(node, self.stmt, self.top, f"`{func_name}()`", "server", in_loop, self.nested))
        elif name.startswith("argparse.") or last in ("parse_args", "parse_known_args"):
            self.f.process.append(Process(node, self.stmt, self.top, f"`{func_name}()`", "argparse", in_loop, self.nested))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if (self.d.table.resolve(node.value) or dotted_name(node.value)) == "sys.argv":
            self.f.process.append(Process(node, self.stmt, self.top, "`sys.argv`", "argv", bool(self.loop_stack), self.nested))


def _self_attr(target: cst.BaseExpression) -> Optional[str]:
    """``"self.x"`` for a ``self.x`` target, else None."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return f"self.{target.attr.value}"
    return None


def _comp_fors(for_in: cst.CompFor) -> list[cst.CompFor]:
    out = []
    node: Optional[cst.CompFor] = for_in
    while node is not None:
        out.append(node)
        node = node.inner_for_in
    return out


def body_facts(stmts: Sequence[cst.CSTNode], dialect: Dialect, agents: set[str],
               producers: Sequence[str] = ()) -> BodyFacts:
    """Walk ``stmts`` once (see the module docstring). ``agents``: names already known to hold agents (module-level
    agents the block uses); agents built in the block (or got from a ``producers`` factory, or aliases) are added as
    they are found, in program order."""
    facts = BodyFacts()
    walker = _Walker(dialect, facts, set(agents), producers)
    for stmt in stmts:
        fast_visit(stmt, walker)
    # `sys.argv` loads are also plain Name loads of `sys`: nothing else to fix up
    return facts


# ------------------------------------------------------------------------------------------------ expressions


class NameReferences(cst.CSTVisitor):
    """Visits the names used as references: not attribute names after a dot, not keyword names."""

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        fast_visit(n.value, self)
        return False

    def visit_Arg(self, n: cst.Arg) -> bool:
        fast_visit(n.value, self)
        return False


def names_in(node: cst.CSTNode) -> list[cst.Name]:
    """Name references under ``node`` (not attribute names after a dot, not keyword names)."""
    out: list[cst.Name] = []
    fast_visit(node, _NameCollector(out))
    return out


class _NameCollector(NameReferences):
    """Appends every name reference it meets to ``out`` (for :func:`names_in`)."""

    def __init__(self, out: list[cst.Name]) -> None:
        super().__init__()
        self.out = out

    def visit_Name(self, n: cst.Name) -> None:
        self.out.append(n)


def contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Whether ``target`` (by identity) is ``node`` or under it."""
    finder = _NodeFinder(target)
    fast_visit(node, finder)
    return finder.found


class _NodeFinder(cst.CSTVisitor):
    """Sets ``found`` on meeting ``target`` (by identity), then descends no further (for :func:`contains`)."""

    def __init__(self, target: cst.CSTNode) -> None:
        super().__init__()
        self.target = target
        self.found = False

    def on_visit(self, n: cst.CSTNode) -> bool:
        if n is self.target:
            self.found = True
        return not self.found


def is_string(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(expr, cst.FormattedString) and not any(isinstance(p, cst.FormattedStringExpression) for p in expr.parts)
    )


def code(node: cst.CSTNode, limit: int = 60) -> str:
    """Source text of ``node`` on one line, shortened to ``limit`` characters (for messages)."""
    if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and node.leading_lines:
        node = node.with_changes(leading_lines=[])  # a statement without the comment lines above it
    if isinstance(node, cst.SimpleStatementLine) and node.trailing_whitespace.comment is not None:
        node = node.with_changes(trailing_whitespace=cst.TrailingWhitespace())
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
