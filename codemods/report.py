"""The run summary (always printed) and the ``--report FILE.json`` document (also ``--output-format json``).

**What the TODO counts count**: the TODO *markers open* in the files scanned, read from each file's final text —
the written text after a run that writes, the text that would be written after ``--check``/``--diff``, the file
as it is when it failed or was not parsed (:attr:`codemods.driver.FileResult.markers`). ``osmosis-migrate todo``
counts the same markers in the same files, so a re-run and ``todo`` agree. "Added" markers are those of the final
text that the file did not have before this run.

Report schema, version 2 (``"schema": "osmosis-migrate-report"``, ``"version": 2``)::

    {
      "schema": "osmosis-migrate-report", "version": 2,
      "mode": "write" | "diff" | "check", "strategy": "auto" | "rewrite" | "wrap",
      "target": {"version": "0.2" | "0.3", "source": str | null, "why": str,
                 "requirement": null | {"file": str, "line": int, "where": str, "text": str, "extras": [str],
                                        "specifier": str, "marker": str}},
      "requires": {"requirement": str | null, "extras": {"server": [path], ...}, "files": [path],
                   "osmosis_compat": [path], "legacy_api": [path], "declared": str | null},
      "rules": [{"code": "OM100", "name": "strands-agent"}, ...],          # the rules that ran
      "summary": {"scanned": int, "skipped_prefilter": int, "opted_out": int, "changed": int,
                  "unchanged": int, "failed": int, "written": int,
                  "todos": int, "todos_added": int, "files_with_todos": int,
                  "per_rule": {"strands-agent": {"files": int, "edits": int, "todos": int}, ...}},
      "refused": null | {"reason": str, "files": [path]},                 # nothing written, and why
      "files": [{"path": str, "status": "changed" | "unchanged" | "failed" | "opted-out" | "skipped",
                 "edits": [{"code": str, "line": int, "message": str}],
                 "todos": [{"code": str, "line": int, "lines": int, "reason": str, "new": bool}],
                 "error": str | null, "rule": str | null,
                 "diff": str}]                                             # "diff" only with --diff
    }

``files`` lists every file that was parsed, failed, opted out, or carries TODO markers (files skipped by the
prefilter without markers are only counted). ``todos`` are the file's open markers (``line``: its first line in
the final text, ``lines``: how many it spans, ``new``: added by this run); ``summary.todos`` is their total, and
``per_rule[…].todos`` the part in each rule's code family (markers of rules not selected count in the total only).
Edit lines are those of the written file (:func:`relocate_lines`); 0 when unknown. Version 2 (this one) made
``todos`` the open markers (version 1: what the rules reported in this run, which a re-run no longer reported) and
added ``target.why``/``target.requirement``, ``requires``, ``refused``, ``todos_added``, ``files_with_todos``,
``lines``, ``new`` and ``diff``. Versions only add keys, or bump the version when a meaning changes.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional, Sequence

from codemods.driver import (
    STATUS_CHANGED,
    STATUS_FAILED,
    STATUS_OPTED_OUT,
    STATUS_PREFILTERED,
    STATUS_UNCHANGED,
    FileResult,
)

SCHEMA = "osmosis-migrate-report"
VERSION = 2


@dataclass
class Summary:
    """The run's counts (see the module docstring for what ``todos`` counts)."""

    scanned: int = 0
    skipped_prefilter: int = 0
    opted_out: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    written: int = 0
    todos: int = 0
    todos_added: int = 0
    files_with_todos: int = 0
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)


def added_flags(result: FileResult) -> list[bool]:
    """For each of ``result.markers``: whether this run added it (the file's text before the run had fewer
    markers with that code and reason)."""
    if result.status != STATUS_CHANGED or result.old_bytes is None:
        return [False] * len(result.markers)
    from codemods.markers import find_markers

    before = Counter(m.text for m in find_markers(result.old_bytes))
    flags = []
    for m in result.markers:
        if before[m.text] > 0:
            before[m.text] -= 1
            flags.append(False)
        else:
            flags.append(True)
    return flags


