"""A read-only libcst traversal that does not rebuild the tree.

``node.visit(visitor)`` in libcst rebuilds every node it passes, also for a read-only :class:`libcst.CSTVisitor`
(``_visit_and_replace_children`` constructs and validates a new node from the visited children, and the
visitor's result is thrown away). On the rules' analyses that reconstruction was most of the cost of a visit.
:func:`visit` calls the same visitor methods in the same order — ``on_visit`` (so ``visit_<Node>``; ``False``
skips the children), the children in the order libcst visits them, ``on_leave`` (so ``leave_<Node>``) — and only
reads the tree. The order of the children is libcst's own: read once per node class from the field names its
``_visit_and_replace_children`` passes to ``visit_required``/``visit_optional``/``visit_sequence``/…, in source
order (the lexical order of the code, e.g. ``body`` before ``test`` in ``a if test else b``). Attribute hooks
(``visit_<Node>_<field>``) are not called: no visitor of the rules defines one (a visitor that does is walked
by libcst itself).

:class:`Transformer` is the base of the codemods' transformers: libcst's own walk, without the attribute-hook
dispatch none of them needs.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from typing import Iterator, Optional, TypeVar

import libcst as cst

_N = TypeVar("_N", bound=cst.CSTNode)

_ORDER: dict[type, Optional[tuple[str, ...]]] = {}
_VISIT_HELPERS = ("visit_required", "visit_optional", "visit_sequence", "visit_sentinel", "visit_iterable",
                  "visit_body_sequence", "visit_body_iterable")


def visited_fields(cls: type) -> Optional[tuple[str, ...]]:
    """The fields libcst visits on a ``cls`` node, in its visiting order; None when its source cannot be read
    (then :func:`visit` lets libcst walk that node)."""
    if cls in _ORDER:
        return _ORDER[cls]
    order: Optional[tuple[str, ...]] = None
    for klass in cls.__mro__:
        method = klass.__dict__.get("_visit_and_replace_children")
        if method is None:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
        except (OSError, TypeError, SyntaxError):
            break
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id in _VISIT_HELPERS and len(n.args) >= 2
                 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)]
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        names: list[str] = []
        for call in calls:
            if call.args[1].value not in names:  # `names` of ImportFrom: one of two visits, by type
                names.append(call.args[1].value)
        if not calls and any(isinstance(n, ast.Attribute) and "visit" in n.attr for n in ast.walk(tree)):
            break  # a method that visits its children in some other way: libcst walks that node
        order = tuple(names)
        break
    _ORDER[cls] = order
    return order


def children(node: cst.CSTNode, whitespace: bool = True) -> Iterator[cst.CSTNode]:
    """The children of ``node`` in the order libcst visits them (its lexical order); ``whitespace=False``: without
    whitespace nodes (:data:`WHITESPACE_TYPES`), for walks that never look at them."""
    kind = kind_of if whitespace else solid_kind_of
    order = visited_fields(type(node))
    if order is None:
        for child in node.children:
            if kind(child) == 1:
                yield child
        return
    for name in order:
        value = getattr(node, name)
        k = kind(value)
        if k == 1:
            yield value
        elif k == 2:
            for item in value:
                if kind(item) == 1:
                    yield item


def _has_attribute_hooks(cls: type) -> bool:
    """Whether the visitor's own classes (not libcst's typed bases, which declare them all) define an attribute
    hook ``visit_<Node>_<field>`` / ``leave_<Node>_<field>``."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("libcst"):
            continue
        for name in klass.__dict__:
            prefix, _, rest = name.partition("_")
            if prefix in ("visit", "leave") and rest[:1].isupper() and "_" in rest:
                return True
    return False


