"""How often code refers to names: per statement (the import clean-up and "who uses this" questions), cheaply."""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from codemods.analysis.body import NameReferences
from codemods.visit import visit as fast_visit


class _NameRefs(NameReferences):
    """Names used as references (not keyword-argument names, not attribute names after a dot)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def visit_Name(self, n: cst.Name) -> None:
        self.counts[n.value] = self.counts.get(n.value, 0) + 1

    def visit_SimpleString(self, n: cst.SimpleString) -> None:
        val = n.value.strip("\"'rbuRBU")
        if val.isidentifier():
            self.counts[val] = self.counts.get(val, 0) + 1


def name_counts(node: cst.CSTNode) -> dict[str, int]:
    v = _NameRefs()
    fast_visit(node, v)
    return v.counts


def candidate_uses(stmt: cst.CSTNode, candidates: Sequence[str], module: cst.Module) -> dict[str, int]:
    """Which of the import ``candidates`` a new statement mentions as a word of its code (a name in a string or
    comment counts too, which only ever keeps an import).

    Read from the text of the statement's tokens instead of generating its code: an identifier can only be a word
    of the code inside one token (tokens made of word characters never touch), and the tokens that hold word
    characters are names, numbers, strings, comments and keywords — no candidate is a keyword; the soft keywords
    (``match``, ``case``, ``type``, ``_``) are checked on the generated code."""
    if not candidates:
        return {}
    if _SOFT_KEYWORDS & set(candidates):
        text = module.code_for_node(stmt)
    else:
        collector = _TokenText()
        fast_visit(stmt, collector)
        text = " ".join(collector.parts)
    return {name: 1 for name in candidates if re.search(rf"\b{re.escape(name)}\b", text)}


_SOFT_KEYWORDS = {"match", "case", "type", "_"}


class _TokenText(cst.CSTVisitor):
    """The texts of the tokens of a tree that can hold word characters (keywords aside)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.parts.append(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.parts.append(node.value)

    def visit_Integer(self, node: cst.Integer) -> None:
        self.parts.append(node.value)

    def visit_Float(self, node: cst.Float) -> None:
        self.parts.append(node.value)

    def visit_Imaginary(self, node: cst.Imaginary) -> None:
        self.parts.append(node.value)

    def visit_Comment(self, node: cst.Comment) -> None:
        self.parts.append(node.value)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.parts += [node.start, node.end]

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.parts.append(node.value)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if node.conversion:
            self.parts.append(node.conversion)

    def visit_TemplatedString(self, node) -> None:
        self.parts += [node.start, node.end]

    def visit_TemplatedStringText(self, node) -> None:
        self.parts.append(node.value)

    def visit_TemplatedStringExpression(self, node) -> None:
        if node.conversion:
            self.parts.append(node.conversion)
