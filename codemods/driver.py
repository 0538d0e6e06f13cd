"""The migrate driver: run the rules over source text, a file or a tree, safely.

Python API (what the CLI, the benchmark and the behaviour tests call)::

    from codemods.driver import migrate_source
    result = migrate_source(text, rules=["strands-agent"], strategy="auto", target="0.3")   # rules: None = all
    result.new_text, result.edits, result.todos, result.changed

    from codemods.driver import migrate_file
    fr = migrate_file("agent.py")          # FileResult: status, edits, todos, error, new_bytes (nothing written)

Guarantees: a file is parsed only if its text contains a trigger word of a selected rule (fast path) and it has
no ``# osmosis-migrate: skip-file``; every rule runs on the tree in turn (one parse, one code generation); the
output must compile (``ast``) or the file is reported failed and left alone; a parse error, a ``RecursionError``
in libcst or a crashing rule fail that file only. Encoding (PEP 263 cookie, BOM) and line endings are kept
because the tree is parsed from bytes and rendered back to bytes.
"""

from __future__ import annotations

import ast
import gc
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Union

from codemods.imported import Imported, imported
from codemods.options import DEFAULT_TARGET

if TYPE_CHECKING:
    from codemods.base import Edit, Rule, Todo
    from codemods.markers import Marker

RuleSpec = Union[str, "type[Rule]"]

STATUS_CHANGED = "changed"
STATUS_UNCHANGED = "unchanged"
STATUS_PREFILTERED = "skipped"  # no trigger word: not parsed
STATUS_OPTED_OUT = "opted-out"  # `# osmosis-migrate: skip-file`
STATUS_FAILED = "failed"


class MigrationError(Exception):
    """A file could not be migrated: it does not parse, the output would not parse, or a rule crashed."""

    def __init__(self, message: str, *, rule: Optional[str] = None) -> None:
        super().__init__(message)
        self.rule = rule


class UsageError(ValueError):
    """Bad options (unknown rule selector, strategy)."""


@dataclass
class Result:
    """Outcome of :func:`migrate_source`."""

    new_text: str
    edits: list["Edit"] = field(default_factory=list)
    todos: list["Todo"] = field(default_factory=list)
    changed: bool = False


@dataclass
class FileResult:
    """Outcome of one file (nothing written yet). ``todos``: what the rules reported; ``markers``: the TODO
    markers open in the file's final text (the written one when changed) — what the summary, the report and
    ``osmosis-migrate todo`` count."""

    path: str
    status: str
    edits: list["Edit"] = field(default_factory=list)
    todos: list["Todo"] = field(default_factory=list)
    error: Optional[str] = None
    error_rule: Optional[str] = None
    old_bytes: Optional[bytes] = None
    new_bytes: Optional[bytes] = None
    markers: list["Marker"] = field(default_factory=list)
    # what the new and the old text import (read from the trees the driver parsed; None: not known)
    imports: Optional[Imported] = None
    old_imports: Optional[Imported] = None


def all_rule_classes() -> list["type[Rule]"]:
    from codemods.rules import all_rules

    return all_rules()


def select_rules(select: Optional[Sequence[str]] = None, ignore: Optional[Sequence[str]] = None) -> list["type[Rule]"]:
    """Rules matching ``select`` (all when empty) minus ``ignore``.

    A selector is a rule name (``strands-agent``) or a code prefix: ``OM1``, ``OM100`` and ``OM105`` all select
    the rule of family ``OM1``; ``OM`` selects everything. Unknown selectors raise :class:`UsageError`.
    """
    rules = all_rule_classes()

    def matches(rule: "type[Rule]", sel: str) -> bool:
        sel = sel.strip()
        if sel == rule.name:
            return True
        upper = sel.upper()
        if not upper.startswith("OM"):
            return False
        return rule.code.startswith(upper) or (len(upper) >= 3 and upper[:3] == rule.code[:3])

    for sel in [*(select or []), *(ignore or [])]:
        if not any(matches(r, sel) for r in rules):
            known = ", ".join(f"{r.code} ({r.name})" for r in rules)
            raise UsageError(f"unknown rule selector {sel!r}; known rules: {known}")
    chosen = [r for r in rules if not select or any(matches(r, s) for s in select)]
    return [r for r in chosen if not any(matches(r, s) for s in (ignore or []))]


