"""Driving one dataset row through a served agent, over the legacy, the 0.2.x workflow or the 0.3.8 polling
protocol.

A driver starts the agent's real app on 127.0.0.1 and the matching fake controller (``osmosis_compat.testing``)
whose model endpoint answers with the run's policy, then turns each row into that protocol's rollout request and
the controller's record into a :class:`~.report.RowResult`. Nothing is short-circuited: every model call and
callback crosses real HTTP, as in training.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .dataset import DatasetRow
from .report import COMPLETED, FAILED, RowResult, last_assistant_text

__all__ = ["RequestOptions", "Driver", "LegacyDriver", "PollingDriver", "WorkflowDriver", "driver_for"]


@dataclass(frozen=True)
class RequestOptions:
    """Per-request settings taken from the command line."""

    max_turns: int = 10
    completion_params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 300.0
    rollout_id_prefix: str = "eval"
    graded: bool = True
    """False for a workflow without a grader: the eval grades with a transcript recorder
    (:class:`~.transcripts.TranscriptRecorder`), so a finished rollout is ``completed`` with its transcript and no
    reward instead of a ``grader_error``."""

    def rollout_id(self, row: DatasetRow) -> str:
        return f"{self.rollout_id_prefix}-{row.index}"


class Driver:
    """Serves ``app`` next to a fake controller (``serving()``), then runs rows against it (``run(row)``).

    Subclasses say which controller plays the other side (:meth:`controller`), how a row is sent
    (:meth:`drive`, returning the controller's record) and what the record means (:meth:`result`).
    """

    protocol = ""
    endpoint = ""  # for error messages

    def __init__(self, app: Any, policy: Any, options: RequestOptions) -> None:
        self.app = app
        self.policy = policy
        self.options = options
        self._controller: Any = None
        self._url: str | None = None

    def controller(self) -> Any:
        raise NotImplementedError

    async def drive(self, row: DatasetRow, rollout_id: str) -> Any:
        raise NotImplementedError

    def result(self, row: DatasetRow, rollout_id: str, record: Any, latency_ms: float) -> RowResult:
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Driver]:
        """The fake controller and the agent's app, both on 127.0.0.1, for the ``async with`` block."""
        from osmosis_compat.testing import serve_app_async

        controller = self.controller()
        async with controller.serve_async():
            server = await serve_app_async(self.app)
            try:
                self._controller, self._url = controller, server.url
                yield self
            finally:
                await server.close()

    async def run(self, row: DatasetRow, rollout_id: str | None = None) -> RowResult:
        """One row as one rollout (``rollout_id``: default from the options); a refused request or a missing
        result is the row's failure, not an exception."""
        from osmosis_compat.testing import RolloutTimeout, UnexpectedStatus

        rollout_id = rollout_id or self.options.rollout_id(row)
        started = time.perf_counter()
        try:
            record = await self.drive(row, rollout_id)
        except UnexpectedStatus as exc:
            body = exc.body
            detail = body.get("detail") if isinstance(body, dict) else body
            error = f"{self.endpoint} answered HTTP {exc.status_code}: {detail}"
            return RowResult(row.index, FAILED, rollout_id, category="rejected", error=error,
                             latency_ms=_ms_since(started))
        except RolloutTimeout:
            error = f"no result within {self.options.timeout_s:g} s (raise --timeout for slow models)"
            return RowResult(row.index, FAILED, rollout_id, category="timeout", error=error,
                             latency_ms=_ms_since(started))
        return self.result(row, rollout_id, record, _ms_since(started))


class LegacyDriver(Driver):
    """Rows as ``POST /v1/rollout/init`` to a legacy app, driven by :class:`~osmosis_compat.testing.FakeTrainGate`.

    Row → ``RolloutRequest`` as upstream ``osmosis test`` (spec/legacy-protocol.md §2.17.3): messages
    ``[system, user]``, ``max_turns`` and ``completion_params`` from the options, metadata
    ``{<metadata object>, ground_truth, row_index, <extra columns>, execution_mode: "test", test_mode: true}``.
    """

    protocol = "legacy"
    endpoint = "POST /v1/rollout/init"

    def controller(self) -> Any:
        from osmosis_compat.testing import FakeTrainGate

        return FakeTrainGate(self.policy)

    @staticmethod
    def metadata(row: DatasetRow) -> dict[str, Any]:
        return {
            **(row.metadata or {}),
            "ground_truth": row.ground_truth,
            "row_index": row.index,
            **row.extra,
            "execution_mode": "test",
            "test_mode": True,
        }

    async def drive(self, row: DatasetRow, rollout_id: str) -> Any:
        return await self._controller.run_rollout(
            self._url,
            rollout_id=rollout_id,
            messages=row.messages(),
            completion_params=dict(self.options.completion_params),
            metadata=self.metadata(row),
            max_turns=self.options.max_turns,
            timeout=self.options.timeout_s,
        )

    def result(self, row: DatasetRow, rollout_id: str, record: Any, latency_ms: float) -> RowResult:
        callback = record.callback or {}
        messages = list(callback.get("final_messages") or [])
        result = RowResult(
            row_index=row.index,
            rollout_id=rollout_id,
            status=FAILED,
            reward=_float_or_none(callback.get("reward")),
            latency_ms=latency_ms,
            finish_reason=callback.get("finish_reason"),
            final_message=last_assistant_text(messages),
            messages=messages,
        )
        if callback.get("status") != "COMPLETED":
            result.category = "agent_error"
            result.error = callback.get("error_message") or f"rollout ended with status {callback.get('status')!r}"
        elif not self.options.graded:
            result.status, result.reward = COMPLETED, None  # the recorder's placeholder reward is not a score
        elif result.reward is None:
            result.category = "no_reward"
            result.error = "the agent completed without a reward (ctx.complete(..., reward=None))"
        else:
            result.status = COMPLETED
        return result


class WorkflowDriver(Driver):
    """Rows as ``POST /rollout`` to a workflow app, driven by :class:`~osmosis_compat.testing.FakeWorkflowController`.

    Row → ``RolloutInitRequest`` as the 0.2.x local eval (spec/workflow-api.md §2.13): ``initial_messages``
    ``[system, user]``, ``label = ground_truth``, ``metadata`` = the row's metadata object (or none). Always
    graded: the reward is the grader callback's (the mean when a workflow produces several samples).
    """

    protocol = "workflow"
    endpoint = "POST /rollout"

    def controller(self) -> Any:
        from osmosis_compat.testing import FakeWorkflowController

        return FakeWorkflowController(self.policy)

    async def drive(self, row: DatasetRow, rollout_id: str) -> Any:
        return await self._controller.run_rollout(
            self._url,
            rollout_id=rollout_id,
            initial_messages=row.messages(),
            label=row.ground_truth,
            metadata=row.metadata,
            timeout=self.options.timeout_s,
        )

    def result(self, row: DatasetRow, rollout_id: str, record: Any, latency_ms: float) -> RowResult:
        completion = record.completion or {}
        grader = record.grader or {}
        samples = grader.get("samples") if isinstance(grader.get("samples"), dict) else {}
        per_sample = {
            sid: {"reward": _float_or_none((s or {}).get("reward")), "messages": list((s or {}).get("messages") or [])}
            for sid, s in samples.items()
        }
        first = next(iter(per_sample.values()), {"messages": []})
        rewards = [s["reward"] for s in per_sample.values()]
        result = RowResult(
            row_index=row.index,
            rollout_id=rollout_id,
            status=FAILED,
            latency_ms=latency_ms,
            messages=first["messages"],
            final_message=last_assistant_text(first["messages"]),
            samples=per_sample or None,
        )
        if completion.get("status") != "success":
            result.category = completion.get("err_category") or "agent_error"
            result.error = completion.get("err_message") or "the workflow failed without a message"
        elif not self.options.graded and grader.get("status") == "success":
            result.status = COMPLETED  # transcripts recorded, nothing scored (no grader)
            for sample in per_sample.values():
                sample["reward"] = None
        elif grader.get("status") != "success":
            result.category = "grader_error"
            result.error = grader.get("err_message") or (
                "the grader callback reported failure without a message (no grader configured, or nothing to grade)"
            )
        elif not rewards or any(r is None for r in rewards):
            result.category = "grader_error"
            result.error = "the grader left a sample without a reward"
        else:
            result.status = COMPLETED
            result.reward = sum(rewards) / len(rewards)  # type: ignore[arg-type]
        return result


class PollingDriver(Driver):
    """Rows as 0.3.8 polling rollouts, driven by :class:`~osmosis_compat.testing.FakePollingController` — what
    today's Osmosis controller does: ``POST /rollout`` (202 + lease), then long-polls of
    ``GET /rollout/{id}/result`` until the final result; model calls on the rollout's own URL and bearer.

    Row → ``RolloutInitRequest`` as 0.3.8's local eval: ``initial_messages`` ``[system, user]``,
    ``label = ground_truth``, ``metadata`` = the row's metadata object, ``extra_fields = {"row_index": i}``. Any
    agent speaks it natively (a legacy loop sees the label as ``metadata["ground_truth"]``).
    """

    protocol = "polling"
    endpoint = "POST /rollout"

    def controller(self) -> Any:
        from osmosis_compat.testing import FakePollingController

        return FakePollingController(self.policy)

    async def drive(self, row: DatasetRow, rollout_id: str) -> Any:
        return await self._controller.run_rollout(
            self._url,
            rollout_id=rollout_id,
            initial_messages=row.messages(),
            label=row.ground_truth,
            metadata=row.metadata,
            extra_fields={"row_index": row.index},
            timeout=self.options.timeout_s,
        )

    def result(self, row: DatasetRow, rollout_id: str, record: Any, latency_ms: float) -> RowResult:
        final = record.result
        sample = final.get("sample") or {}
        messages = list(sample.get("messages") or [])
        result = RowResult(
            row_index=row.index,
            rollout_id=rollout_id,
            status=FAILED,
            latency_ms=latency_ms,
            messages=messages,
            final_message=last_assistant_text(messages),
        )
        if final.get("status") != "success":
            result.category = final.get("err_category") or ("cancelled" if final.get("status") == "cancelled" else "agent_error")
            result.error = final.get("err_message") or f"the rollout ended with status {final.get('status')!r}"
        elif not self.options.graded:
            result.status = COMPLETED  # transcript recorded, nothing scored (no grader)
        elif _float_or_none(sample.get("reward")) is None:
            result.category = "grader_error"
            result.error = "the rollout succeeded without a reward"
        else:
            result.status, result.reward = COMPLETED, _float_or_none(sample.get("reward"))
        return result


def driver_for(protocol: str, app: Any, policy: Any, options: RequestOptions) -> Driver:
    """The driver speaking ``protocol`` (``"legacy"``, ``"workflow"`` or ``"polling"``)."""
    drivers = {"legacy": LegacyDriver, "workflow": WorkflowDriver, "polling": PollingDriver}
    if protocol not in drivers:
        raise ValueError(f"unknown protocol {protocol!r}")
    return drivers[protocol](app, policy, options)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
