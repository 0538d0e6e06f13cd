"""The rule interface of ``osmosis-migrate`` and the helpers every rule uses.

A **rule** is one migration (``strands-agent``, ``openai-agent``, ``legacy-loop``, ``imports``), one module in
``codemods/rules/``, registered in ``codemods/rules/__init__.py`` (``ALL_RULES``, in the order they run).

Contract of a rule (subclass :class:`Rule`):

* class attributes ``code`` (``"OM100"``; the hundreds digit is the rule's *family*: every edit/TODO code the
  rule emits is in it, e.g. ``OM101``…``OM199``), ``name`` (``"strands-agent"``), ``summary`` (one line) and
  ``trigger_words`` — the driver parses a file for this rule only if the file's text contains one of them
  (the fast path: files that cannot contain a target are never parsed);
* ``transform(module, ctx) -> module``: returns the new tree (or the same object when nothing applies).
  It must be **idempotent**: running it on its own output returns an equal tree (fixed point), so a rule must
  recognise already-migrated code and leave it alone. It records what it did with ``ctx.edit(code, node, msg)``
  and what it left for a human with ``ctx.todo(code, node, reason)``; a TODO left in the source is a comment
  added with :func:`with_todo_comment` (never code that raises), which does not duplicate an identical marker,
  so re-runs do not pile markers up.
* ``ctx.strategy`` is the ``--strategy`` flag (``"auto"|"rewrite"|"wrap"``); rules that have no choice ignore it.
* A rule never touches a node carrying the opt-out marker (:func:`has_skip_marker`): ``# osmosis-migrate: skip``
  as a trailing comment on a ``class``/``def`` header or statement line, or as a comment line right above it.
  A file containing ``# osmosis-migrate: skip-file`` anywhere is not migrated at all (the driver checks that).

Rules transform text only: no rule imports ``osmosis_compat`` runtime code.

Helpers here: :class:`ImportTable` (what a local name refers to — aliases, ``import pkg as p``, star imports),
:func:`add_imports` / :func:`remove_unused_imports` (imports added once, unused ones dropped),
:func:`with_todo_comment`, :func:`has_skip_marker`, :func:`todo_marker`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

SKIP_FILE_MARKER = "osmosis-migrate: skip-file"
SKIP_MARKER = "osmosis-migrate: skip"
TODO_PREFIX = "# TODO(osmosis-migrate"
_SKIP_RE = re.compile(r"#\s*osmosis-migrate:\s*skip\b(?!-)")
STRATEGIES = ("auto", "rewrite", "wrap")


@dataclass(frozen=True)
class Edit:
    """One change a rule made: its code (``OM1xx``), the 1-based line in the input it changed, a message."""

    code: str
    line: int
    message: str


@dataclass(frozen=True)
class Todo:
    """One thing a rule could not migrate safely; a ``# TODO(osmosis-migrate CODE): reason`` marker says so."""

    code: str
    line: int
    reason: str


NodeOrLine = Union[cst.CSTNode, int, None]


@dataclass
class RuleContext:
    """Per-file state shared by the rules of one run: the options, and the edits/TODOs recorded so far.

    ``module`` is the tree the current rule received (the driver sets it before each rule); line numbers of
    nodes are computed lazily from it (one position pass per tree, only when something is recorded).
    """

    strategy: str = "auto"
    filename: str = "<string>"
    edits: list[Edit] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    module: cst.Module | None = None
    _positions: dict[int, int] = field(default_factory=dict, repr=False)
    _positions_of: int | None = field(default=None, repr=False)

    def line_of(self, node_or_line: NodeOrLine) -> int:
        """1-based start line of ``node`` in ``self.module`` (0 when unknown, e.g. a node a rule just built)."""
        if node_or_line is None:
            return 0
        if isinstance(node_or_line, int):
            return node_or_line
        if self.module is None:
            return 0
        if self._positions_of != id(self.module):
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            positions = wrapper.resolve(PositionProvider)
            self._positions = {id(n): p.start.line for n, p in positions.items()}
            self._positions_of = id(self.module)
        return self._positions.get(id(node_or_line), 0)

    def edit(self, code: str, node_or_line: NodeOrLine, message: str) -> None:
        """Record an edit made by rule code ``code`` at ``node_or_line``."""
        self.edits.append(Edit(code, self.line_of(node_or_line), message))

    def todo(self, code: str, node_or_line: NodeOrLine, reason: str) -> None:
        """Record a TODO left for a human (the caller also adds the comment with :func:`with_todo_comment`)."""
        self.todos.append(Todo(code, self.line_of(node_or_line), reason))


