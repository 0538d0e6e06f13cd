"""Compare the two sides of a case, and say why a side could not be compared.

What is compared is what both sides have: the number of model calls, each call's messages (role, text, tool calls
with their arguments) and offered tool names, the final answer, and the reward when both have one. Text that
changes from run to run by itself (timestamps, uuids, object addresses) is masked before comparing.
"""

from __future__ import annotations

import re
from typing import Optional

from codemods.verify.model import ModelCall, RunOutcome

_VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?"  # ISO date-times
    r"|\b\d{1,2}:\d{2}(:\d{2})?\s*(AM|PM|am|pm)?\b"  # clock times
    r"|\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b"  # uuids
    r"|\b[0-9a-f]{16,}\b"  # hex ids
    r"|0x[0-9a-f]{6,}"  # object addresses
)


def mask(text: str) -> str:
    return _VOLATILE.sub("<volatile>", text)


def _masked(call: ModelCall) -> ModelCall:
    return ModelCall(tuple((r, mask(t), c) for r, t, c in call.messages), call.tools)


def difference(original: RunOutcome, migrated: RunOutcome) -> Optional[str]:
    """What differs between the two runs of a case (``None``: the same). ``original`` ran without error."""
    if migrated.error is not None:
        return f"the migrated program failed: {migrated.error}"
    if original.model_calls != migrated.model_calls:
        return f"{original.model_calls} model call(s) originally, {migrated.model_calls} migrated"
    ours, theirs = [_masked(c) for c in original.calls], [_masked(c) for c in migrated.calls]
    if ours != theirs and sorted(ours, key=repr) == sorted(theirs, key=repr):
        # the same calls in another order: runs that go concurrently (a guardrail beside its agent, gather) finish
        # in any order; the replies, a function of the calls, are then the same too
        return _reward_difference(original, migrated)
    for i, (a, b) in enumerate(zip(ours, theirs), 1):
        if a.tools != b.tools:
            return f"model call {i} offers tools {list(a.tools)} originally, {list(b.tools)} migrated"
        if a.messages != b.messages:
            return f"model call {i} sends different messages: {_first_difference(a, b)}"
    if original.answer != migrated.answer:
        return f"final answer {original.answer!r} originally, {migrated.answer!r} migrated"
    return _reward_difference(original, migrated)


def _reward_difference(original: RunOutcome, migrated: RunOutcome) -> Optional[str]:
    if original.reward is not None and migrated.reward is not None and original.reward != migrated.reward:
        return f"reward {original.reward} originally, {migrated.reward} migrated"
    return None


def _first_difference(a: ModelCall, b: ModelCall) -> str:
    for j, (x, y) in enumerate(zip(a.messages, b.messages), 1):
        if x != y:
            return f"message {j} is {_show(x)} originally, {_show(y)} migrated"
    return f"{len(a.messages)} message(s) originally, {len(b.messages)} migrated"


def _show(message: tuple) -> str:
    role, text, calls = message
    shown = f"{role} {text[:120]!r}"
    if calls:
        shown += " calling " + ", ".join(f"{n}({args})" for n, args in calls)
    return shown


def not_comparable(run: RunOutcome) -> Optional[str]:
    """Why the original side of a case cannot be compared (it reached outside the sandbox — even when it went on
    without, its real behaviour depends on what it would have got —, it failed, or it never called a model)."""
    if run.external:
        return "the original needs " + "; ".join(run.external)
    if run.error is not None:
        if run.error_kind == "missing-file":
            return f"the program's entry {run.error}"
        if run.error_kind == "environment":
            return f"the original {run.error}"
        if run.error_kind == "timeout":
            return f"the original {run.error}"
        return f"the original fails on the sample prompt: {run.error}"
    if not run.calls:
        return "the original makes no model call on the sample prompt"
    return None