class Transformer(cst.CSTTransformer):
    """A :class:`libcst.CSTTransformer` (libcst's own walk and rebuilt nodes) with cheaper dispatch.

    * Attribute hooks: libcst calls ``on_visit_attribute`` / ``on_leave_attribute`` before and after every field of
      every node, and each call builds the name ``visit_<Node>_<field>`` and looks it up — only to find libcst's own
      no-op stub (~10 % of a run over agent files). Here both are no-ops, the same as the stubs, unless a subclass
      defines such a hook: then libcst's dispatch is restored for that class.
    * ``visit_<Node>`` / ``leave_<Node>`` are looked up once per class and node type (libcst builds the name and
      looks it up on every node), libcst's no-op stubs left out; they are called as libcst calls them.
    * Whitespace (:data:`WHITESPACE_TYPES`, over half of a tree's nodes, holding only whitespace) is not walked
      into when the class has no hook on a whitespace type and no ``on_visit``/``on_leave`` of its own: a whitespace
      node is kept as it is instead of being rebuilt as an equal copy (the same code; the output shares the input's
      whitespace nodes, as it shares every subtree a transformer's ``visit_<Node>`` returns ``False`` for)."""

    _codemods_hooks: dict = {}
    _codemods_skip_whitespace = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if _has_attribute_hooks(cls):
            cls.on_visit_attribute = cst.CSTTransformer.on_visit_attribute  # type: ignore[method-assign]
            cls.on_leave_attribute = cst.CSTTransformer.on_leave_attribute  # type: ignore[method-assign]
        cls._codemods_hooks = {}  # node type → (visit_<Node> or None, leave_<Node> or None), per class
        own = any(name in klass.__dict__ for klass in cls.__mro__[: cls.__mro__.index(Transformer)]
                  for name in ("on_visit", "on_leave"))
        cls._codemods_skip_whitespace = not own and not _whitespace_hooks(cls)

    def _codemods_hooks_of(self, kind: type) -> tuple:
        cls = type(self)
        if cls._codemods_skip_whitespace and kind in WHITESPACE_TYPES:
            hooks: tuple = (_SKIP, None)
        else:
            hooks = (_hook(cls, f"visit_{kind.__name__}"), _hook(cls, f"leave_{kind.__name__}"))
        cls._codemods_hooks[kind] = hooks
        return hooks

    def on_visit(self, node: cst.CSTNode) -> bool:
        hooks = self._codemods_hooks.get(type(node)) or self._codemods_hooks_of(type(node))
        enter = hooks[0]
        if enter is None:
            return True
        if enter is _SKIP:
            return False
        return enter(self, node) is not False

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        hooks = self._codemods_hooks.get(type(original_node)) or self._codemods_hooks_of(type(original_node))
        leave = hooks[1]
        return updated_node if leave is None else leave(self, original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


_SKIP = object()  # Transformer: a whitespace node not walked into


_TABLE = "_codemods_fast_visit"  # per visitor class, stored on the class (classes defined in functions die with it)
_WALK_KINDS = "_codemods_walk_kinds"  # per visitor class with its own on_visit/on_leave: the kinds it is walked by


def visit(node: _N, visitor: cst.CSTVisitor) -> _N:
    """``node.visit(visitor)`` for a read-only ``visitor``, without rebuilding the tree (same calls, same order)."""
    cls = type(visitor)
    table = cls.__dict__.get(_TABLE)
    if table is None:
        # None: libcst walks it (a transformer, or attribute hooks); {}: on_visit/on_leave are overridden; else
        # node type → (visit_<Node>, leave_<Node>, children order), filled as node types are met
        if not isinstance(visitor, cst.CSTVisitor) or _has_attribute_hooks(cls):
            table = False
        elif cls.on_visit is cst.CSTVisitor.on_visit and cls.on_leave is cst.CSTVisitor.on_leave:
            table = {}
        else:
            table = True
        setattr(cls, _TABLE, table)
    if table is False:
        return node.visit(visitor)
    if table is True:
        # own on_visit/on_leave: whitespace is skipped only when the class says they ignore it (skip_whitespace)
        kinds = cls.__dict__.get(_WALK_KINDS)
        if kinds is None:
            kinds = SOLID_KINDS if getattr(cls, "skip_whitespace", False) and not _whitespace_hooks(cls) else NODE_KINDS
            setattr(cls, _WALK_KINDS, kinds)
        _walk(node, visitor, kinds)
    else:
        kinds = table.get(_KINDS)
        if kinds is None:
            # a visitor with no hook of its own on whitespace nodes only calls libcst's no-op stubs there: their
            # subtrees (whitespace holds only whitespace) are not walked at all — over half of the nodes of a tree;
            # nor are the tokens it has no hook on (commas, dots, brackets, operators: only whitespace below them)
            kinds = table[_KINDS] = NODE_KINDS if _whitespace_hooks(cls) else _Kinds(cls)
        _walk_dispatch(node, visitor, table, kinds)
    return node


def _whitespace_hooks(cls: type) -> bool:
    """Whether the visitor class has a visit/leave hook of its own on a whitespace node type."""
    return any(_hook(cls, f"{prefix}_{t.__name__}") for t in WHITESPACE_TYPES for prefix in ("visit", "leave"))


def _hook(cls: type, name: str):
    """The visitor's ``visit_<Node>``/``leave_<Node>`` method, None when it is libcst's no-op stub (it returns None:
    the same as no hook for the walk)."""
    fn = getattr(cls, name, None)
    return None if fn is None or getattr(fn, "_is_no_op", False) else fn


def _order_of(kind: type) -> Optional[tuple[str, ...]]:
    try:
        return _ORDER[kind]
    except KeyError:
        return visited_fields(kind)


NODE_KINDS: dict[type, int] = {}  # type of a field value → 1 a node, 2 a list/tuple, 0 anything else


def kind_of(value: object) -> int:
    """What a field value is: 1 a node, 2 a list/tuple, 0 anything else (``isinstance`` against libcst's ABCs is
    slow; the answer per type is cached in ``NODE_KINDS``)."""
    t = type(value)
    k = NODE_KINDS.get(t)
    if k is None:
        k = NODE_KINDS[t] = 1 if isinstance(value, cst.CSTNode) else 2 if isinstance(value, (list, tuple)) else 0
    return k


def is_node(value: object) -> bool:
    """``isinstance(value, libcst.CSTNode)``, cached per type."""
    return kind_of(value) == 1


# whitespace node types: their fields hold only whitespace nodes (or strings), never code
WHITESPACE_TYPES: frozenset[type] = frozenset({
    cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline, cst.Comment, cst.EmptyLine,
})
SOLID_KINDS: dict[type, int] = {}  # NODE_KINDS, with whitespace nodes as 0 (not walked)
_KINDS = "kinds"  # key of a dispatch table: the kinds it walks by (its node-type keys are types)


def solid_kind_of(value: object) -> int:
    """:func:`kind_of`, but 0 for a whitespace node (walks that skip whitespace), cached in ``SOLID_KINDS``."""
    t = type(value)
    k = SOLID_KINDS.get(t)
    if k is None:
        k = SOLID_KINDS[t] = 0 if t in WHITESPACE_TYPES else kind_of(value)
    return k


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor, kinds: dict[type, int]) -> None:
    if visitor.on_visit(node):
        order = _order_of(type(node))
        if order is None:
            for child in node.children:
                if _kind(kinds, child) == 1:
                    _walk(child, visitor, kinds)
        else:
            for name in order:
                value = getattr(node, name)
                k = kinds.get(type(value))
                if k is None:
                    k = _kind(kinds, value)
                if k == 1:
                    _walk(value, visitor, kinds)
                elif k == 2:
                    for item in value:
                        k = kinds.get(type(item))
                        if k == 1 or (k is None and _kind(kinds, item) == 1):
                            _walk(item, visitor, kinds)
    visitor.on_leave(node)


