"""A conversation loop becomes one turn: a rollout is one conversation from ``ctx.prompt``.

Programs written for people loop: a REPL (``while True: q = input(); if q == "exit": break; agent(q)``), a chat
loop that reads the next message at the end of each pass, or a batch over literal questions (``for q in
QUESTIONS: agent(q)``). A rollout serves one prompt, so the driver's ``run()`` keeps **one pass** of the loop:

* the statements of the pass up to where the next turn starts (the first interactive read after a run) — the
  statements that only prepare the next turn go;
* the checks that only end or skip the loop (``if q.lower() in ("exit", "quit"): print(…); break``,
  ``if not q: continue``) go, keeping an ``else`` branch; any other ``break`` / ``continue`` of the loop ends the
  turn (``return``);
* a ``try`` around the pass whose handlers only report and end the loop (``except KeyboardInterrupt: break``,
  ``except Exception as e: print(e)``) is unwrapped: in a rollout an error fails the rollout instead of being
  printed and lost;
* a batch's loop variable is read once, as the loop's read of the turn's input (the prompt then takes its place).

The unrolled statements reuse the loop's own nodes wherever nothing changes, so the plans made on them key the
same nodes the emitter sees. This module decides and builds the statement list; the planner plans on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from codemods.analysis.body import code, contains, is_string
from codemods.syntax import block_statements
from codemods.visit import Transformer

Pred = Callable[[cst.CSTNode], bool]

# calls whose only effect is to report (a handler or exit branch made of these ends nothing but the loop)
_REPORTERS = ("print", "pprint", "console.print", "logger.", "logging.", "log.", "traceback.print_exc", "sys.stdout.write",
              "st.error", "st.write", "rprint")


@dataclass
class OneTurn:
    """The driver's statements with its conversation loop replaced by one pass."""

    stmts: list[cst.BaseStatement]
    kind: str  # "repl" (a while loop reading input) | "batch" (a for loop over literal prompts)
    loop: cst.CSTNode  # the loop statement that was unrolled
    note: str  # words for the edit message
    dropped: list[str] = field(default_factory=list)  # code of the checks and statements that went


def unroll_conversation_loop(stmts: Sequence[cst.BaseStatement], runs: Pred, reads: Pred,
                             literal_lists: dict[str, cst.BaseExpression]) -> Optional[OneTurn]:
    """The first conversation loop of ``stmts`` (searched through ``with`` / ``try`` / ``if`` blocks, not into
    functions) unrolled to one pass, or None when there is none. ``runs(node)``: the node contains a run of an agent
    (directly or through the program's helpers); ``reads(node)``: it contains an interactive read;
    ``literal_lists``: names bound to a literal list or tuple of strings (a batch's prompts)."""
    for i, stmt in enumerate(stmts):
        found = _unroll_in(stmt, runs, reads, literal_lists)
        if found is not None:
            replacement, turn = found
            turn.stmts = [*stmts[:i], *replacement, *stmts[i + 1:]]
            return turn
    return None


def _unroll_in(stmt: cst.BaseStatement, runs: Pred, reads: Pred, literal_lists: dict[str, cst.BaseExpression],
               ) -> Optional[tuple[list[cst.BaseStatement], OneTurn]]:
    """``stmt`` (or a block inside it) with its conversation loop unrolled: the statements that replace ``stmt``."""
    if isinstance(stmt, cst.While) and runs(stmt.body) and reads(stmt.body):
        turn = OneTurn([], "repl", stmt, "a conversation loop became one turn (a rollout is one conversation from "
                       "ctx.prompt; turns the loop carried over go with it)")
        return _one_pass(stmt, runs, reads, turn), turn
    if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and runs(stmt.body):
        prompts = _literal_prompts(stmt.iter, literal_lists)
        if prompts is not None:
            var = stmt.target.value
            read = cst.SimpleStatementLine(body=[cst.Assign(
                targets=[cst.AssignTarget(cst.Name(var))], value=cst.Call(func=cst.Name("input")))])
            turn = OneTurn([], "batch", stmt, f"the loop over {prompts} literal prompts became one rollout per prompt "
                           f"(`{var}` is the prompt's text: put the prompts in the dataset)")
            body = _one_pass(stmt, runs, lambda n: False, turn)
            return [read.with_changes(leading_lines=stmt.leading_lines), *body], turn
    if isinstance(stmt, (cst.With, cst.If, cst.Try)) and isinstance(stmt.body, cst.IndentedBlock):
        inner = list(stmt.body.body)
        for j, s in enumerate(inner):
            found = _unroll_in(s, runs, reads, literal_lists)
            if found is not None:
                replacement, turn = found
                new_body = stmt.body.with_changes(body=[*inner[:j], *replacement, *inner[j + 1:]])
                new = stmt.with_changes(body=new_body)
                if isinstance(new, cst.Try) and _trivial_handlers(new):
                    return [*_lead(new, list(new_body.body))], turn
                return [new], turn
    return None


