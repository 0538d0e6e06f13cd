"""Facts that cross files, for the plain-framework rules: who uses a module-level name of another module, and
what the migration can offer in its place.

For every name used across files the exporting module is analysed (in import order) and gets a :class:`Verdict`:
a module-level agent can be offered as a rollout factory (``<name>_for_rollout()``, building the Osmosis agent with
the placeholder model), a class whose methods run agents as ``<Name>ForRollout``, a helper function as
``<name>_for_rollout``; the exporter writes those beside the originals (which stay for their plain users) and the
importers use them in the code they migrate. What cannot be offered says why.

Paid only where a cross-file fact is needed. The files considered are the candidates (those a selected rule
wants) and the files that can import one (:func:`~codemods.analysis.import_graph.scan_imports`: bytes and line
patterns). Who uses which name comes from libcst's scope analysis, the answers of its
``FullyQualifiedNameProvider`` (:mod:`codemods.analysis.qualified`) — the expensive part, so it is run on a file
only when a question needs that file:

* a verdict can only come from a module that imports a rule's framework (a rule's ``offers`` hook answers only
  for those; the framework is read from the rules' trigger words) and binds a name a rule can offer — asked first
  with every name it binds, since *whether* a name can be offered does not depend on who uses the others. Only for
  such a module are its users resolved (the files whose imports may name it: ``ast`` and patterns, a superset),
  and the files that may import it (their imports decide what they are offered);
* who uses the names of any other module (:meth:`RepoFacts.external_uses`, which a plan reads name by name) is
  gathered when a plan first asks, in the process that asks.

A real package tree (the OpenAI Agents SDK: 299 files, 51 parsed) has no module that can offer anything and whose
plans ask about other files, so none of its files is resolved (docs/performance.md).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from codemods.analysis.import_graph import (
    RELATIVE_FROM, class_named, import_line, imported_modules, may_import_absolute, nesting_ok, parse_or_none,
    scan_imports,
)
from codemods.options import DEFAULT_TARGET



@dataclass(frozen=True)
class Verdict:
    """What a module offers for one of its names that other modules use."""

    kind: str  # "agent" | "class" | "helper" | "other"
    module: str  # the exporter's module name
    name: str  # the name there
    rollout: Optional[str] = None  # the rollout version written beside it (None: none can be written)
    problem: str = ""  # why not
    rule: str = ""  # code of the rule whose framework the exporter uses ("OM100", "OM200")


@dataclass
class RepoFacts:
    """Cross-file facts of one run (plain data: it travels to worker processes).

    ``imports`` and ``verdicts`` are complete when the build returns; who uses the names of a module
    (:meth:`external_uses`) is gathered when a plan first asks about one of them, in the process that asks, and
    kept (``uses``)."""

    root: str = ""
    module_of: dict[str, str] = field(default_factory=dict)  # path → module name
    imports: dict[str, dict[str, str]] = field(default_factory=dict)  # path → local name → qualified name
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # qualified name → what its module offers
    extra: set[str] = field(default_factory=set)  # files added to the candidates (they import a candidate)
    linked: list[str] = field(default_factory=list)  # files that import another file of the run, in path order
    reach: "Reach" = field(default_factory=lambda: Reach({}))  # which of them may name which modules
    # path → (local name, qualified name) of each use of another module of the run, in libcst's order (None: a
    # file libcst cannot read); filled as files are resolved
    resolved: dict[str, Optional[list[tuple[str, str]]]] = field(default_factory=dict)
    uses: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # module → its name → users (gathered)
    exhaustive: bool = False  # every linked file is resolved for every question (no superset test: tests' reference)
    # path → (bytes, libcst tree) of the files the build parsed that the run migrates too: parsed once for both
    parsed: dict[str, tuple[bytes, object]] = field(default_factory=dict, repr=False)

    def _key(self, path: str) -> str:
        return os.path.abspath(path)

    def take_tree(self, path: str, data: bytes) -> Optional[object]:
        """The libcst tree the build parsed from exactly ``data`` for ``path`` (then forgotten), else None."""
        kept = self.parsed.pop(self._key(path), None)
        return kept[1] if kept is not None and kept[0] == data else None

    def external_uses(self, path: str) -> Mapping[str, list[str]]:
        """Names defined in ``path`` → where other files use them (a mapping that gathers the uses when first
        read: a plan that never asks about a name costs no cross-file analysis)."""
        module = self.module_of.get(self._key(path))
        if module is None:
            return {}
        return ExternalUses(self, module)

    def offered(self, path: str) -> dict[str, Verdict]:
        """Names defined in ``path`` that other files use, with what this module must offer for them."""
        module = self.module_of.get(self._key(path))
        if module is None:
            return {}
        return {v.name: v for v in self.verdicts.values() if v.module == module}

    def imported(self, path: str) -> dict[str, Verdict]:
        """Local names of ``path`` imported from another file of the run → what that file offers for them."""
        out: dict[str, Verdict] = {}
        for local, qualified in self.imports.get(self._key(path), {}).items():
            verdict = self.verdicts.get(qualified)
            if verdict is not None:
                out[local] = verdict
        return out

    def uses_of(self, module: str) -> dict[str, list[str]]:
        """The names of ``module`` other files of the run use → those files (as ```path```, in path order):
        the files that may name the module (:class:`Reach`) are resolved, once each."""
        if module not in self.uses:
            files = [p for p in self.linked if self.exhaustive or self.reach.may_name(p, {module})]
            self.resolve(files)
            out: dict[str, list[str]] = {}
            for path in files:
                where = f"`{os.path.relpath(path, self.root)}`"
                for _, qualified in self.resolved[path] or ():
                    owner, _, name = qualified.rpartition(".")
                    users = out.setdefault(name, []) if owner == module else None
                    if users is not None and where not in users:
                        users.append(where)
            self.uses[module] = out
        return self.uses[module]

    def resolve(self, paths: Sequence[str]) -> None:
        """Resolve the names of ``paths`` not resolved yet (:func:`codemods.analysis.qualified.qualified_names`)."""
        from codemods.analysis.qualified import qualified_names

        set_modules = set(self.module_of.values())
        for path in paths:
            if path in self.resolved:
                continue
            own = self.module_of.get(path, "")
            if self.reach.tree(path) is None and not nesting_ok(self.reach.text(path)):
                self.resolved[path] = None  # libcst would take the process down with it
                continue
            try:
                names = list(qualified_names(path, self.root))
            except Exception:  # a file libcst cannot read: no cross-file facts for it
                self.resolved[path] = None
                continue
            self.resolved[path] = [(value, q) for value, qualified in names for q in qualified
                                   if q.rpartition(".")[0] != own and q.rpartition(".")[0] in set_modules]


@dataclass
class ExternalUses(Mapping[str, list[str]]):
    """:meth:`RepoFacts.external_uses` of one module: its names → where other files use them, gathered
    (:meth:`RepoFacts.uses_of`) when first read."""

    facts: RepoFacts
    module: str

    def __getitem__(self, name: str) -> list[str]:
        return self.facts.uses_of(self.module)[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.facts.uses_of(self.module))

    def __len__(self) -> int:
        return len(self.facts.uses_of(self.module))


@dataclass
class Reach:
    """Which files of the run may name which modules (the cheap supersets of
    :mod:`codemods.analysis.import_graph`), each file's imports read once."""

    module_of: dict[str, str]
    data: dict[str, bytes] = field(default_factory=dict)  # texts at hand (the build's scan; emptied after it)
    named: dict[str, Optional[set[str]]] = field(default_factory=dict)  # path → modules its imports name (None: any)
    trees: dict[str, Optional[ast.Module]] = field(default_factory=dict)  # path → its ast (the build's; emptied after)

    def text(self, path: str) -> bytes:
        """The file's bytes (b"" when unreadable)."""
        data = self.data.get(path)
        if data is None:
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = b""
        return data

    def tree(self, path: str) -> Optional[ast.Module]:
        """The file's ``ast`` (None when it does not parse), parsed once."""
        if path not in self.trees:
            self.trees[path] = parse_or_none(self.text(path))
        return self.trees[path]

    def may_offer(self, path: str, roots: Sequence[str]) -> bool:
        """Whether the file may import one of the framework ``roots`` where the rules look for it."""
        return may_import_absolute(self.text(path), roots, lambda _: self.tree(path))

    def done(self) -> None:
        """Forget the texts and trees the build had at hand (the facts travel to workers without them)."""
        self.data, self.trees = {}, {}

    def may_name(self, path: str, targets: set[str]) -> bool:
        """Whether a name of the file may have a qualified name in one of the ``targets`` modules (libcst's
        ``FullyQualifiedNameProvider``: through an import, or a class of the file named like a submodule)."""
        if "builtins" in targets:
            return True  # builtins are qualified as `builtins.…`
        own = self.module_of.get(path, "")
        data = self.text(path)
        nested = {t[len(own) + 1:].split(".", 1)[0] for t in targets if t.startswith(own + ".")}
        if nested and class_named(nested).search(data):
            return True  # the attributes of `class X` in module `m` are qualified as `m.X.…`
        pattern = import_line({t.rsplit(".", 1)[-1] for t in targets})
        relative_up = RELATIVE_FROM.search(data) and any(own.startswith(t + ".") for t in targets)
        if not relative_up and (pattern is None or not pattern.search(data)):
            return False
        named = self.imports_of(path)
        return named is None or bool(named & targets)

    def imports_of(self, path: str) -> Optional[set[str]]:
        """The modules the file's import statements can qualify its names into
        (:func:`~codemods.analysis.import_graph.imported_modules`); None when its text does not parse."""
        if path not in self.named:
            tree = self.tree(path)
            is_package = os.path.basename(path) in ("__init__.py", "__main__.py")
            own = self.module_of.get(path, "")
            self.named[path] = None if tree is None else imported_modules(tree, own, is_package)
        return self.named[path]


