"""Facts that cross files, for the plain-framework rules: who uses a module-level name of another module, and
what the migration can offer in its place.

Built once per run over the candidate files (those a selected rule wants) plus the files that import one of
them (a web app importing a ``@tool``, a ``main.py`` importing the manager class): the cross-file references come
from libcst's own machinery — ``FullRepoManager`` with ``FullyQualifiedNameProvider`` — run only on the files that
import another file of the set, so a tree whose files import nothing of each other pays no more than the prefilter.

For every name used across files the exporting module is analysed (in import order) and gets a :class:`Verdict`:
a module-level agent can be offered as a rollout factory (``<name>_for_rollout()``, building the Osmosis agent with
the placeholder model), a class whose methods run agents as ``<Name>ForRollout``, a helper function as
``<name>_for_rollout``; the exporter writes those beside the originals (which stay for their plain users) and the
importers use them in the code they migrate. What cannot be offered says why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from codemods.options import DEFAULT_TARGET

_RELATIVE = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import", re.M)
_RELATIVE_NAMES = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\(?([\w, \t]+)", re.M)
_ABSOLUTE = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)


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
    """Cross-file facts of one run (plain data: it travels to worker processes)."""

    root: str = ""
    module_of: dict[str, str] = field(default_factory=dict)  # path → module name
    imports: dict[str, dict[str, str]] = field(default_factory=dict)  # path → local name → qualified name
    users: dict[str, list[str]] = field(default_factory=dict)  # qualified name → users in other files
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # qualified name → what its module offers
    extra: set[str] = field(default_factory=set)  # files added to the candidates (they import a candidate)

    def _key(self, path: str) -> str:
        return os.path.abspath(path)

    def external_uses(self, path: str) -> dict[str, list[str]]:
        """Names defined in ``path`` → where other files use them."""
        module = self.module_of.get(self._key(path))
        if module is None:
            return {}
        prefix = module + "."
        return {q[len(prefix):]: users for q, users in self.users.items()
                if q.startswith(prefix) and "." not in q[len(prefix):]}

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


def _module_name(root: str, path: str) -> Optional[str]:
    from libcst.helpers import calculate_module_and_package

    try:
        return calculate_module_and_package(root, path).name
    except ValueError:
        return None


def _related(paths: Sequence[str], candidates: set[str], modules: dict[str, str]) -> tuple[set[str], set[str]]:
    """(files that import another file of the set, non-candidate files that import a candidate) — by resolving
    the import lines of each file (relative ones against its directory) to the modules of the set.

    Cheap on big trees: a non-candidate file is read only when it can import a candidate — it sits in the top
    directory of one (relative imports stay inside a package) or names a candidate's top-level package."""
    candidate_modules = {m for p in candidates if (m := modules.get(p))}
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
        scope = _package_scope(p)
        if os.path.exists(os.path.join(scope, "__init__.py")):
            packages.add(scope)
        else:
            plain.setdefault(os.path.dirname(p), set()).add(os.path.basename(p)[:-3])
    sibling_import = {
        d: re.compile(rb"^[ \t]*(?:from|import)[ \t]+(?:" + b"|".join(re.escape(x.encode()) for x in sorted(stems))
                      + rb")\b", re.M)
        for d, stems in plain.items()
    }
    considered: list[tuple[str, bytes]] = []
    for path in paths:
        sibling = sibling_import.get(os.path.dirname(path))
        if path not in candidates and sibling is not None:
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            if not sibling.search(data):
                continue  # a file beside candidates that imports none of them
        elif path not in candidates and not any(path.startswith(scope) for scope in packages):
            if names_top is None:
                continue  # no candidate in a package: nothing outside can import one
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            if not names_top.search(data):
                continue  # neither in a candidate's package nor importing from one: it cannot import a candidate
        else:
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
        if b"import" in data and modules.get(path):
            considered.append((path, data))
    universe = {modules.get(p) for p, _ in considered} | candidate_modules
    linked: set[str] = set()
    extra: set[str] = set()
    for path, data in considered:
        module = modules.get(path)
        targets: set[str] = set()
        package = module.rsplit(".", 1)[0] if "." in module else ""
        if path.endswith("__init__.py"):
            package = module
        for dots, rest in _RELATIVE.findall(data):
            base = package.split(".") if package else []
            up = len(dots) - 1
            if up:
                base = base[:-up] if up <= len(base) else []
            name = ".".join([*base, *([rest.decode()] if rest else [])])
            targets.add(name)
        for dots, rest, imported in _RELATIVE_NAMES.findall(data):
            # `from . import x` / `from .pkg import mod`: the imported names may be modules too
            base = package.split(".") if package else []
            up = len(dots) - 1
            if up:
                base = base[:-up] if up <= len(base) else []
            name = ".".join([*base, *([rest.decode()] if rest else [])])
            for n in imported.decode().split(","):
                n = n.strip().split(" ")[0]
                if n:
                    targets.add(f"{name}.{n}" if name else n)
        for a, b in _ABSOLUTE.findall(data):
            name = (a or b).decode()
            targets.add(name)
            for i in range(1, name.count(".") + 1):
                targets.add(name.rsplit(".", i)[0])
        targets.discard(module)
        hits = targets & universe
        if not hits:
            continue
        linked.add(path)
        if path not in candidates and hits & candidate_modules:
            extra.add(path)
    return linked, extra


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


