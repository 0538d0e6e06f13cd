"""``imports`` (OM400): ``osmosis_ai`` import paths and names that moved are rewritten to where they live now.

* ``OsmosisRolloutModel`` / ``OsmosisStrandsAgent`` imported from ``osmosis_ai.rollout``,
  ``osmosis_ai.rollout.integrations`` or ``…integrations.agents`` (re-exports that 0.3 removed; spec
  workflow-api §1, §7) → ``osmosis_ai.rollout.integrations.agents.strands``, the path that works in every version;
* legacy test mode ``osmosis_ai.rollout.test_mode`` (v0.2.9–0.2.12) → ``osmosis_ai.rollout.eval.test_mode``
  (v0.2.13+) for the names that moved; the others get a TODO;
* names that were removed (0.2.7 observability helpers, ``HarborAgentWorkflowContext``/``MultiTurnMode`` in
  0.3): TODO markers, the import is left as it was.

Every import form is handled: ``from a import b as c`` (the alias is kept), ``import a.b as m`` + ``m.Name``
(the attribute becomes the imported name), star imports (an explicit import is added for the moved names the
module uses). Imports a rewrite leaves unused are removed; added ones are added once (OM401 moved, OM402 unused
removed; TODO OM490 removed name). A module that is not a legacy loop but calls the legacy SDK's tool helpers
(``get_tool_call_info``, ``create_tool_result``, … — e.g. the tool module beside a rewritten loop) gets their
definitions written in (OM403): osmosis-ai 0.2.18+ has none of them.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from codemods import codes
from codemods.base import (
    MOVED_IMPORTS,
    ImportTable,
    Rule,
    RuleContext,
    add_imports,
    dotted_name,
    has_skip_marker,
    remove_unused_imports,
    used_names,
    with_todo_comment,
)
from codemods.visit import Transformer

#: (old module, name) → new module (shared with the other rules, which treat both paths as the same object)
MOVED: dict[tuple[str, str], str] = MOVED_IMPORTS

#: (module, name) → what to do by hand
REMOVED: dict[tuple[str, str], str] = {
    **{("osmosis_ai.rollout", n): f"`{n}` was removed in osmosis-ai 0.2.8 (observability helpers); use logging/"
       "your own tracing instead" for n in (
        "LoggingSettings", "TracingSettings", "MetricsSettings", "get_logger", "configure_logging",
        "get_rollout_id", "set_rollout_id", "clear_context", "get_tracer", "configure_tracing", "reset_tracing",
        "span", "trace_async", "SpanNames", "get_metrics", "configure_metrics", "reset_metrics")},
    **{("osmosis_ai.rollout", n): f"`{n}` is gone from osmosis_ai.rollout in 0.3 (Harbor multi-turn context); "
       "drop it or pin osmosis-ai 0.2.x" for n in ("HarborAgentWorkflowContext", "MultiTurnMode")},
    **{("osmosis_ai.rollout.test_mode", n): f"`{n}` did not move to osmosis_ai.rollout.eval.test_mode (v0.2.13); "
       "use the eval test-mode runner API instead" for n in (
        "DatasetReader", "DatasetRow", "REQUIRED_COLUMNS", "dataset_row_to_request", "TestModeError",
        "DatasetValidationError", "DatasetParseError", "ToolValidationError")},
}

_MODULES = {m for m, _ in MOVED} | {m for m, _ in REMOVED}


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class ImportsRule(Rule):
    """Moved ``osmosis_ai`` import paths and names → their current place."""

    code = codes.IMPORTS.code
    name = "imports"
    summary = "osmosis_ai import paths/names that moved → current paths (aliases, star imports, unused removed)"
    trigger_words = ("osmosis_ai",)

    def transform(self, module: cst.Module, ctx: RuleContext) -> cst.Module:
        table = ImportTable.of(module)
        imported = [tuple(q.rsplit(".", 1)) for q in table.names.values() if "." in q]
        needs_work = (
            any(pair in MOVED or pair in REMOVED for pair in imported)
            or any(star in _MODULES for star in table.stars)
            or any(m.startswith("osmosis_ai") for m in table.modules.values())
        )
        if not needs_work:
            return self.legacy_helpers(module, table, ctx)  # the common case: nothing moved here
        ctx.module = module
        maybe_unused: set[str] = set()
        needed: list[tuple[str, str]] = []

        # `m.OsmosisStrandsAgent` can only be rewritten when some imported name or module is a prefix of a moved
        # path; otherwise only import lines change, and expressions need not be walked (nor rebuilt)
        bound = {*table.names.values(), *table.modules.values()}
        attributes = any(old == q or old.startswith(q + ".") for q in bound for old, _ in MOVED)

        new = module.visit(_MovedImportsRewriter(table, ctx, attributes, maybe_unused, needed))
        # star imports: the moved names the module uses get an explicit import
        for star in table.stars:
            for (old, name), target in MOVED.items():
                if old == star and name not in table.names and name in used_names(new):
                    needed.append((target, name))
                    ctx.edit(codes.IMPORT_MOVED.code, None, f"`{name}` (from `{star} import *`) now imported from {target}")
        if needed:
            new = add_imports(new, needed)
        if maybe_unused:
            new, removed = remove_unused_imports(new, maybe_unused)
            for name in removed:
                ctx.edit(codes.IMPORT_UNUSED.code, None, f"removed unused import `{name}`")
        return self.legacy_helpers(_merge_duplicate_from_imports(new, ctx), ImportTable.of(new), ctx)

    @staticmethod
    def legacy_helpers(module: cst.Module, table: ImportTable, ctx: RuleContext) -> cst.Module:
        """A module that is not a legacy loop itself but calls legacy SDK tool helpers (a tool module beside a
        rewritten loop) gets their definitions written in (OM403): osmosis-ai 0.2.18+ has none of them."""
        from codemods.rules._legacy_loop_emit import LEGACY_HELPER_MODULES, LEGACY_HELPERS, inline_legacy_helpers

        if not any(q.rpartition(".")[0] in LEGACY_HELPER_MODULES and local in LEGACY_HELPERS
                   for local, q in table.names.items()):
            return module
        if any(q.endswith(".RolloutAgentLoop") for q in table.names.values()):
            return module  # a legacy loop file: the legacy-loop rule decides (a loop left as it is keeps its imports)
        return inline_legacy_helpers(module, ctx, codes.IMPORT_HELPERS.code)


class _MovedImportsRewriter(Transformer):
    """Rewrites moved ``from … import`` lines and ``m.Name`` attributes to current paths (for ImportsRule)."""

    def __init__(self, table: ImportTable, ctx: RuleContext, attributes: bool, maybe_unused: set[str],
                 needed: list[tuple[str, str]]) -> None:
        super().__init__()
        self.table = table
        self.ctx = ctx
        self.attributes = attributes
        self.maybe_unused = maybe_unused
        self.needed = needed

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not self.attributes and isinstance(node, (cst.SimpleStatementLine, cst.BaseExpression)):
            return False  # statements hold statements; a line's import is read by its leave hook below
        return super().on_visit(node)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom) or has_skip_marker(original):
            return updated
        imp = updated.body[0]
        if imp.relative or imp.module is None or isinstance(imp.names, cst.ImportStar):
            return updated
        mod = dotted_name(imp.module)
        keep: list[cst.ImportAlias] = []
        moved: dict[str, list[cst.ImportAlias]] = {}
        todos: list[str] = []
        for alias in imp.names:
            name = dotted_name(alias.name) or ""
            target = MOVED.get((mod, name))
            if target is None:
                keep.append(alias)
                if (mod, name) in REMOVED:
                    todos.append(REMOVED[(mod, name)])
                continue
            moved.setdefault(target, []).append(alias)
            self.ctx.edit(codes.IMPORT_MOVED.code, original, f"`{name}` now imported from {target}")
        out: list[cst.BaseStatement] = []
        if keep:
            # the last kept name takes the layout of the original last name (trailing comma in parens)
            keep[-1] = keep[-1].with_changes(comma=imp.names[-1].comma)
            new_imp = imp.with_changes(names=keep) if moved else imp
            out.append(updated.with_changes(body=[new_imp]))
        for target, aliases in moved.items():
            aliases = [a.with_changes(comma=_comma()) for a in aliases]
            aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            stmt = cst.SimpleStatementLine(
                body=[cst.ImportFrom(module=cst.parse_expression(target), names=aliases)]
            )
            if not out:
                stmt = stmt.with_changes(leading_lines=updated.leading_lines)
            out.append(stmt)
        for reason in todos:
            out[0] = with_todo_comment(out[0], codes.IMPORT_REMOVED.code, reason)
            self.ctx.todo(codes.IMPORT_REMOVED.code, original, reason)
        if len(out) == 1:
            return out[0]
        return cst.FlattenSentinel(out)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        # `m.OsmosisStrandsAgent` with `import osmosis_ai.rollout as m` → the name, imported from its home
        resolved = self.table.resolve(original)
        if resolved is None:
            return updated
        mod, _, name = resolved.rpartition(".")
        target = MOVED.get((mod, name))
        if target is None:
            return updated
        bound = self.table.names.get(name)
        if bound is not None and bound != f"{target}.{name}" and bound != resolved:
            return updated  # the bare name means something else here: leave it
        head = original
        while isinstance(head, cst.Attribute):
            head = head.value
        if isinstance(head, cst.Name):
            self.maybe_unused.add(head.value)
        self.needed.append((target, name))
        self.ctx.edit(codes.IMPORT_MOVED.code, original, f"`{dotted_name(original)}` → `{name}` from {target}")
        return cst.Name(name)


def _merge_duplicate_from_imports(module: cst.Module, ctx: RuleContext) -> cst.Module:
    """A top-level ``from m import x`` repeated verbatim (e.g. one written by the user, one by a move) is kept once."""
    seen: set[tuple[str, str, Optional[str]]] = set()
    body = []
    changed = False
    for stmt in module.body:
        if (
            isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.ImportFrom)
            and not isinstance(stmt.body[0].names, cst.ImportStar)
            and stmt.body[0].module is not None
            and not stmt.body[0].relative
        ):
            imp = stmt.body[0]
            mod = dotted_name(imp.module) or ""
            keys = [(mod, dotted_name(a.name) or "", a.evaluated_alias) for a in imp.names]
            if mod.startswith("osmosis_ai") and all(k in seen for k in keys) and not any(l.comment for l in stmt.leading_lines):
                changed = True
                ctx.edit(codes.IMPORT_UNUSED.code, None, f"removed duplicate import from {mod}")
                continue
            seen.update(keys)
        body.append(stmt)
    return module.with_changes(body=body) if changed else module