def unwrap_error_reports(stmts: Sequence[cst.BaseStatement], runs: Pred) -> Optional[list[cst.BaseStatement]]:
    """The driver's statements with each top-level ``try`` around its runs unwrapped when its handlers only report
    the error (print, log, ``return "Error: …"``), or None when there is none. A program may print and go on; a
    rollout that swallowed the error would end as a success with an empty or partial sample — unwrapped, the error
    fails the rollout (``finally`` blocks are kept)."""
    out: list[cst.BaseStatement] = []
    changed = False
    for stmt in stmts:
        if isinstance(stmt, cst.Try) and runs(stmt.body) and stmt.orelse is None and _catches_everything(stmt) \
                and _trivial_handlers(stmt, returns=True):
            inner = block_statements(stmt.body)
            if stmt.finalbody is not None:
                out.append(stmt.with_changes(handlers=[]))
            else:
                out.extend(_lead(stmt, inner))
            changed = True
            continue
        out.append(stmt)
    return out if changed else None


def _catches_everything(stmt: cst.Try) -> bool:
    """Its handlers catch any error (bare ``except``, ``Exception``, ``BaseException``): it swallows the run's
    failures. A handler for one error type (``except ValueError``) is the program's own contract and stays."""
    broad = {"Exception", "BaseException", "builtins.Exception"}
    return all(h.type is None or code(h.type, 80) in broad for h in stmt.handlers)


def _lead(stmt: cst.BaseStatement, inner: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``inner`` statements taking the comments above ``stmt`` (the block they replace)."""
    if inner and stmt.leading_lines:
        inner[0] = inner[0].with_changes(leading_lines=[*stmt.leading_lines, *inner[0].leading_lines])
    return inner


def _literal_prompts(expr: cst.BaseExpression, literal_lists: dict[str, cst.BaseExpression]) -> Optional[int]:
    """How many literal prompts a batch iterates over, when ``expr`` is (a name bound to) a list/tuple of strings."""
    if isinstance(expr, cst.Name) and expr.value in literal_lists:
        expr = literal_lists[expr.value]
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements and all(
            isinstance(e, cst.Element) and is_string(e.value) for e in expr.elements):
        return len(expr.elements)
    return None


def _one_pass(loop: cst.CSTNode, runs: Pred, reads: Pred, turn: OneTurn) -> list[cst.BaseStatement]:
    """The statements of one pass of ``loop``, cut where the next turn starts."""
    out: list[cst.BaseStatement] = []
    seen_run = False
    for stmt in block_statements(loop.body):
        if seen_run and reads(stmt):
            turn.dropped.append(code(stmt, 50))
            break  # the next turn starts here: what follows prepares it
        for new in _turn_statement(stmt, runs, turn):
            out.append(new)
        seen_run = seen_run or runs(stmt)
    if out and loop.leading_lines:
        out[0] = out[0].with_changes(leading_lines=[*loop.leading_lines, *out[0].leading_lines])
    return out or [cst.SimpleStatementLine(body=[cst.Pass()])]


def _turn_statement(stmt: cst.BaseStatement, runs: Pred, turn: OneTurn) -> list[cst.BaseStatement]:
    """One statement of the pass, as it stands in one turn."""
    if isinstance(stmt, cst.If) and not runs(stmt.body) and _ends_loop(stmt.body):
        turn.dropped.append(code(stmt.test, 50))
        orelse = stmt.orelse
        if orelse is None:
            return []
        if isinstance(orelse, cst.If):
            return _turn_statement(orelse.with_changes(leading_lines=stmt.leading_lines), runs, turn)
        return _lead(stmt, block_statements(orelse.body))
    if isinstance(stmt, cst.Try) and _trivial_handlers(stmt) and stmt.orelse is None:
        inner = [s for x in block_statements(stmt.body) for s in _turn_statement(x, runs, turn)]
        if stmt.finalbody is not None:
            return [stmt.with_changes(body=stmt.body.with_changes(body=inner), handlers=[])]
        return _lead(stmt, inner)
    if _has_loop_control(stmt):
        return [stmt.visit(_LoopControlToReturn())]
    return [stmt]


def _ends_loop(block: cst.BaseSuite) -> bool:
    """A block (with no run in it) that ends the loop or skips to the next pass: ``print("bye"); break``,
    ``sys.exit(0)``, ``continue`` after waiting or listing something — it only ever runs for a turn that is not a
    prompt to the agent (a quit word, an empty line, a command of the REPL)."""
    stmts = block_statements(block)
    if not stmts or not isinstance(stmts[-1], cst.SimpleStatementLine):
        return False
    last = stmts[-1].body[-1]
    if isinstance(last, (cst.Break, cst.Continue)) or (isinstance(last, cst.Return) and last.value is None):
        return True
    return isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and \
        code(last.value.func, 40) in ("exit", "quit", "sys.exit", "os._exit")


def _only_reports(stmt: cst.BaseStatement, returns: bool = False) -> bool:
    """A statement that only reports (prints, logs) or leaves (``break``/``continue``/``return``; with ``returns``, a
    ``return`` of a value too: an error message a function hands back instead of raising)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Break, cst.Continue, cst.Pass)):
            continue
        if isinstance(small, cst.Return) and (small.value is None or returns):
            continue
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            if code(small.value.func, 80).startswith(_REPORTERS):
                continue
        return False
    return True


