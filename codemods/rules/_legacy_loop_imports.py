"""Import edits of the ``legacy-loop`` rule, also inside top-level ``try``/``if`` blocks: legacy example servers
import the SDK in ``try: from osmosis_ai.rollout import (…) except ModuleNotFoundError: raise …`` (an install hint),
so the legacy names must go from there, and the new names go in there too (the guard keeps guarding the import).
"""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from codemods.base import ImportSpec, ImportTable, add_imports, dotted_name

_BLOCKS = (cst.If, cst.Try, cst.TryStar, cst.Else, cst.ExceptHandler, cst.Finally)


def edit_imports(
    module: cst.Module, remove: set[str], used: set[str], wanted: Sequence[ImportSpec] = ()
) -> tuple[cst.Module, list[str]]:
    """``module`` with the imported names of ``remove`` that are not in ``used`` dropped (at module level and in
    top-level ``if``/``try`` blocks; a statement left empty goes, its comments kept for the next one, and a block
    left empty gets ``pass``), and ``from mod import name`` for each ``wanted`` pair not bound yet — into an
    existing import of ``mod`` (the first, at any depth: a ``try`` guard keeps guarding it) or a new top-level one.
    Returns the module and the names removed."""
    dead = remove - used
    table = ImportTable.of(module)
    missing: dict[str, list[str]] = {}
    for mod, name in wanted:
        if not table.binds(name, f"{mod}.{name}") and mod not in table.stars and name not in missing.get(mod, []):
            missing.setdefault(mod, []).append(name)
    if not dead and not missing:
        return module, []
    imported = {_module_of(imp) for imp in _imports(module)}
    edit = _Edit(dead, missing, {m for m in missing if m not in imported})
    body = edit.block(list(module.body), depth=0, top=True)
    module = module.with_changes(body=body)
    rest = [(mod, name) for mod, names in edit.missing.items() for name in names]
    if rest:
        module = add_imports(module, rest)
    return module, sorted(set(edit.removed))


