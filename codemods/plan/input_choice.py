"""Where the turn's input comes from, chosen by the program: a rollout's input is its prompt.

Programs often pick the source of their input at run time — a person at the keyboard or a scripted/demo input
(``if auto_mode: q = SCRIPT.pop(0) else: q = input("> ")``), the command line or a prompt (``if len(sys.argv) > 1:
q = sys.argv[1] else: q = input()``). Every branch binds the same name; one of them asks the user. In a rollout the
input is ``ctx.prompt``, whichever branch a run of the program would take, so the choice goes and the branch that
asks the user stays: the planner then reads it as the program's one input, as in a program that only ever asked.
The other branches only ever ran instead of asking (their side effects — a scripted list popped, a banner printed —
belong to a mode a rollout does not have)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import libcst as cst

from codemods.analysis.body import code
from codemods.syntax import block_statements

Pred = Callable[[cst.CSTNode], bool]


@dataclass
class InputChoice:
    """The driver's statements with each choice of input source replaced by its branch that asks the user."""

    stmts: list[cst.BaseStatement]
    notes: list[str]  # words for the edit message, one per choice that went


def keep_asking_branch(stmts: Sequence[cst.BaseStatement], runs: Pred, reads: Pred) -> Optional[InputChoice]:
    """``stmts`` (searched through ``with`` / ``try`` / ``if`` blocks, not into loops or functions) with each
    ``if``/``elif``/``else`` that only chooses where one name's value comes from — every branch binds it, one binds
    it from an interactive read (``reads``), none runs an agent (``runs``) — replaced by that branch's statements;
    None when there is none."""
    notes: list[str] = []
    out = _in_block(list(stmts), runs, reads, notes)
    return InputChoice(out, notes) if notes else None


def _in_block(stmts: list[cst.BaseStatement], runs: Pred, reads: Pred, notes: list[str]) -> list[cst.BaseStatement]:
    out: list[cst.BaseStatement] = []
    for stmt in stmts:
        if isinstance(stmt, cst.If):
            chosen = _asking_branch(stmt, runs, reads)
            if chosen is not None:
                name, branch = chosen
                notes.append(f"the choice of where `{name}` comes from (`if {code(stmt.test, 40)}`) went: a "
                             "rollout's input is its prompt (the branch that asks the user stays)")
                inner = _in_block(block_statements(branch), runs, reads, notes)
                if inner and stmt.leading_lines:
                    inner[0] = inner[0].with_changes(leading_lines=[*stmt.leading_lines, *inner[0].leading_lines])
                out.extend(inner)
                continue
        if isinstance(stmt, (cst.With, cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock):
            body = _in_block(list(stmt.body.body), runs, reads, notes)
            if len(body) != len(stmt.body.body) or any(a is not b for a, b in zip(body, stmt.body.body)):
                stmt = stmt.with_changes(body=stmt.body.with_changes(body=body))
        out.append(stmt)
    return out


def _branches(stmt: cst.If) -> Optional[list[cst.BaseSuite]]:
    """The blocks of an ``if``/``elif``…/``else`` chain, or None when it has no ``else`` (a branch may bind nothing)."""
    blocks: list[cst.BaseSuite] = []
    node: Optional[cst.CSTNode] = stmt
    while isinstance(node, cst.If):
        blocks.append(node.body)
        node = node.orelse
    if not isinstance(node, cst.Else):
        return None
    blocks.append(node.body)
    return blocks


def _asking_branch(stmt: cst.If, runs: Pred, reads: Pred) -> Optional[tuple[str, cst.BaseSuite]]:
    """(name, branch) when ``stmt`` chooses the source of ``name`` and ``branch`` is the first that asks the user."""
    blocks = _branches(stmt)
    if blocks is None or runs(stmt):
        return None
    bound = [_bound_names(b) for b in blocks]
    common = set.intersection(*bound) if bound else set()
    for block in blocks:
        for line in block_statements(block):
            name = _read_into(line, reads)
            if name is not None and name in common:
                return name, block
    return None


def _bound_names(block: cst.BaseSuite) -> set[str]:
    """Names a block binds at its own level with a plain assignment."""
    names: set[str] = set()
    for line in block_statements(block):
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                names.add(small.targets[0].target.value)
            elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                names.add(small.target.value)
    return names


def _read_into(line: cst.BaseStatement, reads: Pred) -> Optional[str]:
    """The name ``line`` binds from an interactive read (``q = input("> ").strip()``), else None."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not reads(line):
        return None
    small = line.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
        return small.target.value
    return None
