"""``osmosis-migrate --verify``: run each changed program as it is really entered, original vs migrated, on the same
sample prompts under the deterministic ``ScriptedPolicy``, and say ``same`` / ``different`` (the case named) /
``not verifiable`` (the precise reason).

* the **original** runs as users run it (:mod:`.entries`: the module as ``__main__`` with the prompt on stdin or
  in ``sys.argv``, a Lambda-style handler with an event, a function or route with the prompt…), in a child process
  whose model classes and clients all answer from a local chat-completions endpoint (:mod:`.child.redirect`) and
  whose walls record what else it reaches for — the network, AWS, a process (:mod:`.child.sandbox`);
* the **migrated** program runs as a workflow: ``LocalBackend`` through osmosis-compat (which runs migrated code via
  the ``osmosis_ai`` shim), one rollout per prompt driven by the fake workflow controller — or, when the migration
  made no workflow for it, by the same entry as the original; a legacy loop's server is compared with the migrated
  server over each one's protocol;
* compared (:mod:`.compare`): the model calls (count, messages, tools offered), the final answer and the reward
  where both have one. A file whose code did not change (only TODO comments) is ``same`` without a run.

The rules and this package import no runtime code at module level: only the child processes import osmosis-compat
and the frameworks. Verification imports and runs the user's code, as serving it would.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

from codemods.verify.compare import difference, not_comparable
from codemods.verify.model import (
    DIFFERENT,
    ERROR,
    NOT_VERIFIED,
    SAME,
    SAMPLE_CASES,
    CaseOutcome,
    FileVerification,
    RunOutcome,
)
from codemods.verify.plan import WORKFLOW, Target, Unchanged, own_prompt, plan_file
from codemods.verify.runner import SideFailed, SideSpec, Zygote, run_side

__all__ = ["DIFFERENT", "ERROR", "NOT_VERIFIED", "SAME", "SAMPLE_CASES", "CaseOutcome", "FileVerification",
           "RunOutcome", "Zygote", "verify_migrations", "verify_file"]


def verify_migrations(items: Sequence[tuple[str, str, str, Sequence[Any]]],
                      cases: Sequence[tuple[str, str]] = SAMPLE_CASES, *, jobs: int = 2,
                      zygote: Optional[Zygote] = None, target: str = "0.3") -> list[FileVerification]:
    """Verify each ``(path, original_text, migrated_text, edits)``; verdicts in the same order. ``jobs`` files are
    verified at a time; ``zygote``: a warm :class:`~codemods.verify.runner.Zygote` to fork from (else one is started
    for the call, when anything has to run); ``target``: the osmosis-ai the migration wrote for (``0.3``: workflows
    are driven by today's polling controller; ``0.2``: by the callback controller).

    Raises ``ImportError`` (with what to install) when osmosis-compat is not installed (the child processes need
    it); everything the user's code does is reported per file, never raised.
    """
    import importlib.util

    if importlib.util.find_spec("osmosis_compat") is None:  # pragma: no cover - depends on the installation
        raise ImportError("--verify needs osmosis-compat installed (pip install osmosis-compat)")
    plans = [plan_file(old, new, edits) for _, old, new, edits in items]
    if not any(isinstance(p, list) for p in plans):  # nothing to run: no process to start
        return [verify_file(*item, cases=cases, target=target) for item in items]
    with contextlib.ExitStack() as stack:
        warm = zygote if zygote is not None else stack.enter_context(Zygote())
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=max(1, jobs)))
        return list(pool.map(lambda item: verify_file(*item, cases=cases, zygote=warm, target=target), items))


def verify_file(path: str, old: str, new: str, edits: Sequence[Any],
                cases: Sequence[tuple[str, str]] = SAMPLE_CASES, zygote: Optional[Zygote] = None,
                target: str = "0.3") -> FileVerification:
    """The verdict for one file (see the package docstring); ``zygote`` runs the sides (else a process each)."""
    plan = plan_file(old, new, edits)
    if isinstance(plan, Unchanged):
        return FileVerification(path, SAME, how=plan.how)
    if isinstance(plan, str):
        return FileVerification(path, NOT_VERIFIED, plan)
    verdicts = [_verify_target(path, old, new, piece, tuple(cases), zygote, target) for piece in plan]
    stubs = sorted({s for v in verdicts for s in v.stubs})
    how = "; ".join(v.how or "" for v in verdicts)
    all_cases = [c for v in verdicts for c in v.cases]
    for status in (ERROR, DIFFERENT, NOT_VERIFIED):
        failing = [v for v in verdicts if v.status == status]
        if failing:
            reason = "; ".join(f"{v.reason}" for v in failing if v.reason) or None
            return FileVerification(path, status, reason, all_cases, how, stubs)
    return FileVerification(path, SAME, None, all_cases, how, stubs)


def _verify_target(path: str, old: str, new: str, target: Target, cases: tuple, zygote: Optional[Zygote],
                   version: str) -> FileVerification:
    entry = target.entry.to_json() if target.entry else None
    label = f"`{target.name}`"
    try:
        originals = run_side(SideSpec(target.mode, path, old, entry, None, cases), zygote=zygote)
        fed = _migrated_cases(old, target, cases, originals)
        migrated = run_side(SideSpec(target.migrated_mode, path, new, entry, target.workflow,
                                     tuple(c for _, c in fed), old, version), zygote=zygote)
    except SideFailed as exc:
        return FileVerification(path, ERROR if exc.ours else NOT_VERIFIED, f"{label}: {exc}", how=target.how)
    stubs = sorted({s for run in [*originals, *migrated] for s in run.stubs})
    outcomes, reasons = [], []
    for (i, (prompt, gold)), run in zip(fed, migrated):
        original = originals[i]
        reason = not_comparable(original)
        if reason is not None:
            reasons.append(reason)
            continue
        outcomes.append(CaseOutcome(target.name, prompt, gold, original, run, difference(original, run)))
    if not outcomes:
        first = reasons[0] if reasons else "no case could be compared"
        return FileVerification(path, NOT_VERIFIED, f"{label}: {first}", how=target.how, stubs=stubs)
    status = SAME if all(c.same for c in outcomes) else DIFFERENT
    return FileVerification(path, status, None, outcomes, target.how, stubs)


def _migrated_cases(old: str, target: Target, cases: tuple, originals: list[RunOutcome]) -> list[tuple[int, tuple]]:
    """The cases the migrated side runs, with the index of the original run each is compared with. A workflow gets
    the sample prompt when the original carried it to the model, else the program's own prompt (the literal the
    migrator made the rollout prompt) — once, since the original then ran the same on every sample."""
    if target.migrated_mode != WORKFLOW:
        return list(enumerate(cases))
    fed: list[tuple[int, tuple]] = []
    own_seen: Optional[str] = None
    for i, ((prompt, gold), run) in enumerate(zip(cases, originals)):
        text = run.first_user_text
        if run.error is None and text and prompt not in text:
            own = own_prompt(old, text)
            if own_seen is not None and own == own_seen:
                continue
            own_seen = own
            fed.append((i, (own, gold)))
        else:
            fed.append((i, (prompt, gold)))
    return fed