def _resolve_rules(rules: Optional[Iterable[RuleSpec]]) -> list["type[Rule]"]:
    if rules is None:
        return all_rule_classes()
    names = [r for r in rules if isinstance(r, str)]
    classes = [r for r in rules if not isinstance(r, str)]
    return [*select_rules(names), *classes] if names else classes


def _check_strategy(strategy: str) -> None:
    from codemods.base import STRATEGIES

    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


def _check_target(target: str) -> None:
    from codemods.base import TARGETS

    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")


def migrate_bytes(
    data: bytes, rules: Sequence["type[Rule]"], *, strategy: str = "auto", filename: str = "<string>",
    target: str = DEFAULT_TARGET, repo: Optional[object] = None, line_length: Optional[int] = None,
) -> tuple[bytes, list["Edit"], list["Todo"], list[str], tuple[Imported, Imported]]:
    """Run ``rules`` (already prefiltered) on ``data``; returns (new bytes, edits, todos, names of rules that acted,
    what the new and the old text import).
    ``target``: the osmosis-ai API the output is written for (``RuleContext.target``); ``line_length``: the
    width TODO markers are wrapped at (:func:`codemods.markers.wrap_long_markers`; default 88).

    Raises :class:`MigrationError` (input or output does not parse, RecursionError, a rule crashed).
    """
    import libcst as cst

    from codemods.base import RuleContext, dedupe_header_todos
    from codemods.codegen import module_bytes

    # CPython's own parser first: it rejects what libcst's native parser cannot survive (e.g. > 200 nested
    # brackets crash it with a stack overflow that would kill the whole run) and is ~10x cheaper than libcst.
    try:
        tree = ast.parse(data, filename)
    except SyntaxError as exc:
        raise MigrationError(f"does not parse: {exc.msg} (line {exc.lineno})") from None
    except (RecursionError, MemoryError):
        raise MigrationError("does not parse: nesting too deep (RecursionError)") from None
    except ValueError as exc:  # e.g. null bytes
        raise MigrationError(f"does not parse: {exc}") from None
    try:
        # the cross-file analysis may have parsed this very text already (an exporter it asked what it offers)
        module = repo.take_tree(filename, data) if repo is not None else None
        if module is None:
            module = cst.parse_module(data)
    except cst.ParserSyntaxError as exc:
        raise MigrationError(f"does not parse: {str(exc).splitlines()[0]} (line {exc.raw_line})") from None
    except RecursionError:
        raise MigrationError("does not parse: nesting too deep for libcst (RecursionError)") from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise MigrationError(f"cannot decode: {exc}") from None
    ctx = RuleContext(strategy=strategy, filename=filename, target=target, repo=repo)
    ctx.set_source(module, tree, data)
    acted: list[str] = []
    for rule_cls in rules:
        before = (len(ctx.edits), len(ctx.todos))
        ctx.module = module
        try:
            module = dedupe_header_todos(rule_cls().transform(module, ctx))
        except RecursionError:
            raise MigrationError(f"rule {rule_cls.name} hit the recursion limit", rule=rule_cls.name) from None
        except Exception as exc:  # a rule bug must fail this file, not the run
            raise MigrationError(f"rule {rule_cls.name} crashed: {type(exc).__name__}: {exc}", rule=rule_cls.name) from exc
        if (len(ctx.edits), len(ctx.todos)) != before:
            acted.append(rule_cls.name)
    try:
        new = module_bytes(module)
    except RecursionError:
        raise MigrationError("code generation hit the recursion limit") from None
    new_tree = tree
    if new != data:
        try:
            new_tree = compile(new, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError) as exc:
            raise MigrationError(f"migrated code would not parse ({exc}); file left as it was") from None
    # markers wrapped last, on the checked code (its tree tells string literals apart); only comment lines change
    new_imports = imported(new_tree)
    imports = (new_imports, new_imports if new_tree is tree else imported(tree))
    return _wrap_markers(new, line_length, new_tree), ctx.edits, ctx.todos, acted, imports


