"""What a module imports, read from its ``ast``: the facts the requirement summary (:mod:`codemods.needs`) needs,
taken where the driver parses the migrated output anyway (a second parse per file would cost more than the
summary's every other step)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Imported:
    """``modules``: every module an import statement names (``import a.b``, ``from a.b import c`` → ``a.b``;
    relative imports left out); ``osmosis_names``: the names imported from ``osmosis_ai`` modules."""

    modules: frozenset[str]
    osmosis_names: frozenset[str]


def imported(tree: ast.AST) -> Imported:
    """The imports of ``tree`` (a module's ``ast``), nested blocks included (a ``__main__`` block's, a ``try``'s)."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
            if node.module.split(".")[0] == "osmosis_ai":
                names.update(a.name for a in node.names)
    return Imported(frozenset(modules), frozenset(names))


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of ``tree``, nested blocks included (imports are statements: expressions are not entered)."""
    stack = list(getattr(tree, "body", []))
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, name, ()) or ())