def _package_scope(path: str) -> str:
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


def build_repo_facts(paths: Sequence[str], candidates: Iterable[str], rules: Sequence[type],
                     target: str = DEFAULT_TARGET) -> RepoFacts:
    """The cross-file facts of a run over ``paths`` whose rule candidates are ``candidates``."""
    import libcst as cst
    from libcst.metadata import FullRepoManager, FullyQualifiedNameProvider

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
    linked, extra = _related(all_paths, cands, modules)
    modules.fill(linked | cands | extra)
    facts.module_of = dict(modules)
    facts.extra = extra
    if not linked:
        return facts
    involved = sorted(linked | cands | extra)
    manager = FullRepoManager(root, [p for p in involved if p in linked], {FullyQualifiedNameProvider})
    set_modules = set(modules.values())
    defined_in = {}  # qualified name → exporter path (filled lazily)
    for path in sorted(linked):
        try:
            wrapper = manager.get_metadata_wrapper_for_path(path)
            names = wrapper.resolve(FullyQualifiedNameProvider)
        except Exception:  # a file libcst cannot read: no cross-file facts for it
            continue
        own = modules.get(path, "")
        local: dict[str, str] = {}
        for node, qualified in names.items():
            if not isinstance(node, cst.Name):
                continue
            for q in qualified:
                module, _, name = q.name.rpartition(".")
                if module == own or module not in set_modules:
                    continue
                local.setdefault(node.value, q.name)
                where = os.path.relpath(path, root)
                users = facts.users.setdefault(q.name, [])
                if f"`{where}`" not in users:
                    users.append(f"`{where}`")
                defined_in[q.name] = module
        if local:
            facts.imports[path] = local
    # what each exporter can offer, exporters analysed after the modules they import from
    by_module = {m: p for p, m in modules.items()}
    exporters = sorted({defined_in[q] for q in facts.users}, key=lambda m: _depth(m, facts, by_module))
    for module in exporters:
        path = by_module.get(module)
        if path is None:
            continue
        names = [q.rsplit(".", 1)[1] for q in facts.users if q.rsplit(".", 1)[0] == module]
        for name, verdict in _offers(path, module, names, rules, facts, target).items():
            facts.verdicts[f"{module}.{name}"] = verdict
    return facts


def _depth(module: str, facts: RepoFacts, by_module: dict[str, str], seen: Optional[set[str]] = None) -> int:
    """How deep ``module`` sits in the import graph of the run (0: imports nothing of the run)."""
    seen = set() if seen is None else seen
    if module in seen:
        return 0
    seen.add(module)
    path = by_module.get(module)
    deps = {q.rsplit(".", 1)[0] for q in facts.imports.get(path or "", {}).values()}
    return 1 + max((_depth(d, facts, by_module, seen) for d in deps), default=-1)


def _offers(path: str, module: str, names: list[str], rules: Sequence[type], facts: RepoFacts,
            target: str) -> dict[str, Verdict]:
    """Ask each rule that can offer rollout versions (its ``offers`` hook: the plain-framework rules) what the
    exporter ``path`` offers for ``names``."""
    import libcst as cst

    from codemods.base import ImportTable, RuleContext

    try:
        tree = cst.parse_module(Path(path).read_bytes())
    except Exception:
        return {}
    out: dict[str, Verdict] = {}
    table = ImportTable.of(tree)
    for rule in rules:
        ctx = RuleContext(filename=path, target=target)
        ctx.repo = facts
        for name, verdict in rule.offers(tree, table, ctx, module, names).items():
            if name not in out or out[name].kind == "other":
                out[name] = verdict
    return out
