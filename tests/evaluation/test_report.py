"""Summary arithmetic, the table, the JSONL writer and the progress output."""

from __future__ import annotations

import io
import json

from osmosis_compat.evaluation.progress import Progress
from osmosis_compat.evaluation.report import RowResult, format_summary, summarize, write_results


def results() -> list[RowResult]:
    return [
        RowResult(0, "completed", reward=1.0, passed=True, latency_ms=10.0),
        RowResult(1, "completed", reward=0.0, latency_ms=30.0),
        RowResult(2, "completed", reward=0.5, latency_ms=20.0),
        RowResult(3, "failed", category="agent_error", error="boom", latency_ms=40.0),
        RowResult(4, "failed", category="agent_error", error="boom", latency_ms=50.0),
        RowResult(5, "invalid", category="invalid_row", error="missing column 'user_prompt'"),
    ]


def test_summary_counts_rewards_latency_and_categories() -> None:
    summary = summarize(results(), pass_threshold=1.0, wall_time_s=2.0)
    assert (summary.total, summary.completed, summary.failed, summary.invalid, summary.passed) == (6, 3, 2, 1, 1)
    assert summary.pass_rate == 1 / 6
    assert (summary.reward_mean, summary.reward_min, summary.reward_max) == (0.5, 0.0, 1.0)
    assert summary.latency_p50_ms == 30.0 and summary.latency_p95_ms == 50.0  # nearest rank over 5 rollouts
    assert summary.failures_by_category == {"agent_error": 2, "invalid_row": 1}
    assert summary.rows_per_second == 3.0
    table = format_summary(summary)
    assert "pass rate (reward >= 1)  16.7% (1/6)" in table
    assert "failures: agent_error" in table and "0.500 / 0.000 / 1.000" in table


def test_empty_run_summary_has_no_numbers() -> None:
    summary = summarize([], pass_threshold=0.5, wall_time_s=0.0)
    assert summary.pass_rate is None and summary.reward_mean is None and summary.latency_p50_ms is None
    assert "pass rate (reward >= 0.5)  -" in format_summary(summary)


def test_results_jsonl_one_object_per_row() -> None:
    out = io.StringIO()
    write_results(results()[:1] + [RowResult(1, "completed", reward=1.0, samples={"s": {"reward": 1.0}})], out)
    first, second = [json.loads(line) for line in out.getvalue().splitlines()]
    assert first["row_index"] == 0 and first["status"] == "completed" and "samples" not in first
    assert set(first) >= {"reward", "error", "category", "latency_ms", "final_message", "messages", "rollout_id"}
    assert second["samples"] == {"s": {"reward": 1.0}}


def test_progress_plain_lines_when_not_a_tty_and_a_bar_on_a_tty() -> None:
    plain = io.StringIO()
    progress = Progress(2, stream=plain, tty=False)
    for result in results()[:1] + results()[3:4]:
        progress.update(result)
    assert plain.getvalue().splitlines() == [
        "[1/2] row 0: completed reward=1 (pass) 10 ms",
        "[2/2] row 3: failed [agent_error] boom 40 ms",
    ]
    bar = io.StringIO()
    progress = Progress(2, stream=bar, tty=True)
    progress.update(results()[0])
    progress.close()
    assert bar.getvalue().startswith("\r[###############...............] 1/2 rows  passed 1  failed 0")
    quiet = io.StringIO()
    progress = Progress(1, stream=quiet, quiet=True)
    progress.update(results()[0])
    assert quiet.getvalue() == ""
