"""The rule interface of ``osmosis-migrate`` and the helpers every rule uses.

A **rule** is one migration (``strands-agent``, ``openai-agent``, ``legacy-loop``, ``imports``), one module in
``codemods/rules/``, registered in ``codemods/rules/__init__.py`` (``ALL_RULES``, in the order they run).

Contract of a rule (subclass :class:`Rule`):

* class attributes ``code`` (``"OM100"``; the hundreds digit is the rule's *family*: every edit/TODO code the
  rule emits is in it, e.g. ``OM1xx``, declared in :mod:`codemods.codes`), ``name`` (``"strands-agent"``),
  ``summary`` (one line) and ``trigger_words`` — the driver parses a file for this rule only if the file's text
  contains one of them (the fast path: files that cannot contain a target are never parsed);
* ``transform(module, ctx) -> module``: returns the new tree (or the same object when nothing applies).
  It must be **idempotent**: running it on its own output returns an equal tree (fixed point), so a rule must
  recognise already-migrated code and leave it alone. It records what it did with ``ctx.edit(code, node, msg)``
  and what it left for a human with ``ctx.todo(code, node, reason)``; a TODO left in the source is a comment
  added with :func:`with_todo_comment` (never code that raises), which does not duplicate an identical marker,
  so re-runs do not pile markers up.
* ``ctx.strategy`` is the ``--strategy`` flag (``"auto"|"rewrite"|"wrap"``); rules that have no choice ignore it.
* ``ctx.target`` is the osmosis-ai API the output is written for (``--target``, :data:`TARGETS`): ``"0.2"`` — the
  seeds' API (named sessions, ``ctx.samples`` + ``set_sample_reward``) — or ``"0.3"`` (spec/workflow-api.md §6: one
  sample, ``ctx.sample`` + ``set_reward``, sessions without names, ``create_rollout_server`` from
  ``osmosis_ai.rollout.server``). Every rule that writes sessions, graders or serving code reads it.
* A rule never touches a node carrying the opt-out marker (:func:`has_skip_marker`): ``# osmosis-migrate: skip``
  as a trailing comment on a ``class``/``def`` header or statement line, or as a comment line right above it.
  A file containing ``# osmosis-migrate: skip-file`` anywhere is not migrated at all (the driver checks that).

Rules transform text only: no rule imports ``osmosis_compat`` runtime code.

Helpers here: :class:`ImportTable` (what a local name refers to — aliases, ``import pkg as p``, star imports),
:func:`add_imports` / :func:`remove_unused_imports` (imports added once, unused ones dropped),
:func:`with_todo_comment`, :func:`has_skip_marker`, :func:`todo_marker`.
"""

from __future__ import annotations

import ast
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Union

import libcst as cst

from codemods import codes
from codemods.markers import group_comments, marker_text
from codemods.options import DEFAULT_TARGET, STRATEGIES, TARGETS  # noqa: F401  (re-exported)
from codemods.visit import visit as fast_visit

SKIP_FILE_MARKER = "osmosis-migrate: skip-file"
SKIP_MARKER = "osmosis-migrate: skip"
TODO_PREFIX = "# TODO(osmosis-migrate"
_SKIP_RE = re.compile(r"#\s*osmosis-migrate:\s*skip\b(?!-)")


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

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_AST_FIELDS: dict[type, tuple[str, ...]] = {}  # per ast node type: its fields, but ``ctx`` (Load/Store/Del: no names)


def _count_ast_names(root: ast.AST, counts: dict[str, int]) -> None:
    """Add to ``counts`` the names under ``root`` (itself included) as ``ast.walk`` would find them: Name ids, arg
    names, def/class names, identifier-like string constants, import aliases (the bound name). An explicit stack
    and per-type field lists instead of ``ast.walk`` (its generators per node cost more than the counting); the same
    breadth-first order, so the names enter ``counts`` in the same order."""
    stack = deque([root])
    pop, push, extend = stack.popleft, stack.append, stack.extend
    fields_of = _AST_FIELDS
    AST = ast.AST
    while stack:
        node = pop()
        kind = type(node)
        name = None
        if kind is ast.Name:
            name = node.id
        elif kind is ast.Constant:
            value = node.value
            if type(value) is str and value.isidentifier():
                name = value
        elif kind is ast.arg:
            name = node.arg
        elif kind is ast.alias:
            name = node.asname or node.name.split(".")[0]
        elif kind in _DEFS:
            name = node.name
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = tuple(f for f in kind._fields if f != "ctx")
        for f in fields:
            value = getattr(node, f, None)
            if type(value) is list:
                extend([v for v in value if isinstance(v, AST)])
            elif isinstance(value, AST):
                push(value)
