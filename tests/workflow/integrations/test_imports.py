"""Import costs and laziness, checked in fresh interpreters: nothing heavy loads before it is used, and litellm
is not loaded by rollouts that do not need it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.workflow.integrations.support import ROOT

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1"}


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code).strip()], cwd=ROOT, env=env or ENV, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_workflow_surface_imports_no_framework() -> None:
    out = run_python(
        """
        import sys
        from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend, create_rollout_server, RolloutContext
        import osmosis_compat.workflow.integrations
        print(sorted(m for m in ("strands", "agents", "litellm", "openai") if m in sys.modules))
        """
    )
    assert out == "[]"


def test_rollouts_never_load_litellm_and_litellm_resolves_on_use() -> None:
    out = run_python(
        """
        import asyncio, pathlib, sys, tempfile
        import osmosis_compat.workflow.integrations.strands as ours
        import osmosis_compat.workflow.integrations.openai_agents
        import strands.models.litellm as sm
        import agents.extensions.models.litellm_model as am
        assert "litellm" not in sys.modules, "litellm loaded at import"
        assert issubclass(ours.OsmosisRolloutModel, sm.LiteLLMModel)

        from osmosis_compat.testing import FakeWorkflowController
        from tests.workflow.integrations.support import MODERN, dataset_rows, load_module, row_messages, serve_entrypoint

        async def main():
            row = dataset_rows()[0]
            with FakeWorkflowController().serve() as controller:
                for name in ("strands_calculator", "openai_agents_calculator"):
                    module = load_module(MODERN / f"{name}.py", name)
                    with serve_entrypoint(module, pathlib.Path(tempfile.mkdtemp())) as server:
                        record = await controller.run_rollout(
                            server.url, rollout_id=name, initial_messages=row_messages(row), label=row["ground_truth"])
                        assert record.rewards == {"calculator": 1.0}, record.grader

        asyncio.run(main())
        assert "litellm" not in sys.modules, "a rollout loaded litellm"

        import litellm                                   # a later user import gets the real package
        assert not isinstance(litellm, type(sm.litellm)), "stand-in leaked into sys.modules"
        from osmosis_compat.workflow.integrations._deferred_litellm import load_litellm
        assert load_litellm() is litellm
        assert sm.litellm is litellm and am.litellm is litellm
        assert sm.ContextWindowExceededError is litellm.exceptions.ContextWindowExceededError
        assert sm.supports_response_schema is litellm.utils.supports_response_schema
        assert litellm.suppress_debug_info is True
        print("ok")
        """
    )
    assert out == "ok"
