"""What to run for one changed file (``ast`` only): the pairs of entries to compare, or a verdict without running.

* only comments changed (the TODO markers of a refused file) → the code is identical: ``same`` without a run;
* a legacy loop (``RolloutAgentLoop``) rewritten or wrapped → its server over the legacy protocol vs the migrated
  module's server (``app``, or ``LocalBackend`` of its workflow and grader) over the workflow protocol;
* each driver the migrator wrapped as a workflow (its edits say which: `` `main` wrapped as MainWorkflow``, the
  ``__main__`` block, the module-level code) → the original entered the way that reaches the driver
  (:func:`codemods.verify.entries.find_entry`) vs the workflow served by ``LocalBackend``;
* any other code change → the original entry vs the same entry of the migrated text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from codemods import codes
from codemods.verify.entries import Entry, expression_entry, find_entry

#: The migrator's OM103/OM203 edit: which driver became which workflow class.
#: (A library module's entry is named by the run it lifted, an expression of ``prompt``: `Assistant().chat(prompt)`.)
_WRAPPED = re.compile(r"(?:`([^`]+)`|the `__main__` (block)|the (module)-level code[^`]*?) wrapped as (\w+)\(AgentWorkflow\)")

ORIGINAL_SCRIPT, ORIGINAL_CALL, LEGACY = "script", "call", "legacy"
WORKFLOW = "workflow"


@dataclass(frozen=True)
class Target:
    """One comparison: the original side (``mode`` + ``entry``) and the migrated side (``migrated_mode``:
    ``workflow`` with the class name, or the same entry as the original)."""

    name: str
    mode: str
    entry: Optional[Entry]
    migrated_mode: str
    workflow: Optional[str]
    how: str


@dataclass(frozen=True)
class Unchanged:
    """The code is identical: only comments differ."""

    how: str


def plan_file(old: str, new: str, edits: Sequence[Any]) -> Union[list[Target], Unchanged, str]:
    """The targets to run for a file, :class:`Unchanged`, or the reason nothing can be run."""
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg} (line {exc.lineno})"
    if ast.dump(old_tree) == ast.dump(new_tree):
        return Unchanged("only comments changed (TODO markers): the code is identical")
    if _defines_legacy_loop(old_tree):
        return [Target("loop", LEGACY, None, WORKFLOW, None,
                       "the loop's server over the legacy protocol vs the migrated server over the workflow protocol")]
    wrapped = _wrapped_drivers(edits, new_tree)
    targets: list[Target] = []
    drivers = frozenset(d for d, _ in wrapped)
    for driver, workflow in wrapped:
        entry = expression_entry(driver) if not driver.isidentifier() and driver != "<module>" \
            else find_entry(old, driver, drivers)
        if isinstance(entry, str):
            return entry
        targets.append(Target(driver if driver not in ("__main__", "<module>") else workflow, entry.kind, entry,
                              WORKFLOW, workflow, f"original: {entry.description}; migrated: {workflow} served by "
                              "LocalBackend"))
    if targets:
        return targets
    entry = find_entry(old, None)
    if isinstance(entry, str):
        return entry
    return [Target("program", entry.kind, entry, entry.kind, None, f"both: {entry.description}")]


def _defines_legacy_loop(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if name == "RolloutAgentLoop":
                    return True
    return False


def _wrapped_drivers(edits: Sequence[Any], new_tree: ast.Module) -> list[tuple[str, str]]:
    """``(driver, workflow class)`` for each driver wrapped as a workflow that the migrated module defines."""
    classes = {n.name for n in new_tree.body if isinstance(n, ast.ClassDef)}
    found: list[tuple[str, str]] = []
    for edit in edits:
        if getattr(edit, "code", "") not in (codes.STRANDS.wrap.code, codes.OPENAI.wrap.code):
            continue
        match = _WRAPPED.search(getattr(edit, "message", ""))
        if not match or match.group(4) not in classes:
            continue
        function, main, module, workflow = match.groups()
        driver = function or ("__main__" if main else "<module>")
        if (driver, workflow) not in found:
            found.append((driver, workflow))
    return found


def own_prompt(old: str, first_user_text: Optional[str]) -> Optional[str]:
    """The program's own prompt behind its first model call's user text: the longest string literal of the program
    that the text carries (the literal the migrator makes the rollout prompt), or the text itself."""
    if not first_user_text:
        return None
    tree = ast.parse(old)
    in_templates = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    literals = [n.value for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in in_templates]
    inside = [s.strip() for s in literals if len(s.strip()) >= 8 and s.strip() in first_user_text]
    return max(inside, key=len) if inside else first_user_text