def migrate_source(
    text: str, rules: Optional[Iterable[RuleSpec]] = None, strategy: str = "auto", filename: str = "<string>",
    target: str = DEFAULT_TARGET, line_length: Optional[int] = None,
) -> Result:
    """Migrate Python source ``text`` in memory. ``rules``: names/code prefixes/Rule classes (None = all);
    ``target``: ``"0.2"`` or ``"0.3"``, the osmosis-ai API the output is written for; ``line_length``: the width
    TODO markers are wrapped at (default 88).

    Raises :class:`MigrationError` when the text cannot be migrated safely, :class:`UsageError` on bad options.
    """
    from codemods.base import file_opted_out

    _check_strategy(strategy)
    _check_target(target)
    selected = _resolve_rules(rules)
    if file_opted_out(text):
        return Result(new_text=text)
    wanted = [r for r in selected if r.wants(text)]
    if not wanted:
        return Result(new_text=text)
    encoding = _declared_encoding(text)
    data = text.encode(encoding)
    new, edits, todos, _, _ = migrate_bytes(data, wanted, strategy=strategy, filename=filename, target=target,
                                            line_length=line_length)
    new_text = new.decode(encoding)
    return Result(new_text=new_text, edits=edits, todos=todos, changed=new_text != text)


def _declared_encoding(text: str) -> str:
    """The PEP 263 encoding a text declares (so that bytes → libcst → bytes round-trips it), else utf-8."""
    import io
    import tokenize

    try:
        encoding = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", "surrogatepass")).readline)[0]
        text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return "utf-8"
    return "utf-8" if encoding == "utf-8-sig" else encoding


def _wrap_markers(data: bytes, line_length: Optional[int], tree: Optional[ast.AST] = None) -> bytes:
    from codemods.config import DEFAULT_LINE_LENGTH
    from codemods.markers import wrap_long_markers

    return wrap_long_markers(data, line_length or DEFAULT_LINE_LENGTH, tree)


def _open_markers(data: bytes) -> list["Marker"]:
    """The TODO markers in a file's text (a bytes search first: most files have none)."""
    if b"TODO(osmosis-migrate" not in data:
        return []
    from codemods.markers import find_markers

    return find_markers(data)


def _wants(data: bytes, *rules: "type[Rule]") -> bool:
    return any(w.encode() in data for rule in rules for w in rule.trigger_words)


def migrate_file(
    path: Union[str, os.PathLike], rules: Optional[Sequence["type[Rule]"]] = None, strategy: str = "auto",
    target: str = DEFAULT_TARGET, repo: Optional[object] = None, line_length: Optional[int] = None,
) -> FileResult:
    """Migrate one file in memory (nothing is written; see :func:`write_atomic`). ``repo``: the cross-file facts
    of the run (:func:`codemods.analysis.repo.build_repo_facts`); a file it lists as ``extra`` (it imports what a
    candidate defines) is given to the rules that use those facts even without their trigger words.
    ``line_length``: the width TODO markers are wrapped at; default: the file's
    (:func:`codemods.config.line_length_for`)."""
    path = os.fspath(path)
    rules = all_rule_classes() if rules is None else rules
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileResult(path, STATUS_FAILED, error=f"cannot read: {exc.strerror or exc}")
    if b"osmosis-migrate: skip-file" in data:
        return FileResult(path, STATUS_OPTED_OUT, markers=_open_markers(data))
    extra = repo is not None and os.path.abspath(path) in getattr(repo, "extra", ())
    wanted = [r for r in rules if _wants(data, r) or (extra and r.uses_repo)]
    if not wanted:
        return FileResult(path, STATUS_PREFILTERED, markers=_open_markers(data))
    if line_length is None:
        from codemods.config import line_length_for

        line_length = line_length_for(path)
    try:
        new, edits, todos, _, (imports, old_imports) = migrate_bytes(
            data, wanted, strategy=strategy, filename=path, target=target, repo=repo, line_length=line_length)
    except MigrationError as exc:
        return FileResult(path, STATUS_FAILED, error=str(exc), error_rule=exc.rule, markers=_open_markers(data))
    if new == data:
        return FileResult(path, STATUS_UNCHANGED, edits=edits, todos=todos, markers=_open_markers(data))
    return FileResult(path, STATUS_CHANGED, edits=edits, todos=todos, old_bytes=data, new_bytes=new,
                      markers=_open_markers(new), imports=imports, old_imports=old_imports)


def write_atomic(path: Union[str, os.PathLike], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same directory + ``os.replace``), keeping mode."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".osmosis-migrate-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------------------------------ many files

_worker_rules: list = []
_worker_strategy = "auto"
_worker_target = DEFAULT_TARGET
_worker_repo = None


