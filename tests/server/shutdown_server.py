"""A rollout server run as its own process, so tests can stop it with a real SIGTERM (uvicorn's signal handling).

``python tests/server/shutdown_server.py legacy|workflow PORT`` serves an agent that finishes at once (no model
call) with a 0.2 s drain: whatever a test catches in flight at SIGTERM is a callback, not the agent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from osmosis_compat.legacy import RolloutAgentLoop, RolloutContext, RolloutRequest, RolloutResult  # noqa: E402


class InstantLoop(RolloutAgentLoop):
    """Completes at once, reward 1.0: its COMPLETED callback is the only request it makes."""

    name = "instant"

    def get_tools(self, request: RolloutRequest) -> list:
        return []

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        return ctx.complete(list(ctx.request.messages), reward=1.0)


def build_app(kind: str) -> Any:
    """The app under test: ``legacy`` (``create_app``) or ``workflow`` (``create_rollout_server``)."""
    if kind == "legacy":
        from osmosis_compat.server.legacy_app import create_app

        return create_app(InstantLoop(), drain_timeout_seconds=0.2)
    from osmosis_compat.server.workflow_app import create_rollout_server
    from osmosis_compat.workflow import AgentWorkflowConfig, ConcurrencyConfig, LocalBackend
    from tests.server.polling_agents import SteeredGrader, SteeredWorkflow

    config = AgentWorkflowConfig(name="steered", concurrency=ConcurrencyConfig(max_concurrent=None))
    backend = LocalBackend(workflow=SteeredWorkflow, workflow_config=config, grader=SteeredGrader)
    return create_rollout_server(backend=backend, drain_timeout_seconds=0.2)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