def _module_name(root: str, path: str) -> Optional[str]:
    from libcst.helpers import calculate_module_and_package

    try:
        return calculate_module_and_package(root, path).name
    except ValueError:
        return None


class _Modules(dict):
    """path → module name, computed when first asked (a big tree's unrelated files never are)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root

    def get(self, path, default=None):  # type: ignore[override]
        if path not in self:
            name = _module_name(self.root, path)
            if not name:
                return default
            self[path] = name
        return dict.get(self, path, default)

    def fill(self, paths) -> None:
        for p in paths:
            self.get(p)


def build_repo_facts(paths: Sequence[str], candidates: Iterable[str], rules: Sequence[type],
                     target: str = DEFAULT_TARGET, *, exhaustive: bool = False) -> RepoFacts:
    """The cross-file facts of a run over ``paths`` whose rule candidates are ``candidates``.

    Only the files that may import a module that offers something are resolved here (module docstring); the
    uses of the other modules are gathered when asked (:meth:`RepoFacts.external_uses`). ``exhaustive``: every
    module that imports another file of the run is asked what it offers (no framework and no offer test), the
    reference the tests compare the cheap answers against."""
    all_paths = [os.path.abspath(p) for p in paths if str(p).endswith(".py")]
    cands = {os.path.abspath(p) for p in candidates}
    facts = RepoFacts()
    if not cands:
        return facts
    root = os.path.commonpath([os.path.dirname(p) for p in all_paths]) if all_paths else ""
    while root and os.path.exists(os.path.join(root, "__init__.py")) and os.path.dirname(root) != root:
        root = os.path.dirname(root)  # the directory above the top package: module names keep their package
    # the module name of every file in the run
    modules = _Modules(root)
    facts.root = root
    scan = scan_imports(all_paths, cands, modules)
    modules.fill(scan.linked | cands | scan.extra)
    facts.module_of = dict(modules)
    facts.extra = scan.extra
    facts.linked = sorted(scan.linked)
    facts.reach = Reach(facts.module_of, scan.data)
    facts.exhaustive = exhaustive
    if scan.linked:
        _find_offers(facts, rules, target, exhaustive, cands | scan.extra)
    facts.reach.done()  # workers read again what they ask about
    return facts


def _find_offers(facts: RepoFacts, rules: Sequence[type], target: str, exhaustive: bool, migrated: set[str]) -> None:
    """Fill ``facts.imports`` and ``facts.verdicts``: which modules may offer something (they import a rule's
    framework and have a name a rule can offer), who uses their names, and what they offer for those names. The
    trees parsed for it that the run migrates (``migrated``) are kept for the driver (``facts.parsed``)."""
    by_module = {m: p for p, m in facts.module_of.items()}
    trees: dict[str, Optional[tuple[bytes, object]]] = {}  # exporter path → (bytes, libcst tree), parsed once
    roots = None if exhaustive else framework_roots(rules)
    candidates = [m for m, p in by_module.items() if roots is None or facts.reach.may_offer(p, roots)]
    offering = set(candidates) if exhaustive else _offering(candidates, facts, by_module, rules, target, trees)
    if offering:  # else no verdict anywhere: no file is planned with what another file offers
        files = [p for p in facts.linked if exhaustive or facts.reach.may_name(p, offering)]
        facts.resolve(files)
        for path in files:
            local: dict[str, str] = {}
            for value, qualified in facts.resolved[path] or ():
                local.setdefault(value, qualified)
            if local:
                facts.imports[path] = local
        # what each exporter can offer, exporters analysed after the modules they import from
        for module in _import_order({m for m in offering if facts.uses_of(m)}, facts, by_module):
            path = by_module[module]
            names = list(facts.uses_of(module))
            for name, verdict in _offers(path, module, names, rules, facts, target, trees).items():
                facts.verdicts[f"{module}.{name}"] = verdict
    facts.parsed = {p: kept for p, kept in trees.items() if kept is not None and p in migrated}


def _offering(candidates: Sequence[str], facts: RepoFacts, by_module: dict[str, str], rules: Sequence[type],
              target: str, trees: dict[str, Optional[tuple[bytes, object]]]) -> set[str]:
    """The ``candidates`` (modules importing a rule's framework) that have a name some rule can offer: asked
    with every name they bind at the top level (whether a name can be offered does not depend on which other
    names are used elsewhere, only the offer itself does). A module that may import another module that can
    offer (an imported agent makes its runners offerable too) is kept without asking, as is every module of an
    import cycle among them."""
    named = {m: facts.reach.imports_of(by_module[m]) for m in candidates}
    deps = {m: set(candidates) - {m} if n is None else n & set(candidates) - {m} for m, n in named.items()}
    offering: set[str] = set()
    state: dict[str, int] = {}  # 1: on the current path, 2: decided

    def decide(module: str) -> bool:  # True: it may offer (decided, or part of a cycle)
        state[module] = 1
        cyclic = False
        for dep in sorted(deps[module]):
            if state.get(dep) == 1:
                cyclic = True
            elif dep not in state:
                cyclic |= decide(dep)
        state[module] = 2
        if cyclic or deps[module] & offering:
            offering.add(module)
        elif _offers(path := by_module[module], module, _top_level_names(facts.reach.text(path), facts.reach.tree(path)),
                     rules, facts, target, trees):
            offering.add(module)
        return cyclic

    for module in sorted(candidates):
        if module not in state:
            decide(module)
    return offering


def framework_roots(rules: Sequence[type]) -> Optional[tuple[str, ...]]:
    """The top-level modules the ``rules`` act on, read from their trigger words (``"from strands"`` →
    ``strands``): a module that imports none of them cannot offer anything (a rule's ``offers`` hook answers only
    for a module that imports its framework, which the trigger words name). None when a trigger word is not of
    that form: every module may then offer."""
    roots: set[str] = set()
    for rule in rules:
        for word in rule.trigger_words:
            parts = word.split()
            if len(parts) != 2 or parts[0] not in ("from", "import") or not parts[1].isidentifier():
                return None
            roots.add(parts[1])
    return tuple(sorted(roots)) or None


def _top_level_names(data: bytes, tree: Optional[ast.Module]) -> list[str]:
    """The names a module binds at its top level (definitions, assignments; all names when it does not parse)."""
    if tree is None:
        return sorted({m.group().decode() for m in re.finditer(rb"[A-Za-z_]\w*", data)})
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return sorted(names)


def _import_order(exporters: set[str], facts: RepoFacts, by_module: dict[str, str]) -> list[str]:
    """``exporters`` ordered so that a module comes after the exporters it imports from (its verdicts read
    theirs); in an import cycle, the module met first (in name order) comes first."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: placed

    def place(module: str) -> None:
        state[module] = 1
        path = by_module.get(module, "")
        deps = {q.rsplit(".", 1)[0] for q in facts.imports.get(path, {}).values()} & exporters
        for dep in sorted(deps):
            if dep not in state:
                place(dep)
        state[module] = 2
        order.append(module)

    for module in sorted(exporters):
        if module not in state:
            place(module)
    return order


def _offers(path: str, module: str, names: list[str], rules: Sequence[type], facts: RepoFacts,
            target: str, trees: dict[str, Optional[tuple[bytes, object]]]) -> dict[str, Verdict]:
    """Ask each rule that can offer rollout versions (its ``offers`` hook: the plain-framework rules) what the
    exporter ``path`` offers for ``names`` (its bytes and tree read once, kept in ``trees``; None: unreadable)."""
    import libcst as cst

    from codemods.base import ImportTable, RuleContext

    if path not in trees:
        try:
            data = Path(path).read_bytes()
            safe = facts.reach.tree(path) is not None or nesting_ok(data)
            trees[path] = (data, cst.parse_module(data)) if safe else None
        except Exception:
            trees[path] = None
    if trees[path] is None:
        return {}
    tree = trees[path][1]
    out: dict[str, Verdict] = {}
    table = ImportTable.of(tree)
    for rule in rules:
        ctx = RuleContext(filename=path, target=target)
        ctx.repo = facts
        for name, verdict in rule.offers(tree, table, ctx, module, names).items():
            if name not in out or out[name].kind == "other":
                out[name] = verdict
    return out