def _walk_dispatch(node: cst.CSTNode, visitor: cst.CSTVisitor, table: dict, kinds: dict[type, int]) -> None:
    kind = type(node)
    hooks = table.get(kind)
    if hooks is None:
        cls = type(visitor)
        hooks = table[kind] = (_hook(cls, f"visit_{kind.__name__}"), _hook(cls, f"leave_{kind.__name__}"),
                               _order_of(kind))
    enter, leave, order = hooks
    if enter is None or enter(visitor, node) is not False:
        if order is None:
            for child in node.children:
                if _kind(kinds, child) == 1:
                    _walk_dispatch(child, visitor, table, kinds)
        else:
            for name in order:
                value = getattr(node, name)
                k = kinds.get(type(value))
                if k is None:
                    k = _kind(kinds, value)
                if k == 1:
                    _walk_dispatch(value, visitor, table, kinds)
                elif k == 2:
                    for item in value:
                        k = kinds.get(type(item))
                        if k == 1 or (k is None and _kind(kinds, item) == 1):
                            _walk_dispatch(item, visitor, table, kinds)
    if leave is not None:
        leave(visitor, node)


class _Kinds(dict):
    """:data:`SOLID_KINDS` for one visitor class, with the :data:`TOKEN_TYPES` it has no hook on as 0 (not walked:
    their fields are whitespace, which is not walked either)."""

    def __init__(self, visitor_class: type) -> None:
        super().__init__()
        self.visitor_class = visitor_class


