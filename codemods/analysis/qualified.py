"""The fully qualified names of a file's names — what libcst's ``FullyQualifiedNameProvider`` gives ``Name``
nodes — for the cross-file facts (:mod:`codemods.analysis.repo`), at about half its cost.

The provider answers for every node of the module, in three more full passes of libcst's own (rebuilding) walk
after the scope analysis: its qualified-name pass evaluates the names of every node, then its fully-qualifying
pass copies them. The cross-file facts read the names of ``Name`` nodes only. So: libcst's ``ScopeProvider`` (the
scope analysis itself, unchanged), then for each ``Name`` — in libcst's visiting order, by the read-only walk of
:mod:`codemods.visit` — the same calls the two passes make (``Scope.get_qualified_names_for``, then the provider's
own qualifying of relative and local names), so the answers are the provider's, node for node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import libcst as cst
from libcst.helpers import calculate_module_and_package
from libcst.metadata import MetadataWrapper, ScopeProvider
from libcst.metadata.name_provider import FullyQualifiedNameVisitor

from codemods.visit import visit as fast_visit


class _Names(cst.CSTVisitor):
    """The ``Name`` nodes of a tree, in visiting order."""

    def __init__(self) -> None:
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)


def qualified_names(path: str, root: str) -> Iterator[tuple[str, list[str]]]:
    """``(name, its fully qualified names)`` for every ``Name`` node of the file ``path`` (read as
    ``FullRepoManager`` reads it: text in the locale's encoding), its module named from ``root`` — what
    ``FullRepoManager(root, …, {FullyQualifiedNameProvider})`` resolves for those nodes, in the same order.

    Raises what the provider would raise (a file libcst cannot parse, a relative import beyond the top-level
    package, …)."""
    module = cst.parse_module(Path(path).read_text())
    where = calculate_module_and_package(Path(root), path)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    collector = _Names()
    fast_visit(module, collector)
    for node in collector.found:
        scope = scopes.get(node)
        if not scope:  # the provider gives such a node no name
            yield node.value, []
            continue
        # the provider's two passes, for this node: QualifiedNameVisitor, then FullyQualifiedNameVisitor
        qnames = scope.get_qualified_names_for(node)
        full = {FullyQualifiedNameVisitor._fully_qualify(where.name, where.package, q) for q in qnames}
        yield node.value, [q.name for q in full]  # in the set's order, as the provider's callers iterate it