_UNKNOWN: list = []  # a name count the ast could not give (identity-compared)


@dataclass
class RuleContext:
    """Per-file state shared by the rules of one run: the options, and the edits/TODOs recorded so far.

    Line numbers are those of the *statement* a node is (or is in), looked up in a statement → line map built
    once per file from CPython's ``ast`` (cheap: no libcst metadata pass). Rules keep untouched statements
    identical (they rebuild only what they change), so nodes of the input keep resolving after earlier rules
    ran; pass the enclosing statement when recording an edit on an expression. Unknown → 0.
    """

    strategy: str = "auto"
    filename: str = "<string>"
    target: str = DEFAULT_TARGET  # "0.2" | "0.3": the osmosis-ai API the output is written for
    edits: list[Edit] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    module: cst.Module | None = None
    lines: dict[int, int] | None = field(default=None, repr=False)
    origin: cst.Module | None = field(default=None, repr=False)  # the parsed input
    tree: Optional[ast.Module] = field(default=None, repr=False)  # its CPython ast, when the driver has it
    # cross-file facts of the run (codemods.analysis.repo.RepoFacts), when the driver built them (run_many)
    repo: Optional[object] = field(default=None, repr=False)
    source: Optional[bytes] = field(default=None, repr=False)  # the input's bytes, when the driver has them
    _counts: Optional[list[dict[str, int]]] = field(default=None, repr=False)
    _spans: Optional[list[Optional[bytes]]] = field(default=None, repr=False)
    _names: dict[int, tuple[cst.CSTNode, frozenset[str]]] = field(default_factory=dict, repr=False)

    def set_source(self, module: cst.Module, tree: Optional[ast.Module], source: Optional[bytes] = None) -> None:
        """Tell the context the input tree, its ``ast`` and its bytes (lines and name counts are then derived
        cheaply)."""
        self.origin, self.tree, self.module, self.lines = module, tree, module, None
        self.source, self._counts, self._spans = source, None, None
        self._names = {}

    def top_level_name_counts(self, module: cst.Module) -> Optional[list[dict[str, int]]]:
        """Per top-level statement of ``module``: how often each name is referenced — from the ``ast`` (fast)
        when ``module`` is the unchanged input, else None (the caller counts with libcst). Computed once per
        input (every rule that sees the unchanged input shares it): callers must not modify it."""
        if module is not self.origin or self.tree is None:
            return None
        if self._counts is None:
            self._counts = self._count_names(module)
        return self._counts if self._counts is not _UNKNOWN else None

    def _count_names(self, module: cst.Module) -> list[dict[str, int]]:  # _UNKNOWN: shapes disagree
        out: list[dict[str, int]] = []
        ast_body = self.tree.body
        ai = 0
        for stmt in module.body:
            n = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
            counts: dict[str, int] = {}
            for a in ast_body[ai : ai + n]:
                _count_ast_names(a, counts)
            ai += n
            out.append(counts)
        if ai != len(ast_body):
            return _UNKNOWN  # shapes disagree: let libcst count
        return out

    def statement_names(self, stmt: cst.CSTNode) -> frozenset[str]:
        """:func:`used_names` of one statement, memoised for this file by the statement's identity (untouched
        statements are shared by every rule's output)."""
        hit = self._names.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        names = frozenset(statement_names(stmt))
        self._names[id(stmt)] = (stmt, names)
        return names

    def used_names_among(self, module: cst.Module, candidates: Iterable[str]) -> set[str]:
        """``set(candidates) & used_names(module)``, without walking every statement: a statement of the input
        that is still there is walked only when a candidate occurs in its source text (a name libcst sees is
        text of that statement, so one that does not occur there is not used by it)."""
        wanted = set(candidates)
        if not wanted:
            return set()
        spans = self._statement_sources()
        origin_index = {id(st): i for i, st in enumerate(self.origin.body)} if spans is not None else {}
        encoding = self.origin.encoding if self.origin is not None else "utf-8"
        needles: dict[str, Optional[bytes]] = {}
        for name in wanted:
            try:
                needles[name] = name.encode(encoding)
            except (UnicodeError, LookupError):
                needles[name] = None  # cannot say from the bytes: walk
        found: set[str] = set()
        for stmt in module.body:
            todo = wanted - found
            if not todo:
                break
            i = origin_index.get(id(stmt))
            if i is not None and spans is not None and self.origin.body[i] is stmt and spans[i] is not None:
                text = spans[i]
                todo = {n for n in todo if needles[n] is None or needles[n] in text}
                if not todo:
                    continue
            found |= todo & self.statement_names(stmt)
        return found

    def _statement_sources(self) -> Optional[list[Optional[bytes]]]:
        """The source bytes of each top-level statement of the input (from the first line of its decorators to
        its last line), None where unknown; None when the driver gave no source."""
        if self._spans is not None:
            return self._spans
        if self.source is None or self.tree is None or self.origin is None or b"\r" in self.source \
                or b"\x0c" in self.source:
            return None  # line numbers are only trusted for plain "\n" line ends
        lines = self.source.split(b"\n")
        spans: list[Optional[bytes]] = []
        ast_body = self.tree.body
        ai = 0
        for stmt in self.origin.body:
            n = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
            nodes = ast_body[ai: ai + n]
            ai += n
            if len(nodes) != n:
                spans.append(None)
                continue
            start = min([nodes[0].lineno] + [d.lineno for d in getattr(nodes[0], "decorator_list", [])])
            end = max(getattr(a, "end_lineno", None) or 0 for a in nodes)
            spans.append(b"\n".join(lines[start - 1: end]) if end >= start else None)
        if ai != len(ast_body):
            spans = [None] * len(self.origin.body)
        self._spans = spans
        return spans

    def index_lines(self, module: cst.Module, tree: Optional[ast.Module] = None) -> None:
        """Build the statement → line map of ``module`` (``tree``: its ``ast``, if the caller has it)."""
        if tree is None:
            try:
                tree = ast.parse(module.code)
            except (SyntaxError, ValueError, RecursionError):
                self.lines = {}
                return
        self.lines = statement_lines(module, tree)

    def line_of(self, node_or_line: NodeOrLine) -> int:
        """1-based line of a statement of the input (0 when unknown, e.g. a node a rule just built)."""
        if node_or_line is None:
            return 0
        if isinstance(node_or_line, int):
            return node_or_line
        if self.lines is None:
            if self.origin is not None:
                self.index_lines(self.origin, self.tree)
            elif self.module is not None:
                self.index_lines(self.module)
            else:
                return 0
        return self.lines.get(id(node_or_line), 0)

    def edit(self, code: str, node_or_line: NodeOrLine, message: str) -> None:
        """Record an edit made by rule code ``code`` (an edit code of :data:`codemods.codes.REGISTRY`) at
        ``node_or_line``."""
        self.edits.append(Edit(_registered(code, "edit"), self.line_of(node_or_line), message))

    def todo(self, code: str, node_or_line: NodeOrLine, reason: str) -> None:
        """Record a TODO left for a human (the caller also adds the comment with :func:`with_todo_comment`);
        ``code`` is a TODO code of :data:`codemods.codes.REGISTRY`."""
        self.todos.append(Todo(_registered(code, "todo"), self.line_of(node_or_line), reason))