class Rule(ABC):
    """A migration rule; see the module docstring for the contract."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    trigger_words: ClassVar[tuple[str, ...]]

    @classmethod
    def family(cls) -> str:
        """``"OM1"`` for ``OM100``: every code this rule emits starts with it."""
        return cls.code[:3]

    @classmethod
    def wants(cls, text: str) -> bool:
        """Prefilter on raw text: can this file contain something for this rule?"""
        return any(word in text for word in cls.trigger_words)

    @abstractmethod
    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        """Return the migrated module (idempotent; record edits/TODOs on ``ctx``)."""


# --------------------------------------------------------------------------------------------------- markers


def todo_marker(code: str, reason: str) -> str:
    """The exact comment text of a TODO marker."""
    reason = " ".join(reason.split())
    return f"# TODO(osmosis-migrate {code}): {reason}"


StatementT = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


def with_todo_comment(stmt: StatementT, code: str, reason: str) -> StatementT:
    """``stmt`` with a TODO marker comment line above it, unless an identical marker is already there."""
    marker = todo_marker(code, reason)
    for line in stmt.leading_lines:
        if line.comment is not None and line.comment.value.strip() == marker:
            return stmt
    new_line = cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(marker))
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, new_line])


def dedupe_header_todos(module: cst.Module) -> cst.Module:
    """Drop TODO markers added above the first statement that the module header already has.

    libcst parses comments above the first statement into ``Module.header``, so a marker added there by an earlier
    run is not in the statement's ``leading_lines`` any more; the driver calls this after every rule.
    """
    if not module.body or not module.header:
        return module
    present = {l.comment.value.strip() for l in module.header if l.comment is not None}
    first = module.body[0]
    lines = list(first.leading_lines)
    kept = [
        l for l in lines
        if not (l.comment is not None and l.comment.value.startswith(TODO_PREFIX) and l.comment.value.strip() in present)
    ]
    if len(kept) == len(lines):
        return module
    return module.with_changes(body=[first.with_changes(leading_lines=kept), *module.body[1:]])


def has_todo_comment(stmt: StatementT, code: str) -> bool:
    """Whether ``stmt`` already carries a TODO marker of ``code`` (any reason)."""
    prefix = f"# TODO(osmosis-migrate {code})"
    return any(l.comment is not None and l.comment.value.startswith(prefix) for l in stmt.leading_lines)


def has_skip_marker(node: cst.CSTNode) -> bool:
    """Whether a statement/class/def opts out with ``# osmosis-migrate: skip`` (trailing or on the line above)."""
    comments: list[str] = []
    for line in getattr(node, "leading_lines", ()):
        if line.comment is not None:
            comments.append(line.comment.value)
    trailing = getattr(node, "trailing_whitespace", None)
    if isinstance(trailing, cst.TrailingWhitespace) and trailing.comment is not None:
        comments.append(trailing.comment.value)
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
        comments.append(body.header.comment.value)
    elif isinstance(body, cst.SimpleStatementSuite) and body.trailing_whitespace.comment is not None:
        comments.append(body.trailing_whitespace.comment.value)
    return any(_SKIP_RE.search(c) for c in comments)


def file_opted_out(text: str) -> bool:
    """Whether the file carries ``# osmosis-migrate: skip-file``."""
    return SKIP_FILE_MARKER in text


# --------------------------------------------------------------------------------------------------- names


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = dotted_name(expr.value)
        return None if head is None else f"{head}.{expr.attr.value}"
    return None


def _module_name(node: cst.ImportFrom) -> str | None:
    if node.relative:
        return None
    return dotted_name(node.module) if node.module is not None else None


