"""Which files of a run can import which: the cheap passes that decide where the cross-file analysis
(:mod:`codemods.analysis.repo`) has to look — bytes searches and regular expressions first, Python's own ``ast``
on the few files they cannot rule out; never libcst.

:func:`scan_imports` links the files by their import lines (what the run's candidates are imported by). The
``may_…`` tests are *supersets*: they may say "may" of a file that does not, never the reverse, because a file
left out is a fact missed; where the text is not Python the running ``ast`` can read (newer syntax, a broken
file), the answer is "may".
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

_RELATIVE = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import", re.M)
_RELATIVE_NAMES = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)", re.M)
_ABSOLUTE = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)
# Where an import statement can start: a line's start, after `;`, or after the `:` of a one-line compound statement
# (`try: import x`), also behind backslash continuations; then anything up to the words sought, continuation lines
# included. Looser than Python (a colon in a string or a comment counts too): a superset of the import statements.
_CONTINUATION = rb"\\(?:\r\n|\r|\n)"
_IMPORT_PREFIX = (rb"(?:^|[;:\r])(?:[ \t\f]|" + _CONTINUATION + rb")*(?:from|import)\b(?:[^\n\r\\]|\\(?:\r\n|\r|\n|.))*?")
RELATIVE_FROM = re.compile(rb"from(?:[ \t\f]|" + _CONTINUATION + rb")*\.")


@dataclass
class ImportScan:
    """What :func:`scan_imports` found (plain data)."""

    linked: set[str] = field(default_factory=set)  # files that import another file of the set
    extra: set[str] = field(default_factory=set)  # non-candidate files that import a candidate
    data: dict[str, bytes] = field(default_factory=dict)  # the text of every file read, by path


def scan_imports(paths: Sequence[str], candidates: set[str], modules) -> ImportScan:
    """The files that import another file of the set and the non-candidate files that import a candidate — by
    resolving the import lines of each file (relative ones against its directory) to the modules of the set.
    ``modules``: path → module name, computed when asked (``modules.get(path)``).

    Cheap on big trees: a non-candidate file is read only when it can import a candidate — it sits in the top
    directory of one (relative imports stay inside a package) or names a candidate's top-level package."""
    scan = ImportScan()
    candidate_modules = {m for p in candidates if (m := modules.get(p))}
    lines: dict[str, bytes] = {}  # path → its import lines
    considered = [p for p in _readable(paths, candidates, modules, scan.data, lines)
                  if b"import" in scan.data[p] and modules.get(p)]
    universe = {modules.get(p) for p in considered} | candidate_modules
    for path in considered:
        module = modules.get(path)
        targets = _targets(path, module, lines[path])
        targets.discard(module)
        hits = targets & universe
        if not hits:
            continue
        scan.linked.add(path)
        if path not in candidates and hits & candidate_modules:
            scan.extra.add(path)
    return scan