def _registered(code: str, kind: str) -> str:
    """``code`` when the registry declares it as a code of ``kind``; else a ``ValueError`` naming it — so a typo
    cannot ship a code that docs/migrate.md does not document."""
    entry = codes.REGISTRY.get(code)
    if entry is None:
        raise ValueError(f"code {code!r} is not declared in codemods/codes.py (REGISTRY): declare it there and "
                         "document it in docs/migrate.md's Codes table, or pass the constant of a declared code")
    if entry.kind != kind:
        raise ValueError(f"code {code!r} is a{'n' if entry.kind == 'edit' else ''} {entry.kind} code "
                         f"({entry.title}); it cannot be recorded as a{'n' if kind == 'edit' else ''} {kind}")
    return code


def statement_lines(module: cst.Module, tree: ast.Module) -> dict[int, int]:
    """id(libcst statement / small statement) → line, by walking both statement trees in parallel."""
    out: dict[int, int] = {}
    try:
        _statement_lines_walk(module.body, tree.body, out)
    except (AttributeError, TypeError):  # shapes disagree somewhere: lines stay unknown there
        pass
    return out


def _suite_statements(block: cst.BaseSuite) -> list:
    """The statements of a block, a one-line suite as one statement line (for :func:`statement_lines`)."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [cst.SimpleStatementLine(body=list(block.body))] if isinstance(block, cst.SimpleStatementSuite) else []


def _statement_lines_walk(cst_stmts: Sequence[cst.CSTNode], ast_stmts: Sequence[ast.stmt], out: dict[int, int]) -> None:
    """Fill ``out`` (id of a libcst statement → line) from two parallel statement lists, recursing into bodies."""
    ai = 0
    for stmt in cst_stmts:
        if ai >= len(ast_stmts):
            return
        if isinstance(stmt, cst.SimpleStatementLine):
            out[id(stmt)] = ast_stmts[ai].lineno
            for small in stmt.body:
                if ai < len(ast_stmts):
                    out[id(small)] = ast_stmts[ai].lineno
                ai += 1
            continue
        a = ast_stmts[ai]
        ai += 1
        out[id(stmt)] = a.lineno
        body = getattr(stmt, "body", None)
        if isinstance(body, cst.SimpleStatementSuite):
            for small in body.body:
                out[id(small)] = a.lineno
        elif isinstance(body, cst.IndentedBlock) and hasattr(a, "body"):
            _statement_lines_walk(body.body, a.body, out)
        if isinstance(stmt, cst.If) and stmt.orelse is not None:
            if isinstance(stmt.orelse, cst.If):
                _statement_lines_walk([stmt.orelse], a.orelse, out)
            else:
                _statement_lines_walk(_suite_statements(stmt.orelse.body), a.orelse, out)
        elif isinstance(stmt, (cst.For, cst.While)) and stmt.orelse is not None:
            _statement_lines_walk(_suite_statements(stmt.orelse.body), a.orelse, out)
        elif isinstance(stmt, (cst.Try, cst.TryStar)) and hasattr(a, "handlers"):
            for h, ah in zip(stmt.handlers, a.handlers):
                _statement_lines_walk(_suite_statements(h.body), ah.body, out)
            if stmt.orelse is not None:
                _statement_lines_walk(_suite_statements(stmt.orelse.body), a.orelse, out)
            if stmt.finalbody is not None:
                _statement_lines_walk(_suite_statements(stmt.finalbody.body), a.finalbody, out)


class Rule(ABC):
    """A migration rule; see the module docstring for the contract."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    trigger_words: ClassVar[tuple[str, ...]]
    # the rule reads cross-file facts (codemods.analysis.repo): the driver builds them for a run over a tree and
    # adds the files that import a candidate of this rule
    uses_repo: ClassVar[bool] = False

    @classmethod
    def offers(cls, tree: cst.Module, table: "ImportTable", ctx: "RuleContext", module: str,
               names: Sequence[str]) -> dict[str, Any]:
        """What the module ``tree`` (importable as ``module``) offers other files of the run for ``names`` they
        import from it: name → :class:`codemods.analysis.repo.Verdict`. Rules that write rollout versions of shared
        names override this; the default offers nothing."""
        return {}

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
    """The exact comment text of a TODO marker, on one line (the driver wraps it: :mod:`codemods.markers`)."""
    return marker_text(code, reason)