def summarize(results: Sequence[FileResult], rules: Sequence[Any], written: int = 0) -> Summary:
    """Count ``results``: statuses, edits per rule, open TODO markers (total, added, per rule family)."""
    s = Summary(scanned=len(results), written=written)
    family = {r.code[:3]: r.name for r in rules}
    for r in rules:
        s.per_rule[r.name] = {"files": 0, "edits": 0, "todos": 0}
    by_status = {STATUS_PREFILTERED: "skipped_prefilter", STATUS_OPTED_OUT: "opted_out", STATUS_CHANGED: "changed",
                 STATUS_UNCHANGED: "unchanged", STATUS_FAILED: "failed"}
    for res in results:
        key = by_status.get(res.status)
        if key:
            setattr(s, key, getattr(s, key) + 1)
        s.todos += len(res.markers)
        s.todos_added += sum(added_flags(res))
        s.files_with_todos += bool(res.markers)
        touched: set[str] = set()
        for e in res.edits:
            name = family.get(e.code[:3])
            if name:
                s.per_rule[name]["edits"] += 1
                touched.add(name)
        for m in res.markers:
            name = family.get(m.code[:3])
            if name:
                s.per_rule[name]["todos"] += 1
        for t in res.todos:  # a rule that only left markers in this file still acted on it
            name = family.get(t.code[:3])
            if name:
                touched.add(name)
        if res.status == STATUS_CHANGED:
            for name in touched:
                s.per_rule[name]["files"] += 1
    return s


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def todo_count_text(n: int, added: Optional[int] = None, *, would: bool = False) -> str:
    """``4 TODO markers open (4 added by this run)`` — the same words the summary and ``todo`` use."""
    text = f"{_plural(n, 'TODO marker')} {'would be open' if would else 'open'}"
    return text if added is None else f"{text} ({added} added by this run)"


def format_summary(results: Sequence[FileResult], summary: Summary, mode: str, target: Any = None,
                   *, refused: bool = False, needs_lines: Sequence[str] = ()) -> str:
    """The summary printed after a run; ``target``: the :class:`codemods.targets.TargetChoice` used;
    ``refused``: nothing was written (uncommitted changes), so changes are said as "would change";
    ``needs_lines``: the requirement the migrated files need (:meth:`codemods.needs.Needs.describe`)."""
    would = mode != "write" or refused
    verb = "would change" if would else "changed"
    head = (
        f"osmosis-migrate: {_plural(summary.scanned, 'file')} scanned, {summary.skipped_prefilter} skipped by "
        f"prefilter, {summary.changed} {verb}, {summary.unchanged} unchanged, {summary.failed} failed"
    )
    if summary.opted_out:
        head += f", {summary.opted_out} opted out"
    head += "; " + todo_count_text(summary.todos, summary.todos_added, would=would)
    lines = [head]
    if target is not None:
        lines.append(f"target: {target.describe()}")
    lines.extend(needs_lines)
    if summary.changed == 0 and summary.failed == 0 and summary.todos == 0:
        lines.append("nothing to migrate")
    for name, counts in summary.per_rule.items():
        if counts["edits"] or counts["todos"] or counts["files"]:
            lines.append(f"  {name}: {counts['files']} file(s) {verb}, {counts['edits']} edit(s), "
                         f"{counts['todos']} TODO marker(s)")
    failed = [r for r in results if r.status == STATUS_FAILED]
    if failed:
        lines.append("failed:")
        lines.extend(f"  {r.path}: {r.error}" for r in failed)
    if summary.todos:
        lines.append("TODOs (the same list: `osmosis-migrate todo`):")
        for r in results:
            lines.extend(f"  {r.path}:{m.line}: {m.code} {m.reason}" for m in r.markers)
    if mode == "write" and not refused and summary.written != summary.changed:
        lines.append(f"{summary.written} file(s) written")
    return "\n".join(lines)


