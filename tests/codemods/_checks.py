"""Checks on migrated source shared by the plain-program tests: names that would be undefined at run time, the
comments of a file, calls made inside ``AgentWorkflow.run()``, and the runs of each framework."""

from __future__ import annotations

import ast
import builtins
import io
import symtable
import tokenize
from collections import Counter

#: comments the migration writes itself (not the user's)
GENERATED_COMMENTS = (
    "# TODO(osmosis-migrate",
    "# `python` on this file serves",
    "# Outlive the Osmosis platform",
)


def undefined_names(text: str) -> set[str]:
    """Global names a module reads but never binds (imports, defs, assignments) and that are not builtins.

    A module with a star import binds unknown names: it is not checked (empty set)."""
    tree = ast.parse(text)
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return set()
    top = symtable.symtable(text, "<migrated>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    missing: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            name = sym.get_name()
            global_lookup = table.get_type() == "module" or sym.is_global() or (
                table.get_type() == "class" and not sym.is_assigned() and not sym.is_imported()
            )
            if global_lookup and not sym.is_assigned() and not sym.is_imported() and name not in bound \
                    and not hasattr(builtins, name) and name not in ("__file__", "__name__", "__doc__"):
                missing.add(name)
        for child in table.get_children():
            walk(child)

    walk(top)
    return missing


def user_comments(text: str) -> Counter:
    """The comments of ``text`` (stripped), without the ones the migration writes (TODO markers: all their lines)."""
    from codemods.markers import find_markers

    marker_lines = {m.line + k for m in find_markers(text) for k in range(m.lines)}
    out: Counter = Counter()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and tok.start[0] not in marker_lines:
            c = tok.string.strip()
            if not c.startswith(GENERATED_COMMENTS):
                out[c] += 1
    return out


def run_methods(tree: ast.Module) -> list[ast.AsyncFunctionDef]:
    """``async def run(self, ctx…)`` of every class deriving from ``AgentWorkflow``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            (isinstance(b, ast.Name) and b.id == "AgentWorkflow") or (isinstance(b, ast.Attribute) and b.attr == "AgentWorkflow")
            for b in node.bases
        ):
            out += [f for f in node.body if isinstance(f, ast.AsyncFunctionDef) and f.name == "run"]
    return out


def called_names(node: ast.AST) -> list[str]:
    """Dotted names of the functions called under ``node`` (``time.sleep``, ``input``, ``parser.parse_args``)."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            try:
                out.append(ast.unparse(n.func))
            except Exception:  # pragma: no cover
                pass
    return out


def runner_runs(text: str) -> list[tuple[str, str]]:
    """(agent, input) of every ``Runner.run*`` call, in source order."""
    out = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr.startswith("run") \
                and ast.unparse(n.func.value) == "Runner":
            positional = [a for a in n.args]
            kw = {k.arg: k.value for k in n.keywords}
            agent = positional[0] if positional else kw.get("starting_agent")
            inp = positional[1] if len(positional) > 1 else kw.get("input")
            out.append((ast.unparse(agent), ast.unparse(inp) if inp is not None else ""))
    return sorted(out, key=lambda x: 0) if False else out


def strands_runs(text: str) -> list[tuple[str, str, str]]:
    """(agent, method, first argument) of every ``x.invoke_async/stream_async/structured_output_async`` call."""
    out = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (
            "invoke_async", "stream_async", "structured_output_async", "structured_output"
        ):
            first = ast.unparse(n.args[0]) if n.args else ""
            out.append((ast.unparse(n.func.value), n.func.attr, first))
    return out