class _Edit:
    """One pass over the import statements (for :func:`edit_imports`)."""

    def __init__(self, dead: set[str], missing: dict[str, list[str]], new_modules: set[str]) -> None:
        self.dead = dead
        self.missing = missing
        self.new_modules = new_modules  # modules of `missing` the file imports nothing from yet
        self.removed: list[str] = []

    def block(self, stmts: list[cst.BaseStatement], depth: int, top: bool) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for stmt in stmts:
            new = self.statement(stmt, depth)
            if new is None:
                carried.extend(stmt.leading_lines)
                continue
            if carried:
                new = new.with_changes(leading_lines=[*carried, *new.leading_lines])
                carried = []
            out.append(new)
            out += self.beside(stmt)
        if not out and not top:
            out.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=carried))
        return out

    def beside(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """New ``from osmosis_ai… import`` lines, after the file's first osmosis_ai import (in its block)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and any(
                (_module_of(s) or "").startswith("osmosis_ai") for s in stmt.body)):
            return []
        out = []
        for mod in sorted(m for m in self.new_modules if m.startswith("osmosis_ai") and m in self.missing):
            names = self.missing.pop(mod)
            out.append(cst.SimpleStatementLine([cst.ImportFrom(module=cst.parse_expression(mod), names=[
                cst.ImportAlias(cst.Name(n), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for n in sorted(names)[:-1]] + [cst.ImportAlias(cst.Name(sorted(names)[-1]))])]))
        return out

    def statement(self, stmt: cst.BaseStatement, depth: int) -> Optional[cst.BaseStatement]:
        if isinstance(stmt, cst.SimpleStatementLine):
            if not any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                return stmt
            smalls = [s for s in (self.small(x) for x in stmt.body) if s is not None]
            if not smalls:
                return None
            if len(smalls) == len(stmt.body) and all(a is b for a, b in zip(smalls, stmt.body)):
                return stmt
            smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return stmt.with_changes(body=smalls)
        if depth >= 3 or not isinstance(stmt, _BLOCKS):
            return stmt
        return self.compound(stmt, depth)

    def compound(self, stmt: cst.BaseStatement, depth: int) -> cst.BaseStatement:
        changes = {}
        body = getattr(stmt, "body", None)
        if isinstance(body, cst.IndentedBlock):
            new = self.block(list(body.body), depth + 1, top=False)
            if any(a is not b for a, b in zip(new, body.body)) or len(new) != len(body.body):
                changes["body"] = body.with_changes(body=new)
        for part in ("orelse", "finalbody"):
            value = getattr(stmt, part, None)
            if value is not None:
                new_part = self.compound(value, depth + 1)
                if new_part is not value:
                    changes[part] = new_part
        handlers = getattr(stmt, "handlers", None)
        if handlers:
            new_handlers = [self.compound(h, depth + 1) for h in handlers]
            if any(a is not b for a, b in zip(new_handlers, handlers)):
                changes["handlers"] = new_handlers
        return stmt.with_changes(**changes) if changes else stmt

    def small(self, small: cst.BaseSmallStatement) -> Optional[cst.BaseSmallStatement]:
        if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
            return small
        keep = []
        for alias in small.names:
            local = alias.evaluated_alias or alias.evaluated_name
            if isinstance(small, cst.Import) and alias.asname is None:
                local = local.split(".")[0]
            if local in self.dead:
                self.removed.append(local)
            else:
                keep.append(alias)
        mod = dotted_name(small.module) if isinstance(small, cst.ImportFrom) and small.module is not None \
            and not small.relative else None
        extra = self.missing.pop(mod, []) if mod is not None else []
        if not keep and not extra:
            return None
        if len(keep) == len(small.names) and not extra:
            return small
        if small.lpar is None and len(keep) + len(extra) > 1 and len(
                f"from {mod} import " + ", ".join([a.evaluated_alias or a.evaluated_name for a in keep] + extra)) > 88:
            small = _parenthesized(small)  # past 88 characters: one name per line (black/ruff style)
        return small.with_changes(names=_aliases(small, keep, sorted(extra)))


def _parenthesized(imp: cst.ImportFrom) -> cst.ImportFrom:
    """``imp`` in parentheses, one name per line, with a trailing comma (its names are re-laid by :func:`_aliases`)."""
    def line(indent: str) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                           last_line=cst.SimpleWhitespace(indent))

    names = [a.with_changes(comma=cst.Comma(whitespace_after=line("    "))) for a in imp.names]
    names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=line("")))
    return imp.with_changes(names=names, lpar=cst.LeftParen(whitespace_after=line("    ")), rpar=cst.RightParen())


def _module_of(small: cst.CSTNode) -> Optional[str]:
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        return dotted_name(small.module)
    return None


def _imports(module: cst.Module) -> list[cst.BaseSmallStatement]:
    from codemods.base import _iter_imports

    return list(_iter_imports(module))


def _aliases(imp: cst.ImportFrom, keep: list[cst.ImportAlias], extra: list[str]) -> list[cst.ImportAlias]:
    """``keep`` + ``extra`` names laid out as the statement was: one per line when it was, a trailing comma kept."""
    original = list(imp.names)
    commas = [a.comma for a in original if isinstance(a.comma, cst.Comma)]
    sep = commas[0] if commas and len(original) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if imp.lpar is not None and len(original) == 1 and isinstance(original[0].comma, cst.Comma):
        sep = original[0].comma  # `(\n    a,\n)`: one name per line
    trailing = original[-1].comma if imp.lpar is not None else cst.MaybeSentinel.DEFAULT
    names = [a.with_changes(comma=sep) for a in keep] + [cst.ImportAlias(cst.Name(n), comma=sep) for n in extra]
    names[-1] = names[-1].with_changes(comma=trailing)
    return names