StatementT = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


def _comment_values(lines: Sequence[cst.EmptyLine]) -> list[Optional[str]]:
    return [l.comment.value if l.comment is not None else None for l in lines]


def with_todo_comment(stmt: StatementT, code: str, reason: str) -> StatementT:
    """``stmt`` with a TODO marker comment line above it, unless the same marker is already there — on one line
    or wrapped over several (:func:`codemods.markers.group_comments`), as a previous run left it.

    The marker is written as one line: the driver wraps it at the file's line length once the indentation of the
    rendered line is known (:func:`codemods.markers.wrap_long_markers`)."""
    marker = todo_marker(code, reason)
    comments = _comment_values(stmt.leading_lines)
    if any(marker_text(c, r) == marker for _, _, c, r in group_comments(comments)):
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
    present = {marker_text(c, r) for _, _, c, r in group_comments(_comment_values(module.header))}
    first = module.body[0]
    lines = list(first.leading_lines)
    drop = {
        k for start, end, c, r in group_comments(_comment_values(lines)) if marker_text(c, r) in present
        for k in range(start, end)
    }
    if not drop:
        return module
    kept = [l for k, l in enumerate(lines) if k not in drop]
    return module.with_changes(body=[first.with_changes(leading_lines=kept), *module.body[1:]])