def _readable(paths: Sequence[str], candidates: set[str], modules, data: dict[str, bytes],
              lines: dict[str, bytes]) -> Iterator[str]:
    """The files that can import a candidate (read into ``data``, their :func:`import_lines` into ``lines``): the
    candidates, the files inside a candidate's top-level package, the files naming such a package in an import
    line, the siblings of a candidate outside a package that import it by name."""
    # absolute imports reach only candidates inside packages (a module of a plain directory is imported by its
    # siblings, by name)
    tops = {modules.get(p).split(".", 1)[0] for p in candidates
            if modules.get(p) and os.path.exists(os.path.join(os.path.dirname(p), "__init__.py"))}
    names_top = re.compile(rb"^[ \t]*(?:from|import)[ \t]+(?:" + b"|".join(re.escape(t.encode()) for t in sorted(tops))
                           + rb")\b", re.M) if tops else None
    # where a file may import a candidate from: inside the candidate's top-level package (relative or absolute
    # imports), or beside it when it is a module in a plain directory (`from manager import X` of a script)
    packages: set[str] = set()
    plain: dict[str, set[str]] = {}  # plain directory → stems of its candidates (siblings import them by name)
    for p in candidates:
        scope = package_scope(p)
        if os.path.exists(os.path.join(scope, "__init__.py")):
            packages.add(scope)
        else:
            plain.setdefault(os.path.dirname(p), set()).add(os.path.basename(p)[:-3])
    sibling_import = {
        d: re.compile(rb"^[ \t]*(?:from|import)[ \t]+(?:" + b"|".join(re.escape(x.encode()) for x in sorted(stems))
                      + rb")\b", re.M)
        for d, stems in plain.items()
    }
    for path in paths:
        sibling = sibling_import.get(os.path.dirname(path))
        if path not in candidates and sibling is not None:
            needed = sibling  # a file beside candidates: only if it imports one of them
        elif path not in candidates and not any(path.startswith(scope) for scope in packages):
            if names_top is None:
                continue  # no candidate in a package: nothing outside can import one
            needed = names_top  # neither in a candidate's package nor importing from one: it cannot import one
        else:
            needed = None
        try:
            text = Path(path).read_bytes()
        except OSError:
            continue
        found = import_lines(text)
        if needed is not None and not needed.search(found):
            continue
        data[path], lines[path] = text, found
        yield path


def import_lines(data: bytes) -> bytes:
    """The lines of ``data`` that hold ``import`` or ``from`` (each with its newline), in order: every line a
    one-line import pattern can match, for a fraction of the text — the patterns then scan kilobytes, not the
    whole file (a regular expression pays for every position it tries)."""
    spans: list[tuple[int, int]] = []
    for word in (b"import", b"from"):
        i = data.find(word)
        while i != -1:
            start = data.rfind(b"\n", 0, i) + 1
            end = data.find(b"\n", i)
            end = len(data) if end == -1 else end + 1
            spans.append((start, end))
            i = data.find(word, end)
    spans.sort()
    out: list[bytes] = []
    last = -1
    for start, end in spans:
        if start > last:  # each line once (it may hold both words)
            out.append(data[start:end])
            last = start
    return b"".join(out)


def _targets(path: str, module: str, data: bytes) -> set[str]:
    """The modules the import lines of ``data`` (the file ``path``, module ``module``) name, with their packages."""
    targets: set[str] = set()
    package = module.rsplit(".", 1)[0] if "." in module else ""
    if path.endswith("__init__.py"):
        package = module
    for dots, rest in _RELATIVE.findall(data):
        targets.add(_relative(package, dots, rest))
    for dots, rest, imported in _RELATIVE_NAMES.findall(data):
        # `from . import x` / `from .pkg import mod`: the imported names may be modules too
        name = _relative(package, dots, rest)
        for n in imported.decode().split(","):
            n = n.strip().split(" ")[0]
            if n:
                targets.add(f"{name}.{n}" if name else n)
    for a, b in _ABSOLUTE.findall(data):
        name = (a or b).decode()
        targets.add(name)
        for i in range(1, name.count(".") + 1):
            targets.add(name.rsplit(".", i)[0])
    return targets


def _relative(package: str, dots: bytes, rest: bytes) -> str:
    base = package.split(".") if package else []
    up = len(dots) - 1
    if up:
        base = base[:-up] if up <= len(base) else []
    return ".".join([*base, *([rest.decode()] if rest else [])])


def package_scope(path: str) -> str:
    """The directory (with a trailing separator) inside which files can import ``path``: its top-level package,
    or its own directory when it is not in a package."""
    directory = os.path.dirname(path)
    top = directory
    while os.path.exists(os.path.join(top, "__init__.py")):
        parent = os.path.dirname(top)
        if parent == top:
            break
        if not os.path.exists(os.path.join(parent, "__init__.py")):
            break
        top = parent
    return top.rstrip(os.sep) + os.sep


