"""The ``__main__`` block of a migrated program: it serves the workflow as ``osmosis rollout init`` scaffolds do
(``uvicorn.run(create_rollout_server(backend=LocalBackend(workflow=…)))``); the lines that called the driver, and
those that only fed them, go — their comments stay."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from codemods.analysis.module import is_grader_class
from codemods.analysis.names import name_counts
from codemods.framework import Framework
from codemods.syntax import block_statements, comments_of

if TYPE_CHECKING:
    from codemods.analysis.module import ModuleModel


def serving_guard(fw: Framework, guard: Optional[cst.CSTNode], cls_name: str, driver_name: Optional[str],
                   model: "ModuleModel") -> cst.If:
    """The ``__main__`` block that serves the workflow (the statements that called the driver, and those that only
    fed them, replaced; their comments kept above the serving lines; other statements kept)."""
    imports_os = "os" in model.table.modules
    grader = next((s.name.value for s in model.body if isinstance(s, cst.ClassDef) and is_grader_class(s, model.table)), None)
    backend = f"LocalBackend(workflow={cls_name}" + (f", grader={grader}" if grader else "") + ")"
    keep_alive = (
        "        # Outlive the Osmosis platform load balancer's 2100s idle timeout.\n"
        "        timeout_keep_alive=2160,\n" if fw.target.startswith("0.3") else ""
    )
    text = (
        ("import os\n\n" if not imports_os else "")
        + "import uvicorn\n"
        "from osmosis_ai.rollout.backend.local import LocalBackend\n"
        "from osmosis_ai.rollout.server import create_rollout_server\n\n"
        f"# `python` on this file serves {cls_name} to a rollout controller (as `osmosis rollout init` scaffolds do)\n"
        "uvicorn.run(\n"
        f"    create_rollout_server(backend={backend}),\n"
        '    host="0.0.0.0",\n'
        '    port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")),\n'
        + keep_alive.replace("        ", "    ")
        + ")\n"
    )
    serving = list(_parsed_statements(text))
    if guard is None:
        return cst.If(
            test=cst.parse_expression('__name__ == "__main__"'),
            body=cst.IndentedBlock(body=serving),
        )
    assert isinstance(guard, cst.If)
    stmts = block_statements(guard.body)
    if driver_name is None:
        replaced = list(range(len(stmts)))  # the block ran the agent itself: all of it moved into run()
    else:
        replaced = [k for k, s in enumerate(stmts) if driver_name in name_counts(s)]
    feeders = feeding_statements(stmts, set(replaced))
    gone = set(replaced) | feeders
    for k in gone:  # the imports only those lines used may go (`asyncio` of `asyncio.run(main())`, `sys`…)
        fw.replaced.update(name_counts(stmts[k]))
    carried: list[cst.EmptyLine] = []
    new: list[cst.BaseStatement] = []
    placed = False
    for k, s in enumerate(stmts):
        if k in gone:
            if driver_name is not None:
                carried.extend(comments_of(s))
            if not placed and k in replaced:
                placed = True
                new.append(None)  # type: ignore[arg-type]  # the serving lines go here
            continue
        new.append(s)
    if not placed:
        new.append(None)  # type: ignore[arg-type]
    at = new.index(None)  # type: ignore[arg-type]
    if carried:
        serving[0] = serving[0].with_changes(leading_lines=[*carried, *serving[0].leading_lines])
    new[at:at + 1] = serving
    return guard.with_changes(body=guard.body.with_changes(body=new))


_PARSED: dict[str, tuple] = {}


def _parsed_statements(text: str) -> tuple:
    """``text`` parsed into statements (blank lines without indentation), cached per process."""
    if text not in _PARSED:
        if len(_PARSED) > 64:
            _PARSED.clear()
        _PARSED[text] = tuple(_no_blank_indent(s) for s in cst.parse_module(text).body)
    return _PARSED[text]


def _no_blank_indent(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Blank lines that do not carry their block's indentation (no trailing spaces once indented)."""
    lines = [l.with_changes(indent=False) if l.comment is None else l for l in stmt.leading_lines]
    return stmt.with_changes(leading_lines=lines)


def feeding_statements(stmts: Sequence[cst.BaseStatement], callers: set[int]) -> set[int]:
    """Statements of a block whose only purpose is to feed ``callers`` (``q = input()``, argparse setup)."""
    bound: dict[int, set[str]] = {}
    loads: dict[int, dict[str, int]] = {}
    for k, s in enumerate(stmts):
        loads[k] = name_counts(s)
        names: set[str] = set()
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    for t in targets:
                        if isinstance(t, cst.Name):
                            names.add(t.value)
        bound[k] = names
    gone = set(callers)
    feeders: set[int] = set()
    changed = True
    while changed:
        changed = False
        for k, s in enumerate(stmts):
            if k in gone or k in feeders:
                continue
            names = bound[k]
            if names:
                readers = [j for j in range(len(stmts)) if j != k and names & (loads[j].keys() - bound[j])]
                if readers and all(j in gone or j in feeders for j in readers):
                    feeders.add(k)
                    changed = True
            elif isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr):
                heads = set(loads[k])
                if heads and any(heads & bound[j] for j in feeders):
                    # `parser.add_argument(...)` on a parser that only feeds the callers
                    if all(any(h in bound[j] for j in feeders) or h in ("print",) for h in heads if h not in ("True", "False", "None")):
                        feeders.add(k)
                        changed = True
    return feeders