def has_todo_comment(stmt: StatementT, code: str) -> bool:
    """Whether ``stmt`` already carries a TODO marker of ``code`` (any reason)."""
    prefix = f"# TODO(osmosis-migrate {code})"
    return any(l.comment is not None and l.comment.value.startswith(prefix) for l in stmt.leading_lines)


def without_todo_comments(stmt: StatementT, code: str) -> StatementT:
    """``stmt`` without the TODO markers of ``code`` above it (a rule that now migrates what it refused before
    drops its stale marker; a new reason replaces the old one instead of piling up)."""
    lines = list(stmt.leading_lines)
    drop = {k for start, end, c, _ in group_comments(_comment_values(lines)) if c == code for k in range(start, end)}
    kept = [l for k, l in enumerate(lines) if k not in drop]
    return stmt if not drop else stmt.with_changes(leading_lines=kept)


def without_outdated_todos(stmt: StatementT, code: str, reasons: Iterable[str]) -> StatementT:
    """``stmt`` without the markers of ``code`` above it that say none of ``reasons`` — the markers of that code an
    earlier run (or an earlier version of the tool, or a hand edit of its text) left on this statement, which this
    run replaces. The caller passes every reason of ``code`` it writes on the statement in this run, so a marker it
    writes again stays as it is (wrapped or not). Only whole markers (``# TODO(osmosis-migrate CODE): …`` and their
    ``#   `` continuation lines) of that one code go: other codes and every other comment stay."""
    current = {marker_text(code, r) for r in reasons}
    lines = list(stmt.leading_lines)
    drop = {k for start, end, c, r in group_comments(_comment_values(lines))
            if c == code and marker_text(c, r) not in current for k in range(start, end)}
    return stmt if not drop else stmt.with_changes(leading_lines=[l for k, l in enumerate(lines) if k not in drop])


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

_STRANDS_HOME = "osmosis_ai.rollout.integrations.agents.strands"

#: Import paths of ``osmosis_ai`` objects that moved: (old module, name) → the module the same object is imported
#: from now. ``from osmosis_ai.rollout import OsmosisStrandsAgent`` and the import from ``…agents.strands`` bind the
#: same class (a re-export 0.3 removed). The imports rule rewrites the old paths (OM401); every other rule must treat
#: a name bound through either path as bound to that object (:meth:`ImportTable.binds`) — otherwise a rule that runs
#: before the imports rule sees "something else" where the next run sees the real thing, and the output is no
#: fixed point.
MOVED_IMPORTS: dict[tuple[str, str], str] = {
    **{(old, n): _STRANDS_HOME for old in (
        "osmosis_ai.rollout", "osmosis_ai.rollout.integrations", "osmosis_ai.rollout.integrations.agents"
    ) for n in ("OsmosisRolloutModel", "OsmosisStrandsAgent")},
    **{("osmosis_ai.rollout.test_mode", n): "osmosis_ai.rollout.eval.test_mode" for n in (
        "ExternalLLMClient", "InteractiveLLMClient", "InteractiveRunner", "InteractiveStep",
        "LocalTestBatchResult", "LocalTestRunResult", "LocalTestRunner", "ProviderError",
    )},
}


def current_path(qualified: str) -> str:
    """Where the object ``qualified`` names is imported from now (``osmosis_ai.rollout.OsmosisStrandsAgent`` →
    ``osmosis_ai.rollout.integrations.agents.strands.OsmosisStrandsAgent``); other names unchanged."""
    mod, _, name = qualified.rpartition(".")
    home = MOVED_IMPORTS.get((mod, name))
    return qualified if home is None else f"{home}.{name}"


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = dotted_name(expr.value)
        return None if head is None else f"{head}.{expr.attr.value}"
    return None