# ------------------------------------------------------------------------------------------ superset tests


def import_line(words: Iterable[str]) -> Optional["re.Pattern[bytes]"]:
    """A pattern that finds every import statement naming one of ``words`` as a module path or a part of one
    (``from words…``, ``import a, words…``, ``from x.words import``) — and some other text; None for no words."""
    alternatives = b"|".join(re.escape(w.encode()) for w in sorted(set(words)))
    if not alternatives:
        return None
    return re.compile(_IMPORT_PREFIX + rb"(?<![\w])(?:" + alternatives + rb")", re.M)


def top_imports(tree: ast.Module) -> Iterator[Union[ast.Import, ast.ImportFrom]]:
    """The import statements of a module outside its functions and classes (those in ``if``/``try`` blocks
    included, at any depth): a superset of what :class:`codemods.base.ImportTable` reads."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
        elif isinstance(stmt, (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try))):
            parts = [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", ())]
            for handler in getattr(stmt, "handlers", ()):
                parts.extend(handler.body)
            stack.extend(reversed(parts))


def parse_or_none(data: bytes) -> Optional[ast.Module]:
    """``ast.parse(data)``, None when the running Python cannot parse it."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def nesting_ok(data: bytes) -> bool:
    """Whether libcst may be given ``data``: its native parser overflows the C stack (killing the process) on
    nesting CPython's own parser refuses cleanly, so a text CPython rejects for its nesting is not handed to it."""
    try:
        ast.parse(data)
    except SyntaxError as exc:
        return "too many nested" not in str(exc.msg)
    except (RecursionError, MemoryError):
        return False
    except ValueError:
        return True
    return True


def may_import_absolute(data: bytes, roots: Sequence[str],
                        parse: Callable[[bytes], Optional[ast.Module]] = parse_or_none) -> bool:
    """Whether the file ``data`` may import, outside functions and classes, a module whose dotted path starts with
    one of ``roots`` (``import strands_tools`` starts with ``strands``) — a superset of what a rule's framework
    check reads from :class:`codemods.base.ImportTable`. ``parse``: how to get the file's ``ast`` (a caller's memo)."""
    if not any(root.encode() in data for root in roots):
        return False
    pattern = import_line(roots)
    if pattern is None or not pattern.search(data):
        return False
    tree = parse(data)
    if tree is None:
        return True
    for node in top_imports(tree):
        if isinstance(node, ast.Import):
            if any(alias.name.startswith(tuple(roots)) for alias in node.names):
                return True
        elif node.level == 0 and node.module and node.module.startswith(tuple(roots)):
            return True
    return False


def imported_modules(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """The modules of the qualified names libcst's ``FullyQualifiedNameProvider`` can give the names of ``tree``
    (the module ``module``) through its import statements (any depth), a superset: ``from m import n`` → ``m``
    (relative ones resolved as the provider does), ``import a.b.c as d`` → ``a.b`` (and ``a``)."""
    package = module if is_package else (module.rsplit(".", 1)[0] if "." in module else "")
    out: set[str] = set()
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                out.update(".".join(parts[:i]) for i in range(1, len(parts)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                bits = package.split(".") if package else []
                bits = bits[: len(bits) - (node.level - 1)] if node.level - 1 <= len(bits) else []
                base = ".".join([*bits, *([base] if base else [])])
            if base:
                out.add(base)
    return out


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of ``tree``, at any depth (in functions, classes, blocks, handlers, ``match`` cases),
    without walking expressions — an import is a statement, and expressions are most of a tree's nodes."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, list):
                stack.extend(reversed(block))


def class_named(names: Iterable[str]) -> "re.Pattern[bytes]":
    """A pattern that finds every ``class`` statement defining one of ``names`` (and some other text)."""
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(set(names)))
    return re.compile(rb"class(?:[ \t\f]|" + _CONTINUATION + rb")+(?:" + alternatives + rb")(?!\w)")
