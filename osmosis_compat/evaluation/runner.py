"""The local runner behind ``osmosis-compat eval``: dataset rows through a served agent, concurrently.

:func:`run_evaluation` serves one :class:`~osmosis_compat.server.agents.AgentSpec` on the chosen protocol
(its own, or the other one through the adapters), drives every usable row through the matching fake controller
with at most ``concurrency`` rollouts in flight, and returns one :class:`~.report.RowResult` per row — unusable
rows included, as ``invalid`` results, so a bad row never stops the run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .dataset import DatasetItem, DatasetRow, RowError
from .drivers import RequestOptions, driver_for
from .report import COMPLETED, INVALID, RowResult, Summary, summarize

__all__ = ["EvalOutcome", "run_evaluation"]

logger = logging.getLogger("osmosis_compat.evaluation")

_DRAIN_S = 0.5


@dataclass
class EvalOutcome:
    """Rows in dataset order, their summary, and which protocol served the agent."""

    results: list[RowResult]
    summary: Summary
    protocol: str


async def run_evaluation(
    agent: Any,
    items: Sequence[DatasetItem],
    *,
    protocol: str,
    policy: Any,
    options: RequestOptions | None = None,
    concurrency: int = 4,
    pass_threshold: float = 1.0,
    on_result: Callable[[RowResult], None] | None = None,
) -> EvalOutcome:
    """Run ``items`` through ``agent`` (an ``AgentSpec``) served on ``protocol`` with ``policy`` as the model.

    Setup failures (the app cannot be built, the server does not start) raise; everything that goes wrong with
    one row becomes that row's result. ``on_result`` is called as each row finishes (for progress output).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    options = options or RequestOptions()
    # Every row is finished or given up on when the server stops: only a timed-out rollout can still run, and
    # waiting the serving default (10 s) for it would only delay the summary.
    # Every app answers the polling protocol beside its own: a polling run serves the agent natively.
    app = agent.build_app(agent.kind if protocol == "polling" else protocol, drain_timeout_seconds=_DRAIN_S)
    driver = driver_for(protocol, app, policy, options)
    results: dict[int, RowResult] = {}
    started = time.perf_counter()

    def finish(result: RowResult) -> None:
        result.passed = result.status == COMPLETED and result.reward is not None and result.reward >= pass_threshold
        results[result.row_index] = result
        if on_result is not None:
            on_result(result)

    for item in items:
        if isinstance(item, RowError):
            finish(RowResult(row_index=item.index, status=INVALID, category="invalid_row", error=item.message))

    rows = [item for item in items if isinstance(item, DatasetRow)]
    async with driver.serving():
        slots = asyncio.Semaphore(concurrency)

        async def one(row: DatasetRow) -> None:
            async with slots:
                try:
                    result = await driver.run(row)
                except Exception as exc:  # the runner must report, not crash, whatever one row does
                    logger.exception("row %d: runner error", row.index)
                    result = RowResult(
                        row_index=row.index,
                        status="failed",
                        rollout_id=options.rollout_id(row),
                        category="runner_error",
                        error=f"{type(exc).__name__}: {exc}",
                    )
            finish(result)

        await asyncio.gather(*(one(row) for row in rows))
    wall = time.perf_counter() - started
    ordered = [results[index] for index in sorted(results)]
    return EvalOutcome(
        results=ordered,
        summary=summarize(ordered, pass_threshold=pass_threshold, wall_time_s=wall, graded=options.graded),
        protocol=protocol,
    )