def literal_eval(text: str) -> Any:
    """``ast.literal_eval(text)``, same value and same errors; a plain constant (a string or number token) is read
    from the parsed tree directly: ``ast.literal_eval`` defines its converters as nested functions that call each
    other, a reference cycle per call left for the cyclic GC."""
    tree = ast.parse(text.lstrip(" \t"), mode="eval")
    if isinstance(tree.body, ast.Constant):
        return tree.body.value
    return ast.literal_eval(tree)


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

    def binds(self, local: str, qualified: str) -> bool:
        """Whether ``from … import`` binds ``local`` to the object ``qualified`` names — through its current path
        or one it moved from (:data:`MOVED_IMPORTS`)."""
        bound = self.names.get(local)
        return bound is not None and (bound == qualified or current_path(bound) == current_path(qualified))

    def local_names_for(self, qualified: str) -> list[str]:
        """Local names bound to ``qualified`` by a ``from … import``."""
        return [local for local, q in self.names.items() if q == qualified]


def _iter_imports(module: cst.Module) -> list[Union[cst.Import, cst.ImportFrom]]:
    """Import statements at module level, including those inside top-level ``if``/``try`` blocks
    (``try: import x except ImportError``, ``if TYPE_CHECKING:``). Imports inside functions are not considered:
    scanning statements only keeps the rules' cost independent of the size of the code."""
    found: list[Union[cst.Import, cst.ImportFrom]] = []
    _scan_imports(module.body, 0, found)
    return found


def _scan_imports(stmts: Sequence[cst.CSTNode], depth: int, found: list[Union[cst.Import, cst.ImportFrom]]) -> None:
    """Append to ``found`` the imports of ``stmts``, in order, looking into ``if``/``try`` blocks up to depth 3."""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            found.extend(s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom)))
        elif depth < 3 and isinstance(stmt, (cst.If, cst.Try, cst.TryStar, cst.Else, cst.ExceptHandler, cst.Finally)):
            body = getattr(stmt, "body", None)
            if isinstance(body, cst.IndentedBlock):
                _scan_imports(body.body, depth + 1, found)
            for extra in ("orelse", "finalbody"):
                part = getattr(stmt, extra, None)
                if part is not None:
                    _scan_imports([part], depth + 1, found)
            for handler in getattr(stmt, "handlers", ()):
                _scan_imports([handler], depth + 1, found)


# --------------------------------------------------------------------------------------------------- imports

ImportSpec = tuple[str, str]  # (module, name): ``from module import name``


def add_imports(module: cst.Module, wanted: Sequence[ImportSpec]) -> cst.Module:
    """``module`` with ``from mod import name`` for every ``wanted`` pair not already bound (added once; a name
    imported from a path the object moved from counts as bound: the imports rule moves that import).

    Names go into an existing top-level ``from mod import …`` when there is one, else a new statement is placed
    after the last top-level import (or after the docstring / ``__future__`` imports).
    """
    table = ImportTable.of(module)
    missing: dict[str, list[str]] = {}
    for mod, name in wanted:
        if table.binds(name, f"{mod}.{name}") or mod in table.stars:
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
        separator = names[0].comma if len(names) > 1 else None
        if (
            imp.lpar is not None
            and isinstance(separator, cst.Comma)
            and isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace)
        ):
            # One name per line: new names get their own lines, and the trailing-comma style is kept.
            trailing = names[-1].comma
            names[-1] = names[-1].with_changes(comma=separator)
            for j, n in enumerate(extra):
                names.append(cst.ImportAlias(name=cst.Name(n), comma=trailing if j == len(extra) - 1 else separator))
            body[i] = stmt.with_changes(body=[imp.with_changes(names=names)])
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