def _listed(r: FileResult) -> bool:
    return r.status != STATUS_PREFILTERED or bool(r.markers)


def build_report(results: Sequence[FileResult], summary: Summary, *, mode: str, strategy: str, rules: Sequence[Any],
                 target: Any = None, requires: Optional[dict[str, Any]] = None,
                 refused: Optional[dict[str, Any]] = None, diffs: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The report document (schema in the module docstring); ``target``: the TargetChoice used; ``requires``:
    :meth:`codemods.needs.Needs.as_json`; ``refused``: why nothing was written; ``diffs``: path → unified diff."""
    files = []
    for r in results:
        if not _listed(r):
            continue
        entry: dict[str, Any] = {
            "path": r.path,
            "status": r.status,
            "edits": [{"code": e.code, "line": e.line, "message": e.message} for e in r.edits],
            "todos": [{"code": m.code, "line": m.line, "lines": m.lines, "reason": m.reason, "new": new}
                      for m, new in zip(r.markers, added_flags(r))],
            "error": r.error,
            "rule": r.error_rule,
        }
        if diffs is not None and r.path in diffs:
            entry["diff"] = diffs[r.path]
        files.append(entry)
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "mode": mode,
        "strategy": strategy,
        "target": None if target is None else target.as_json(),
        "requires": requires,
        "rules": [{"code": r.code, "name": r.name} for r in rules],
        "summary": asdict(summary),
        "refused": refused,
        "files": files,
    }


def write_report(path: str, report: dict[str, Any]) -> None:
    """Write the report document as indented JSON."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(report_json(report))


def report_json(report: dict[str, Any]) -> str:
    """The report document as text (indented JSON and a final newline)."""
    return json.dumps(report, indent=2) + "\n"


def line_maps(result: FileResult) -> tuple[dict[int, int], dict[int, int]]:
    """(input line → written line, written line → input line) for a changed file, from the line diff of its input
    and output: an unchanged line maps to its counterpart, a changed or inserted one to the start of what stands in
    its place on the other side. Empty maps for other files (their lines are the same on both sides)."""
    if result.status != STATUS_CHANGED or result.old_bytes is None or result.new_bytes is None:
        return {}, {}
    old = result.old_bytes.decode("utf-8", "replace").splitlines()
    new = result.new_bytes.decode("utf-8", "replace").splitlines()
    forward: dict[int, int] = {}
    backward: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for i in range(i1, i2):
            forward[i + 1] = (j1 + (i - i1) if tag == "equal" else j1) + 1
        for j in range(j1, j2):
            backward[j + 1] = (i1 + (j - j1) if tag == "equal" else min(i1, max(len(old) - 1, 0))) + 1
    return forward, backward


def relocate_lines(result: FileResult) -> FileResult:
    """``result`` with its edit and reported-TODO line numbers moved to the *written* file (the summary and report
    show those; markers carry their own). Unknown lines (0) stay 0. Only changed files need it."""
    if result.status != STATUS_CHANGED or result.old_bytes is None or result.new_bytes is None:
        return result
    forward, _ = line_maps(result)
    size = result.new_bytes.count(b"\n") + 1

    def moved(line: int) -> int:
        return forward.get(line, min(line, size)) if line > 0 else 0

    from codemods.markers import marker_text

    at: dict[str, list[int]] = {}
    for m in result.markers:  # identical markers (two agents left for one reason) are taken in order
        at.setdefault(m.text, []).append(m.line)

    def marker_line(code: str, reason: str, line: int) -> int:
        found = at.get(marker_text(code, reason))
        return found.pop(0) if found else moved(line)

    result.edits = [replace(e, line=moved(e.line)) for e in result.edits]
    result.todos = [replace(t, line=marker_line(t.code, t.reason, t.line)) for t in result.todos]
    return result
