"""Per-row results of an evaluation run, the summary over them, and their renderings (table, JSONL)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "RowResult", "Summary", "format_first_errors", "format_summary", "summarize", "write_results",
    "last_assistant_text",
]

#: Row statuses: the rollout finished with a usable reward / it ran but failed / the row never ran.
COMPLETED, FAILED, INVALID = "completed", "failed", "invalid"


@dataclass
class RowResult:
    """What one dataset row produced.

    ``status`` is ``"completed"`` (the rollout finished and produced a reward), ``"failed"`` (it ran but ended in
    an error, no callback, or no reward) or ``"invalid"`` (the row itself was unusable). ``category`` names the
    failure: ``invalid_row``, ``rejected`` (the server refused the rollout), ``timeout`` (no result in time),
    ``agent_error`` / ``validation_error`` / ``http_error`` (the agent's own failure, as its protocol
    categorised it), ``grader_error`` (the grader failed or set no reward), ``no_reward`` (the agent completed
    without a reward) or ``runner_error`` (a bug in the runner or fakes — please report it).
    """

    row_index: int
    status: str
    rollout_id: str | None = None
    reward: float | None = None
    passed: bool = False
    error: str | None = None
    category: str | None = None
    latency_ms: float | None = None
    finish_reason: str | None = None
    final_message: str | None = None
    messages: list[Any] = field(default_factory=list)
    samples: dict[str, Any] | None = None
    """Workflow rollouts: ``{sample_id: {"reward", "messages"}}`` for every sample (``messages`` above is the
    first sample's)."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["samples"] is None:
            data.pop("samples")
        return data


@dataclass(frozen=True)
class Summary:
    """Aggregates over a run. Rewards and latencies are over completed rows only."""

    total: int
    completed: int
    failed: int
    invalid: int
    passed: int
    pass_threshold: float
    reward_mean: float | None
    reward_min: float | None
    reward_max: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    failures_by_category: dict[str, int]
    wall_time_s: float
    graded: bool = True
    """False when the agent has no grader: rows are run and recorded but not scored (no pass rate)."""

    @property
    def pass_rate(self) -> float | None:
        """Passed rows over all rows (invalid and failed rows count as not passed); None for an empty run or an
        ungraded one."""
        return self.passed / self.total if self.total and self.graded else None

    @property
    def rows_per_second(self) -> float | None:
        return self.total / self.wall_time_s if self.wall_time_s > 0 and self.total else None


def summarize(results: Sequence[RowResult], *, pass_threshold: float, wall_time_s: float,
              graded: bool = True) -> Summary:
    """Build the :class:`Summary` of ``results`` (``graded=False``: the agent has no grader, nothing is scored)."""
    completed = [r for r in results if r.status == COMPLETED]
    rewards = [r.reward for r in completed if r.reward is not None and math.isfinite(r.reward)]
    latencies = sorted(r.latency_ms for r in results if r.status != INVALID and r.latency_ms is not None)
    categories = Counter(r.category or "unknown" for r in results if r.status != COMPLETED)
    return Summary(
        total=len(results),
        completed=len(completed),
        failed=sum(1 for r in results if r.status == FAILED),
        invalid=sum(1 for r in results if r.status == INVALID),
        passed=sum(1 for r in results if r.passed),
        pass_threshold=pass_threshold,
        reward_mean=sum(rewards) / len(rewards) if rewards else None,
        reward_min=min(rewards) if rewards else None,
        reward_max=max(rewards) if rewards else None,
        latency_p50_ms=_percentile(latencies, 50),
        latency_p95_ms=_percentile(latencies, 95),
        failures_by_category=dict(sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))),
        wall_time_s=wall_time_s,
        graded=graded,
    )


def _percentile(sorted_values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def format_summary(summary: Summary, *, title: str = "Evaluation summary") -> str:
    """The summary as an aligned text table."""

    def num(value: float | None, unit: str = "", digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}f}{unit}"

    rate = summary.pass_rate
    rows: list[tuple[str, str]] = [
        ("rows", str(summary.total)),
        ("completed", str(summary.completed)),
        ("failed", str(summary.failed)),
        ("invalid rows", str(summary.invalid)),
        (
            f"pass rate (reward >= {summary.pass_threshold:g})",
            "- (no grader)" if not summary.graded
            else "-" if rate is None else f"{rate * 100:.1f}% ({summary.passed}/{summary.total})",
        ),
        ("reward mean / min / max", "- (no grader)" if not summary.graded else
         " / ".join(num(v) for v in (summary.reward_mean, summary.reward_min, summary.reward_max))),
        ("latency p50 / p95", f"{num(summary.latency_p50_ms, ' ms', 1)} / {num(summary.latency_p95_ms, ' ms', 1)}"),
        ("wall time", f"{summary.wall_time_s:.2f} s" + (
            f" ({summary.rows_per_second:.1f} rows/s)" if summary.rows_per_second else "")),
    ]
    for category, count in summary.failures_by_category.items():
        rows.append((f"  failures: {category}", str(count)))
    width = max(len(label) for label, _ in rows)
    lines = [title, "-" * max(len(title), width + 20)]
    lines += [f"{label:<{width}}  {value}" for label, value in rows]
    return "\n".join(lines)


def format_first_errors(results: Sequence[RowResult], *, limit: int = 5, width: int = 200) -> str:
    """The first ``limit`` distinct failure messages, in row order, each with its category, first row and how many
    rows failed the same way (``""`` when no row failed). Long messages are cut to ``width`` characters."""
    distinct: dict[tuple[str, str], list[int]] = {}
    for result in sorted(results, key=lambda r: r.row_index):
        if result.status == COMPLETED:
            continue
        key = (result.category or "unknown", " ".join((result.error or "(no message)").split()))
        distinct.setdefault(key, []).append(result.row_index)
    if not distinct:
        return ""
    shown = list(distinct.items())[:limit]
    title = f"First errors ({len(shown)} of {len(distinct)} distinct):" if len(distinct) > limit else "Errors:"
    lines = [title]
    for (category, message), rows in shown:
        if len(message) > width:
            message = message[: width - 1] + "…"
        more = f" (and {len(rows) - 1} more row{'s' if len(rows) > 2 else ''})" if len(rows) > 1 else ""
        lines.append(f"  row {rows[0]}{more} [{category}] {message}")
    return "\n".join(lines)


def write_results(results: Iterable[RowResult], destination: str | Path | TextIO) -> None:
    """Write one JSON object per row (``RowResult.to_json``) to a path or an open text stream."""
    if isinstance(destination, (str, Path)):
        with open(destination, "w", encoding="utf-8") as handle:
            write_results(results, handle)
        return
    for result in results:
        destination.write(json.dumps(result.to_json(), ensure_ascii=False, default=str) + "\n")


def last_assistant_text(messages: Sequence[Any]) -> str | None:
    """Text of the last assistant message with text, in any message shape (None when there is none)."""
    from osmosis_compat.workflow.messages import last_assistant_text as text_of_last

    return text_of_last(messages) or None