def _dotted_expr(dotted: str) -> Union[cst.Name, cst.Attribute]:
    parts = dotted.split(".")
    expr: Union[cst.Name, cst.Attribute] = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def _from_import(mod: str, names: Sequence[str], module: cst.Module) -> cst.SimpleStatementLine:
    """``from mod import a, b`` — one name per line in parentheses (black/ruff style) past 88 characters.
    Built node by node: parsing a snippet costs more than the whole rule on a small file."""
    space = cst.SimpleWhitespace(" ")
    if len(f"from {mod} import {', '.join(names)}") <= 88:
        aliases = [
            cst.ImportAlias(cst.Name(n), comma=cst.Comma(whitespace_after=space) if i < len(names) - 1 else cst.MaybeSentinel.DEFAULT)
            for i, n in enumerate(names)
        ]
        return cst.SimpleStatementLine([cst.ImportFrom(module=_dotted_expr(mod), names=aliases)])

    def line_break(indent: str) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True, last_line=cst.SimpleWhitespace(indent)
        )

    indent = module.default_indent
    aliases = [
        cst.ImportAlias(cst.Name(n), comma=cst.Comma(whitespace_after=line_break(indent if i < len(names) - 1 else "")))
        for i, n in enumerate(names)
    ]
    return cst.SimpleStatementLine([cst.ImportFrom(
        module=_dotted_expr(mod), names=aliases,
        lpar=cst.LeftParen(whitespace_after=line_break(indent)), rpar=cst.RightParen(),
    )])


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
    return statement_names(module)


def statement_names(node: cst.CSTNode) -> set[str]:
    """:func:`used_names` of any node: every Name under it outside import statements, attribute and keyword names
    included, and string literals that read as an identifier."""
    seen: set[str] = set()
    fast_visit(node, _StatementNames(seen))
    return seen


class _StatementNames(cst.CSTVisitor):
    """Collects into ``seen`` the Names outside imports and the string literals that read as identifiers."""

    def __init__(self, seen: set[str]) -> None:
        super().__init__()
        self.seen = seen

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.add(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # names in string annotations / __all__ count as uses (conservative)
        val = node.value.strip("\"'rbuRBU")
        if val.isidentifier():
            self.seen.add(val)


def remove_unused_imports(
    module: cst.Module, candidates: Iterable[str], used: Optional[set[str]] = None
) -> tuple[cst.Module, list[str]]:
    """Drop the top-level imported names in ``candidates`` that are no longer used anywhere in ``module``.

    Only names a rule made unused should be passed (user imports that were already unused are left alone).
    ``used``: the names the module uses, if the caller already knows them (saves a pass). Returns the new module
    and the names removed. An import statement left empty goes, its blank lines/comments kept for the next
    statement. Statements that do not change keep their identity.
    """
    cands = set(candidates)
    if not cands:
        return module, []
    if used is None:
        used = used_names(module)
    dead = cands - used
    if not dead:
        return module, []
    removed: list[str] = []
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    changed = False
    for stmt in module.body:
        new_stmt: Optional[cst.BaseStatement] = stmt
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body):
            smalls = []
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    keep = []
                    for alias in small.names:
                        local = alias.evaluated_alias or alias.evaluated_name
                        if isinstance(small, cst.Import) and alias.asname is None:
                            local = local.split(".")[0]
                        if local in dead:
                            removed.append(local)
                        else:
                            keep.append(alias)
                    if not keep:
                        continue
                    if len(keep) != len(small.names):
                        keep[-1] = keep[-1].with_changes(comma=small.names[-1].comma)
                        small = small.with_changes(names=keep)
                smalls.append(small)
            if not smalls:
                new_stmt = None
            elif len(smalls) != len(stmt.body) or any(a is not b for a, b in zip(smalls, stmt.body)):
                smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                new_stmt = stmt.with_changes(body=smalls)
        if new_stmt is None:
            carried.extend(stmt.leading_lines)
            trailing = stmt.trailing_whitespace.comment if isinstance(stmt, cst.SimpleStatementLine) else None
            if trailing is not None:  # `import x  # why`: the comment outlives the import, as a line of its own
                carried.append(cst.EmptyLine(comment=trailing))
            changed = True
            continue
        if new_stmt is not stmt:
            changed = True
        if carried:
            lead = list(new_stmt.leading_lines)
            if lead and lead[0].comment is None and all(line.comment is None for line in carried):
                carried = []  # blank lines only, and the statement has its own: no doubled gap
            new_stmt = new_stmt.with_changes(leading_lines=[*carried, *lead])
            carried = []
        body.append(new_stmt)
    if not changed:
        return module, []
    return module.with_changes(body=body), sorted(set(removed))
