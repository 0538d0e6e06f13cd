"""The run summary (always printed) and the ``--report FILE.json`` document.

Report schema, version 1 (``"schema": "osmosis-migrate-report"``, ``"version": 1``)::

    {
      "schema": "osmosis-migrate-report", "version": 1,
      "mode": "write" | "diff" | "check", "strategy": "auto" | "rewrite" | "wrap",
      "target": {"version": "0.2" | "0.3", "source": str | null},
      "rules": [{"code": "OM100", "name": "strands-agent"}, ...],          # the rules that ran
      "summary": {"scanned": int, "skipped_prefilter": int, "opted_out": int, "changed": int,
                  "unchanged": int, "failed": int, "todos": int, "written": int,
                  "per_rule": {"strands-agent": {"files": int, "edits": int, "todos": int}, ...}},
      "files": [{"path": str, "status": "changed" | "unchanged" | "failed" | "opted-out",
                 "edits": [{"code": str, "line": int, "message": str}],
                 "todos": [{"code": str, "line": int, "reason": str}],
                 "error": str | null, "rule": str | null}]                   # prefiltered files are only counted
    }

Line numbers are those of the written (migrated) file (:func:`relocate_lines`): a TODO's is its marker comment's,
an edit's the line of what it changed; 0 when unknown. ``"target"`` (added in version 1 with ``osmosis-migrate
--target``): the osmosis-ai API the output was written for, and where that choice came from. Versions only
add keys; a key's meaning never changes within a version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from codemods.driver import (
    STATUS_CHANGED,
    STATUS_FAILED,
    STATUS_OPTED_OUT,
    STATUS_PREFILTERED,
    STATUS_UNCHANGED,
    FileResult,
)

SCHEMA = "osmosis-migrate-report"
VERSION = 1


@dataclass
class Summary:
    scanned: int = 0
    skipped_prefilter: int = 0
    opted_out: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    todos: int = 0
    written: int = 0
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)


def summarize(results: Sequence[FileResult], rules: Sequence[Any], written: int = 0) -> Summary:
    s = Summary(scanned=len(results), written=written)
    family = {r.code[:3]: r.name for r in rules}
    for r in rules:
        s.per_rule[r.name] = {"files": 0, "edits": 0, "todos": 0}
    for res in results:
        if res.status == STATUS_PREFILTERED:
            s.skipped_prefilter += 1
        elif res.status == STATUS_OPTED_OUT:
            s.opted_out += 1
        elif res.status == STATUS_CHANGED:
            s.changed += 1
        elif res.status == STATUS_UNCHANGED:
            s.unchanged += 1
        elif res.status == STATUS_FAILED:
            s.failed += 1
        s.todos += len(res.todos)
        touched: set[str] = set()
        for e in res.edits:
            name = family.get(e.code[:3])
            if name:
                s.per_rule[name]["edits"] += 1
                touched.add(name)
        for t in res.todos:
            name = family.get(t.code[:3])
            if name:
                s.per_rule[name]["todos"] += 1
                touched.add(name)
        for name in touched:
            if res.status == STATUS_CHANGED:
                s.per_rule[name]["files"] += 1
    return s


def format_summary(results: Sequence[FileResult], summary: Summary, mode: str, target: Any = None) -> str:
    """The summary printed after a run; ``target``: the :class:`codemods.targets.TargetChoice` used."""
    verb = {"write": "changed", "diff": "would change", "check": "would change"}[mode]
    lines = []
    head = (
        f"osmosis-migrate: {summary.scanned} file{'s' if summary.scanned != 1 else ''} scanned, "
        f"{summary.skipped_prefilter} skipped by prefilter, {summary.changed} {verb}, "
        f"{summary.unchanged} unchanged, {summary.failed} failed, {summary.todos} TODO{'s' if summary.todos != 1 else ''} left"
    )
    if summary.opted_out:
        head += f", {summary.opted_out} opted out"
    lines.append(head)
    if target is not None:
        lines.append(f"target: {target.describe()}")
    if summary.changed == 0 and summary.failed == 0 and summary.todos == 0:
        lines.append("nothing to migrate")
    for name, counts in summary.per_rule.items():
        if counts["edits"] or counts["todos"]:
            lines.append(f"  {name}: {counts['files']} file(s) {verb}, {counts['edits']} edit(s), {counts['todos']} TODO(s)")
    failed = [r for r in results if r.status == STATUS_FAILED]
    if failed:
        lines.append("failed:")
        lines.extend(f"  {r.path}: {r.error}" for r in failed)
    todo_files = [r for r in results if r.todos]
    if todo_files:
        lines.append("TODOs (see `osmosis-migrate todo`):")
        for r in todo_files:
            for t in r.todos:
                lines.append(f"  {r.path}:{t.line}: {t.code} {t.reason}")
    if mode == "write" and summary.written != summary.changed:
        lines.append(f"{summary.written} file(s) written")
    return "\n".join(lines)


def build_report(results: Sequence[FileResult], summary: Summary, *, mode: str, strategy: str, rules: Sequence[Any],
                 target: Any = None) -> dict[str, Any]:
    """The ``--report`` document (schema in the module docstring); ``target``: the TargetChoice used."""
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "mode": mode,
        "strategy": strategy,
        "target": None if target is None else {"version": target.target, "source": target.source},
        "rules": [{"code": r.code, "name": r.name} for r in rules],
        "summary": asdict(summary),
        "files": [
            {
                "path": r.path,
                "status": r.status,
                "edits": [{"code": e.code, "line": e.line, "message": e.message} for e in r.edits],
                "todos": [{"code": t.code, "line": t.line, "reason": t.reason} for t in r.todos],
                "error": r.error,
                "rule": r.error_rule,
            }
            for r in results
            if r.status != STATUS_PREFILTERED
        ],
    }


def write_report(path: str, report: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
        fh.write("\n")


def relocate_lines(result: FileResult) -> FileResult:
    """``result`` with its edit/TODO line numbers moved to the *written* file (the summary and report show those).

    A TODO points at its marker comment when the file has it; other lines follow the line diff of the input and
    the output: an unchanged line keeps its counterpart, a changed one maps to the start of what replaced it.
    Unknown lines (0) stay 0. Only changed files need it: elsewhere input and output lines are the same.
    """
    import difflib
    from dataclasses import replace

    from codemods.base import todo_marker

    if result.status != STATUS_CHANGED or result.old_bytes is None or result.new_bytes is None:
        return result
    old = result.old_bytes.decode("utf-8", "replace").splitlines()
    new = result.new_bytes.decode("utf-8", "replace").splitlines()
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for i in range(i1, i2):
            mapping[i + 1] = (j1 + (i - i1) if tag == "equal" else j1) + 1
    markers: dict[str, list[int]] = {}
    for n, line in enumerate(new, 1):
        stripped = line.strip()
        if stripped.startswith("# TODO(osmosis-migrate"):
            markers.setdefault(stripped, []).append(n)

    def moved(line: int) -> int:
        return mapping.get(line, min(line, len(new))) if line > 0 else 0

    todos = []
    for t in result.todos:
        found = markers.get(todo_marker(t.code, t.reason))
        todos.append(replace(t, line=found.pop(0) if found else moved(t.line)))
    result.edits = [replace(e, line=moved(e.line)) for e in result.edits]
    result.todos = todos
    return result