@dataclass
class ImportTable:
    """What the names bound by a module's imports refer to (all import statements, any depth).

    ``names``: local name → qualified name (``Agent`` → ``strands.Agent``, ``LLM`` → ``strands.models.litellm.LiteLLMModel``);
    ``modules``: local name → module (``import strands as s`` → ``s`` → ``strands``; ``import a.b`` → ``a`` → ``a``);
    ``stars``: modules imported with ``*``.
    """

    names: dict[str, str] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, module: cst.Module) -> ImportTable:
        table = cls()
        for node in _iter_imports(module):
            if isinstance(node, cst.Import):
                for alias in node.names:
                    full = dotted_name(alias.name) or ""
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        table.modules[alias.asname.name.value] = full
                    else:
                        head = full.split(".")[0]
                        table.modules[head] = head
            else:
                mod = _module_name(node)
                if mod is None:
                    continue
                if isinstance(node.names, cst.ImportStar):
                    table.stars.append(mod)
                    continue
                for alias in node.names:
                    name = dotted_name(alias.name) or ""
                    local = name
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        local = alias.asname.name.value
                    table.names[local] = f"{mod}.{name}"
        return table

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Qualified name of ``expr`` as far as the imports tell (``s.Agent`` → ``strands.Agent``), else None."""
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.names:
            base = self.names[head]
        elif head in self.modules:
            base = self.modules[head]
        else:
            return None
        return f"{base}.{rest}" if rest else base

    def matches(self, expr: cst.BaseExpression, qualified: Iterable[str]) -> str | None:
        """The entry of ``qualified`` that ``expr`` refers to (also via a star import of its module), else None."""
        targets = tuple(qualified)
        resolved = self.resolve(expr)
        if resolved is not None:
            return resolved if resolved in targets else None
        if isinstance(expr, cst.Name):
            for target in targets:
                mod, _, name = target.rpartition(".")
                if name == expr.value and mod in self.stars:
                    return target
        return None

    def local_names_for(self, qualified: str) -> list[str]:
        """Local names bound to ``qualified`` by a ``from … import``."""
        return [local for local, q in self.names.items() if q == qualified]


def _iter_imports(module: cst.Module) -> list[Union[cst.Import, cst.ImportFrom]]:
    found: list[Union[cst.Import, cst.ImportFrom]] = []

    class _Collect(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            found.append(node)
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            found.append(node)
            return False

        # expressions cannot contain imports: skip them for speed
        def visit_Call(self, node: cst.Call) -> bool:
            return False

    module.visit(_Collect())
    return found


# --------------------------------------------------------------------------------------------------- imports

ImportSpec = tuple[str, str]  # (module, name): ``from module import name``


def add_imports(module: cst.Module, wanted: Sequence[ImportSpec]) -> cst.Module:
    """``module`` with ``from mod import name`` for every ``wanted`` pair not already bound (added once).

    Names go into an existing top-level ``from mod import …`` when there is one, else a new statement is placed
    after the last top-level import (or after the docstring / ``__future__`` imports).
    """
    table = ImportTable.of(module)
    missing: dict[str, list[str]] = {}
    for mod, name in wanted:
        if table.names.get(name) == f"{mod}.{name}" or mod in table.stars:
            continue
        if name not in missing.setdefault(mod, []):
            missing[mod].append(name)
    missing = {m: n for m, n in missing.items() if n}
    if not missing:
        return module
    body = list(module.body)
    # extend existing top-level `from mod import a, b` statements
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        imp = stmt.body[0]
        if not isinstance(imp, cst.ImportFrom) or isinstance(imp.names, cst.ImportStar):
            continue
        mod = _module_name(imp)
        if mod not in missing:
            continue
        names = list(imp.names)
        present = {dotted_name(a.name) for a in names if a.asname is None}
        extra = [n for n in missing.pop(mod) if n not in present]
        if not extra:
            continue
        if names and names[-1].comma is cst.MaybeSentinel.DEFAULT and imp.lpar is None:
            names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elif names and imp.lpar is not None and names[-1].comma is cst.MaybeSentinel.DEFAULT:
            names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        for j, n in enumerate(extra):
            last = j == len(extra) - 1
            comma = cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            names.append(cst.ImportAlias(name=cst.Name(n), comma=comma))
        body[i] = stmt.with_changes(body=[imp.with_changes(names=names)])
    if missing:
        insert_at = _import_insertion_index(body)
        new_stmts = [_from_import(mod, sorted(names), module) for mod, names in missing.items()]
        body[insert_at:insert_at] = new_stmts
    return module.with_changes(body=body)


def _from_import(mod: str, names: Sequence[str], module: cst.Module) -> cst.SimpleStatementLine:
    line = f"from {mod} import {', '.join(names)}"
    if len(line) > 88:  # black/ruff style: one name per line in parentheses
        inner = "".join(f"{module.default_indent}{n},{module.default_newline}" for n in names)
        line = f"from {mod} import ({module.default_newline}{inner})"
    stmt = cst.parse_statement(line + module.default_newline, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def _import_insertion_index(body: Sequence[cst.BaseStatement]) -> int:
    last_import = -1
    after_preamble = 0
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            last_import = i
            continue
        if i == 0 and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr):
            if isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                after_preamble = 1
                continue
        if isinstance(stmt, cst.If) or isinstance(stmt, cst.Try):
            # `try: import x except ImportError` blocks count as the import section only if they lead it
            if last_import == i - 1:
                continue
        break
    return last_import + 1 if last_import >= 0 else after_preamble


def used_names(module: cst.Module) -> set[str]:
    """Every Name used in the module outside import statements (first segment of attribute chains included)."""
    seen: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            seen.add(node.value)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            # names in string annotations / __all__ count as uses (conservative)
            val = node.value.strip("\"'rbuRBU")
            if val.isidentifier():
                seen.add(val)

    module.visit(_Names())
    return seen


def remove_unused_imports(module: cst.Module, candidates: Iterable[str]) -> tuple[cst.Module, list[str]]:
    """Drop the imported local names in ``candidates`` that are no longer used anywhere in ``module``.

    Only names a rule made unused should be passed (user imports that were already unused are left alone).
    Returns the new module and the names removed. An import statement left empty is removed with its line,
    its leading comments kept on the next statement.
    """
    cands = set(candidates)
    if not cands:
        return module, []
    used = used_names(module)
    dead = cands - used
    if not dead:
        return module, []
    removed: list[str] = []

    class _Remove(cst.CSTTransformer):
        def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
            if isinstance(updated.names, cst.ImportStar):
                return updated
            keep = []
            for alias in updated.names:
                local = alias.evaluated_alias or alias.evaluated_name
                if local in dead:
                    removed.append(local)
                else:
                    keep.append(alias)
            if len(keep) == len(updated.names):
                return updated
            if not keep:
                return cst.RemoveFromParent()
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=keep)

        def leave_Import(self, original: cst.Import, updated: cst.Import):
            keep = []
            for alias in updated.names:
                local = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                if local in dead:
                    removed.append(local)
                else:
                    keep.append(alias)
            if len(keep) == len(updated.names):
                return updated
            if not keep:
                return cst.RemoveFromParent()
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=keep)

        def leave_SimpleStatementLine(self, original, updated):
            if not updated.body and original.body:
                return cst.RemoveFromParent()
            return updated

    new = module.visit(_Remove())
    if len(new.body) != len(module.body):
        new = new.with_changes(body=_carry_leading_lines(module.body, new.body, dead))
    return new, sorted(set(removed))


def _fully_dead(stmt: cst.BaseStatement, dead: set[str]) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
            return False
        for alias in small.names:
            local = alias.evaluated_alias or alias.evaluated_name
            if isinstance(small, cst.Import) and alias.asname is None:
                local = local.split(".")[0]
            if local not in dead:
                return False
    return True


def _carry_leading_lines(old: Sequence[cst.BaseStatement], new: Sequence[cst.BaseStatement], dead: set[str]) -> list[cst.BaseStatement]:
    """Blank lines and comments above a removed top-level import move to the statement that follows it."""
    survivors = [s for s in old if not _fully_dead(s, dead)]
    if len(survivors) != len(new):
        return list(new)  # unexpected shape: keep libcst's result as it is
    out: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    j = 0
    for stmt in old:
        if _fully_dead(stmt, dead):
            carried.extend(stmt.leading_lines)
            continue
        cur = new[j]
        j += 1
        if carried:
            cur = cur.with_changes(leading_lines=[*carried, *cur.leading_lines])
            carried = []
        out.append(cur)
    return out
