"""Small libcst building blocks every layer of the migrator shares: reading and writing call arguments, statement
blocks, comments that must survive a rewrite, names and spacing of generated code. Pure functions over nodes; no
analysis, no plans (those live in :mod:`codemods.analysis` and :mod:`codemods.plan`)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from codemods.visit import Transformer, visit as fast_visit


def camel(name: str) -> str:
    """``research_and_summarize`` → ``ResearchAndSummarize`` (a valid class name: leading digits dropped)."""
    parts = [p for p in re.split(r"[_\W]+", name) if p]
    out = "".join(p[:1].upper() + p[1:] for p in parts).lstrip("0123456789")
    return out or "Script"


def kwarg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def plain_comma(comma: cst.Comma) -> cst.Comma:
    """``comma`` with its layout (line breaks, indentation) but without the comments it carries."""
    ws = comma.whitespace_after
    if isinstance(ws, cst.ParenthesizedWhitespace):
        ws = ws.with_changes(
            first_line=cst.TrailingWhitespace(),
            empty_lines=[],
        )
    return comma.with_changes(whitespace_after=ws)


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with keyword ``name=value`` (replaced if present, else appended, keeping the call's layout; comments
    between the arguments stay where they are and are never copied)."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(keyword=cst.Name(name), value=value, equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            # multi-line call with a trailing comma: the new argument takes the closing layout (and whatever
            # comments sit before the parenthesis), the old last one the plain layout between arguments
            between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else last.comma
            args[-1] = last.with_changes(comma=plain_comma(between))
            args.append(new.with_changes(comma=last.comma))
        else:
            # the layout before the closing parenthesis (a line break) moves to the new last argument
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                         whitespace_after_arg=cst.SimpleWhitespace(""))
            args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    else:
        args.append(new)
    return call.with_changes(args=args)


def without_kwarg(call: cst.Call, name: str) -> cst.Call:
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == name:
            if i == len(args) - 1 and i > 0:
                # the previous argument takes the removed one's trailing layout
                args[i - 1] = args[i - 1].with_changes(comma=a.comma)
            del args[i]
            return call.with_changes(args=args)
    return call


def tight_equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def assign_stmt(var: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(var))], value=value)])


def strip_comments(node: cst.CSTNode) -> cst.CSTNode:
    """A copy of ``node`` without comments (a copy must not duplicate the original's comments)."""
    return node.visit(_StripComments())


class _StripComments(Transformer):
    """Drops comment lines and trailing comments (for :func:`strip_comments`) — but the migration's own TODO markers,
    which say something about the copy itself."""

    def leave_EmptyLine(self, original: cst.EmptyLine, updated: cst.EmptyLine):
        if updated.comment is not None and not updated.comment.value.startswith("# TODO(osmosis-migrate"):
            return cst.RemoveFromParent()
        return updated

    def leave_TrailingWhitespace(self, original: cst.TrailingWhitespace, updated: cst.TrailingWhitespace):
        if updated.comment is not None:
            return updated.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))
        return updated


def keep_comments(original: cst.CSTNode, updated):
    """``updated`` with the comments of ``original`` it lost (an argument dropped, an expression replaced) put back
    as comment lines above it: a rewrite never loses a comment."""
    if not isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return updated
    have: dict[str, int] = {}
    for line in comments_of(updated):
        have[line.comment.value] = have.get(line.comment.value, 0) + 1
    lost: list[cst.EmptyLine] = []
    for line in comments_of(original):
        if have.get(line.comment.value, 0) > 0:
            have[line.comment.value] -= 1
        else:
            lost.append(line)
    if not lost:
        return updated
    return updated.with_changes(leading_lines=[*updated.leading_lines, *lost])


def comments_of(node: cst.CSTNode) -> list[cst.EmptyLine]:
    """Every comment under ``node``, as comment lines (to carry the comments of code that is replaced)."""
    out: list[cst.EmptyLine] = []
    fast_visit(node, _CommentLines(out))
    return out


class _CommentLines(cst.CSTVisitor):
    """Appends to ``out`` a comment line for every comment it meets (for :func:`comments_of`)."""

    def __init__(self, out: list[cst.EmptyLine]) -> None:
        super().__init__()
        self.out = out

    def visit_Comment(self, n: cst.Comment) -> None:
        self.out.append(cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=n))


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}{n}" in taken:
        n += 1
    return f"{name}{n}"


def is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def tidy_moved(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Moved module-level statements keep their comments but not the blank lines that separated them."""
    out = []
    for stmt in stmts:
        lines = [l.with_changes(indent=True, whitespace=cst.SimpleWhitespace("")) for l in stmt.leading_lines
                 if l.comment is not None]
        out.append(stmt.with_changes(leading_lines=lines))
    return out


def strip_trailing_bare_return(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    if len(stmts) > 1:
        last = stmts[-1]
        if (
            isinstance(last, cst.SimpleStatementLine)
            and len(last.body) == 1
            and isinstance(last.body[0], cst.Return)
            and last.body[0].value is None
            and not any(l.comment is not None for l in last.leading_lines)
        ):
            return stmts[:-1]
    return stmts


def with_blank_lines(stmt: cst.BaseStatement, n: int = 2) -> cst.BaseStatement:
    """``stmt`` with at least ``n`` blank lines above its comments (module-level spacing for a new class)."""
    lines = list(stmt.leading_lines)
    blanks = 0
    for l in lines:
        if l.comment is None:
            blanks += 1
        else:
            break
    if blanks >= n:
        return stmt
    return stmt.with_changes(leading_lines=[*(cst.EmptyLine() for _ in range(n - blanks)), *lines])


_ASCII = str.maketrans({"\u2026": "...", "\u2014": "-", "\u2013": "-", "\u2192": "->", "\u2018": "'", "\u2019": "'"})


def ascii_reason(reason: str) -> str:
    """A TODO reason that any source encoding can hold (latin-1 files too): our own punctuation in ASCII."""
    return reason.translate(_ASCII)


def block_statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; a one-line suite (``if x: a; b``) as one statement line."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(block.body))]
    return []


def run_method(cls: cst.ClassDef) -> Optional[cst.FunctionDef]:
    for stmt in block_statements(cls.body):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "run" and stmt.asynchronous is not None:
            return stmt
    return None


def replace_method(cls: cst.ClassDef, old: cst.FunctionDef, new: cst.FunctionDef) -> cst.ClassDef:
    body = [new if s is old else s for s in block_statements(cls.body)]
    return cls.with_changes(body=cls.body.with_changes(body=body))


def is_import_stmt(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
