"""What ``--verify`` records: one side's run of one case, the pair compared, and the verdict of a file.

Plain dataclasses (no runtime imports): the parent process builds them from the JSON its child processes write,
the CLI prints them and the ``--report`` document carries them (:meth:`FileVerification.to_json`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

SAME = "same"
DIFFERENT = "different"
NOT_VERIFIED = "not-verified"
ERROR = "error"

#: (prompt, ground truth): right labels, a multi-step chain, and a wrong label (a 0 reward must be kept too).
SAMPLE_CASES: tuple[tuple[str, str], ...] = (
    ("What is 2 + 3?", "5"),
    ("Compute (2 + 3) * 4", "20"),
    ("What is 6 * 7?", "41"),
)


@dataclass(frozen=True)
class ModelCall:
    """One chat-completions request as the model saw it, normalised: ``messages`` as ``(role, text, tool calls)``
    (ids and content-part shapes dropped: they differ between clients, not between behaviours) and the names of
    the tools offered."""

    messages: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]
    tools: tuple[str, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ModelCall":
        return cls(tuple((m[0], m[1], tuple(tuple(c) for c in m[2])) for m in data["messages"]), tuple(data["tools"]))


@dataclass
class RunOutcome:
    """One side of one case: the final answer (the model's reply to the run's last call), the reward (legacy loops
    and graded workflows only), the model calls made, how the run ended, what it tried to reach outside, and the
    error when it failed (``error_kind``: ``external`` / ``missing-file`` / ``timeout`` / ``exception``)."""

    answer: Optional[str] = None
    reward: Optional[float] = None
    calls: list[ModelCall] = field(default_factory=list)
    error: Optional[str] = None
    error_kind: Optional[str] = None
    external: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)
    first_user_text: Optional[str] = None

    @property
    def model_calls(self) -> int:
        return len(self.calls)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RunOutcome":
        return cls(
            answer=data.get("answer"), reward=data.get("reward"),
            calls=[ModelCall.from_json(c) for c in data.get("calls") or []],
            error=data.get("error"), error_kind=data.get("error_kind"), external=list(data.get("external") or []),
            stubs=list(data.get("stubs") or []), first_user_text=data.get("first_user_text"),
        )

    def show(self) -> str:
        """One line: the answer, the reward, the model calls (or the error)."""
        calls = f"{self.model_calls} model call(s)"
        if self.error is not None:
            return f"error {self.error} after {calls}"
        reward = "" if self.reward is None else f"reward {self.reward}, "
        return f"{reward}answer {self.answer!r}, {calls}"


@dataclass
class CaseOutcome:
    """One prompt run on both sides; ``difference`` says what differs (``None``: the same)."""

    target: str
    prompt: str
    label: str
    original: RunOutcome
    migrated: RunOutcome
    difference: Optional[str] = None

    @property
    def same(self) -> bool:
        return self.difference is None


@dataclass
class FileVerification:
    """Verdict for one file: ``same`` / ``different`` / ``not-verified`` (``reason`` says why) / ``error``.

    ``how`` says how the verdict was reached (the entry that was run on each side, or that only comments changed);
    ``stubs`` the modules the venv lacks that were stubbed to run the program.
    """

    path: str
    status: str
    reason: Optional[str] = None
    cases: list[CaseOutcome] = field(default_factory=list)
    how: Optional[str] = None
    stubs: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        """Human-readable lines for the CLI summary."""
        stubbed = f"; stubbed: {', '.join(self.stubs)}" if self.stubs else ""
        if self.status == SAME:
            if not self.cases:
                return [f"  {self.path}: same ({self.how})"]
            targets = sorted({c.target for c in self.cases})
            return [f"  {self.path}: same behaviour on {len(self.cases)} prompt(s) ({', '.join(targets)}; "
                    f"{self.how}{stubbed})"]
        if self.status == NOT_VERIFIED:
            return [f"  {self.path}: not verifiable: {self.reason}{stubbed}"]
        if self.status == ERROR:
            return [f"  {self.path}: error: {self.reason}"]
        lines = [f"  {self.path}: DIFFERENT ({self.how}{stubbed})"]
        for c in self.cases:
            if not c.same:
                lines.append(f"    {c.target} on {c.prompt!r} (label {c.label!r}): {c.difference}")
                lines.append(f"      original: {c.original.show()}")
                lines.append(f"      migrated: {c.migrated.show()}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The ``--report`` record of this verdict (``verify`` list of the report document)."""
        return {
            "path": self.path, "verdict": self.status, "reason": self.reason, "how": self.how, "stubs": self.stubs,
            "cases": [
                {"target": c.target, "prompt": c.prompt, "label": c.label, "difference": c.difference,
                 "original": _side_json(c.original), "migrated": _side_json(c.migrated)}
                for c in self.cases
            ],
        }


def _side_json(run: RunOutcome) -> dict[str, Any]:
    data = asdict(run)
    data["calls"] = run.model_calls
    return data