def _kind(kinds: dict[type, int], value: object) -> int:
    if kinds is NODE_KINDS:
        return kind_of(value)
    k = solid_kind_of(value)
    if isinstance(kinds, _Kinds):
        t = type(value)
        if k == 1 and t in TOKEN_TYPES and not (_hook(kinds.visitor_class, f"visit_{t.__name__}")
                                                  or _hook(kinds.visitor_class, f"leave_{t.__name__}")):
            k = 0
        kinds[t] = k
    return k


def _token_types() -> frozenset[type]:
    """libcst's node types whose fields are all whitespace (``whitespace_before``/``_after``/``_between``), or that
    have none: the tokens (commas, dots, brackets, colons, operators, ``*`` of ``import *``…)."""
    out = set()
    for name in dir(cst):
        t = getattr(cst, name)
        if isinstance(t, type) and issubclass(t, cst.CSTNode) and dataclasses.is_dataclass(t) \
                and not getattr(t, "__abstractmethods__", None) \
                and all(f.name.startswith("whitespace") for f in dataclasses.fields(t)):
            out.add(t)
    return frozenset(out)


TOKEN_TYPES: frozenset[type] = _token_types()


def parents(root: cst.CSTNode, whitespace: bool = True) -> dict[int, cst.CSTNode]:
    """id(node) → its parent, for every node under ``root`` (the tree is only read); ``whitespace=False``: whitespace
    nodes left out (cheaper, when only the parents of code nodes are looked up)."""
    out: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in children(node, whitespace):
            out[id(child)] = node
            stack.append(child)
    return out


def replace_node(
    root: _N, old: cst.CSTNode, new: cst.CSTNode, parent_of: Optional[dict[int, cst.CSTNode]] = None,
) -> _N:
    """``root`` with the node ``old`` (by identity) replaced by ``new``: only the nodes on the path from ``root`` to
    ``old`` are rebuilt (a transformer would rebuild the whole tree to change one node)."""
    if old is root:
        return new  # type: ignore[return-value]
    parent_of = parents(root) if parent_of is None else parent_of
    node, replacement = old, new
    while node is not root:
        parent = parent_of[id(node)]
        changes = {}
        for name in visited_fields(type(parent)) or ():
            value = getattr(parent, name)
            if value is node:
                changes[name] = replacement
                break
            if isinstance(value, (list, tuple)) and any(item is node for item in value):
                changes[name] = [replacement if item is node else item for item in value]
                break
        else:
            raise ValueError(f"{type(node).__name__} not found under its parent {type(parent).__name__}")
        node, replacement = parent, parent.with_changes(**changes)
    return replacement  # type: ignore[return-value]