def _init_worker(rule_names: list[str], strategy: str, target: str = DEFAULT_TARGET, repo: Optional[object] = None) -> None:
    global _worker_rules, _worker_strategy, _worker_target, _worker_repo
    _worker_repo = repo
    by_name = {r.name: r for r in all_rule_classes()}
    _worker_rules = [by_name[n] for n in rule_names]
    _worker_strategy = strategy
    _worker_target = target
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))


def _work(path: str) -> FileResult:
    return _migrate_one(path, _worker_rules, _worker_strategy, _worker_target, _worker_repo)


def _migrate_one(path: str, rules: Sequence["type[Rule]"], strategy: str, target: str, repo: Optional[object]) -> FileResult:
    """:func:`migrate_file` with the cyclic garbage collector paused for the file and run once after it, on what the
    file allocated. Collections in the middle of a file kept traversing its live trees (a rule holds several, and
    every node is a container); after the file most of it is freed by reference counting, so one young-generation
    collection finds the file's cycles for a fraction of that cost (a run over agent files took ~11 % less). The file's
    cyclic garbage lives until then: memory grows with one file's work, not the run's."""
    if not gc.isenabled():
        return migrate_file(path, rules, strategy, target, repo)
    gc.disable()
    try:
        return migrate_file(path, rules, strategy, target, repo)
    finally:
        gc.enable()
        gc.collect(0)


def candidates(paths: Iterable[str], rules: Sequence["type[Rule]"]) -> tuple[list[str], list[FileResult]]:
    """Split files into those to parse (a trigger word is present) and results for the rest (prefiltered,
    opted out, unreadable) — cheap: bytes search only."""
    todo: list[str] = []
    done: list[FileResult] = []
    words = [w.encode() for r in rules for w in r.trigger_words]
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            done.append(FileResult(path, STATUS_FAILED, error=f"cannot read: {exc.strerror or exc}"))
            continue
        if b"osmosis-migrate: skip-file" in data:
            done.append(FileResult(path, STATUS_OPTED_OUT, markers=_open_markers(data)))
        elif any(w in data for w in words):
            todo.append(path)
        else:
            done.append(FileResult(path, STATUS_PREFILTERED, markers=_open_markers(data)))
    return todo, done


def run_many(
    paths: Sequence[str],
    rules: Sequence["type[Rule]"],
    *,
    strategy: str = "auto",
    jobs: int = 1,
    progress=None,
    target: str = DEFAULT_TARGET,
) -> list[FileResult]:
    """Migrate ``paths`` in memory (nothing written), in a process pool when ``jobs > 1`` and there are enough
    candidate files to pay for it. ``progress(done, total)`` is called as files finish."""
    import libcst  # noqa: F401  (imported before forking so workers start warm)

    from codemods.config import clear_caches

    clear_caches()  # line lengths are read afresh each run (config files may have changed since the last)
    _check_strategy(strategy)
    _check_target(target)
    todo, results = candidates(paths, rules)
    repo = None
    if any(r.uses_repo for r in rules):
        # facts that cross files (libcst FullRepoManager over the candidates and the files importing them)
        from codemods.analysis.repo import build_repo_facts

        repo_rules = [r for r in rules if r.uses_repo]
        wanted = [p for p in todo if _wants(Path(p).read_bytes(), *repo_rules)]
        repo = build_repo_facts(paths, wanted, repo_rules, target=target)
        if repo.extra:
            moved = [r for r in results if r.status == STATUS_PREFILTERED and os.path.abspath(r.path) in repo.extra]
            results = [r for r in results if r not in moved]
            todo += [r.path for r in moved]
    total = len(todo)
    if progress:
        progress(0, total)
    if jobs > 1 and total >= max(8, 2 * jobs):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        mp = multiprocessing.get_context(method)
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=mp, initializer=_init_worker, initargs=([r.name for r in rules], strategy, target, repo)
        ) as pool:
            chunk = max(1, min(32, total // (jobs * 8) or 1))
            for i, res in enumerate(pool.map(_work, todo, chunksize=chunk), 1):
                results.append(res)
                if progress:
                    progress(i, total)
    else:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 3000))
        try:
            for i, path in enumerate(todo, 1):
                results.append(_migrate_one(path, rules, strategy, target, repo))
                if progress:
                    progress(i, total)
        finally:
            sys.setrecursionlimit(old)
    order = {p: i for i, p in enumerate(paths)}
    results.sort(key=lambda r: order.get(r.path, 0))
    return results
