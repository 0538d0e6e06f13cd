"""The last touches of a migrated module: the generated prompt helper, then its imports (the ones the writers need
added once, the ones a rewrite left unused removed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from codemods.analysis.module import assigned_name
from codemods.base import ImportTable, add_imports, remove_unused_imports
from codemods.osmosis_api import (
    PROMPT_TEXT,
    ROLLOUT_MODEL,
    ROLLOUT_MODEL_IMPORTS,
    prompt_helper_node,
    rollout_model_node,
)
from codemods.syntax import is_docstring, is_import_stmt, with_blank_lines

if TYPE_CHECKING:
    from codemods.framework import Framework


def fw_finish(module: cst.Module, fw: Framework) -> cst.Module:
    """Framework hook (e.g. module-level models), the prompt helper, then the imports."""
    if fw.prompt_text_needed:
        module = add_prompt_helper(module, fw)
    if fw.rollout_model_needed:
        module = add_helper(module, ROLLOUT_MODEL, rollout_model_node(), fw,
                            uses={name: 1 for _, name in ROLLOUT_MODEL_IMPORTS})
    # the names the module's statements use, taken before imports are added (new imports shift the statements)
    used = None
    body_counts = fw.body_counts
    if fw.replaced and body_counts is not None and len(body_counts) == len(module.body):
        used = set()
        for stmt, c in zip(module.body, body_counts):
            if not is_import_stmt(stmt):
                used.update(c)
    if fw.needs_asyncio and ImportTable.of(module).modules.get("asyncio") != "asyncio":
        module = add_plain_import(module, "asyncio")
    for local, new in sorted(fw.import_aliases):
        module = import_beside(module, local, new)
    if fw.rollout_model_needed:
        fw.needed.extend(x for x in ROLLOUT_MODEL_IMPORTS if x not in fw.needed)
    if fw.needed:
        module = add_imports(module, fw.needed)
    if fw.replaced:
        module, removed = remove_unused_imports(module, fw.replaced, used=used)
        for name in removed:
            fw.ctx.edit(fw.codes.imports.code, None, f"removed unused import `{name}`")
        if removed and module.body and not module.header:
            # an import removed from the very top leaves no blank line at the start of the file
            first = module.body[0]
            lines = list(first.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            if len(lines) != len(first.leading_lines):
                module = module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])
    return module


def add_prompt_helper(module: cst.Module, fw: Optional["Framework"] = None) -> cst.Module:
    """Generate ``_prompt_text`` into the module (once) before its first class or function."""
    return add_helper(module, PROMPT_TEXT, prompt_helper_node(), fw)


def add_helper(module: cst.Module, name: str, helper: cst.FunctionDef, fw: Optional["Framework"] = None,
               uses: Optional[dict[str, int]] = None) -> cst.Module:
    """Generate the helper function ``name`` (``helper``) into the module (once) before its first class or function,
    after its imports."""
    body = list(module.body)
    if any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in body):
        return module
    at = next((i for i, s in enumerate(body) if isinstance(s, (cst.FunctionDef, cst.ClassDef)) or (
        isinstance(s, cst.SimpleStatementLine) and assigned_name(s) is None and not is_import_stmt(s)
        and not is_docstring(s))), len(body))
    # after the imports at least
    last_import = max((i for i, s in enumerate(body) if is_import_stmt(s)), default=-1)
    at = max(at, last_import + 1)
    helper = with_blank_lines(helper.with_changes(leading_lines=[]))
    body.insert(at, helper)
    if fw is not None and fw.body_counts is not None:
        fw.body_counts.insert(at, dict(uses or {}))  # the imports the helper uses stay
    if at + 1 < len(body):
        body[at + 1] = with_blank_lines(body[at + 1])
    return module.with_changes(body=body)


def import_beside(module: cst.Module, local: str, new: str) -> cst.Module:
    """Add ``new`` to the ``from … import`` statement that binds ``local`` (same module, relative dots kept)."""
    body = list(module.body)
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for j, small in enumerate(stmt.body):
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            bound = [a.evaluated_alias or a.evaluated_name for a in small.names]
            if new in bound:
                return module
            if local not in bound:
                continue
            names = list(small.names)
            if small.lpar is not None and isinstance(names[-1].comma, cst.Comma):
                names.append(cst.ImportAlias(name=cst.Name(new), comma=names[-1].comma))
            else:
                names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                names.append(cst.ImportAlias(name=cst.Name(new)))
            smalls = list(stmt.body)
            smalls[j] = small.with_changes(names=names)
            body[i] = stmt.with_changes(body=smalls)
            return module.with_changes(body=body)
    return module


def add_plain_import(module: cst.Module, name: str) -> cst.Module:
    """``import name`` before the module's first import (after the docstring / ``__future__``)."""
    body = list(module.body)
    at = 0
    for i, stmt in enumerate(body):
        if i == 0 and is_docstring(stmt):
            at = 1
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.ImportFrom) \
                and isinstance(stmt.body[0].module, cst.Name) and stmt.body[0].module.value == "__future__":
            at = i + 1
            continue
        break
    new = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name(name))])])
    if at < len(body):
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=[])
    body.insert(at, new)
    return module.with_changes(body=body)