def _trivial_handlers(stmt: cst.Try, returns: bool = False) -> bool:
    """Every ``except`` only reports or leaves the loop (unwrapping it lets a rollout's error fail the rollout)."""
    if not stmt.handlers:
        return False
    for handler in stmt.handlers:
        if not all(_only_reports(s, returns) for s in block_statements(handler.body)):
            return False
    return True


def _has_loop_control(stmt: cst.CSTNode) -> bool:
    finder = _LoopControlFinder()
    stmt.visit(finder)
    return finder.found


class _LoopControlFinder(cst.CSTVisitor):
    """Finds a ``break``/``continue`` of the enclosing loop (not of loops nested inside the statement)."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_For(self, node: cst.For) -> bool:
        return False

    def visit_While(self, node: cst.While) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Break(self, node: cst.Break) -> None:
        self.found = True

    def visit_Continue(self, node: cst.Continue) -> None:
        self.found = True


class _LoopControlToReturn(Transformer):
    """``break`` / ``continue`` of the unrolled loop → ``return``: the turn ends there."""

    def visit_For(self, node: cst.For) -> bool:
        return False

    def visit_While(self, node: cst.While) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def leave_Break(self, original: cst.Break, updated: cst.Break) -> cst.Return:
        return cst.Return(value=None, semicolon=updated.semicolon)

    def leave_Continue(self, original: cst.Continue, updated: cst.Continue) -> cst.Return:
        return cst.Return(value=None, semicolon=updated.semicolon)


def holds(nodes: Sequence[cst.CSTNode]) -> Pred:
    """A predicate: the node contains one of ``nodes`` (by identity)."""
    targets = list(nodes)

    def pred(node: cst.CSTNode) -> bool:
        return any(contains(node, t) for t in targets)

    return pred


def localize_lazy_singletons(stmts: Sequence[cst.BaseStatement], private: Pred) -> Optional[list[cst.BaseStatement]]:
    """The driver's statements with each lazily built module-level singleton made local, or None when there is none:
    ``global analyst`` + ``if analyst is None: analyst = FinancialAnalyst()`` becomes ``analyst = FinancialAnalyst()``.
    A process builds it once and every request shares it; a rollout must build its own (its agent is the rollout's
    sample). ``private(name)`` says that no other code of the module reads the name (its definition aside)."""
    declared: dict[str, cst.SimpleStatementLine] = {}
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Global):
            for n in stmt.body[0].names:
                declared[n.name.value] = stmt
    lazy: dict[int, cst.BaseStatement] = {}
    names: set[str] = set()
    for stmt in stmts:
        name = _lazy_guard(stmt)
        if name is not None and name in declared and private(name):
            lazy[id(stmt)] = block_statements(stmt.body)[0]
            names.add(name)
    if not names:
        return None
    out: list[cst.BaseStatement] = []
    for stmt in stmts:
        if id(stmt) in lazy:
            out.extend(_lead(stmt, [lazy[id(stmt)]]))
        elif any(stmt is declared[n] for n in names):
            kept = [n for n in stmt.body[0].names if n.name.value not in names]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                out.append(stmt.with_changes(body=[stmt.body[0].with_changes(names=kept)]))
        else:
            out.append(stmt)
    return out


def _lazy_guard(stmt: cst.BaseStatement) -> Optional[str]:
    """``name`` when ``stmt`` is ``if name is None: name = Something(...)`` (or ``if not name:``), one statement,
    no ``else``."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return None
    test = stmt.test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name) \
            and isinstance(test.comparisons[0].operator, cst.Is) and isinstance(test.comparisons[0].comparator, cst.Name) \
            and test.comparisons[0].comparator.value == "None":
        name = test.left.value
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Name):
        name = test.expression.value
    else:
        return None
    body = block_statements(stmt.body)
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return None
    assign = body[0].body[0]
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) \
            and assign.targets[0].target.value == name and isinstance(assign.value, cst.Call):
        return name
    return None
