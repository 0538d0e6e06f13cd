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
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env or ENV, capture_output=True, text=True,
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


def test_integration_modules_defer_litellm_and_resolve_it_on_use() -> None:
    out = run_python(
        """
        import sys
        import osmosis_compat.workflow.integrations.strands as ours
        import osmosis_compat.workflow.integrations.openai_agents
        import strands.models.litellm as sm
        import agents.extensions.models.litellm_model as am
        assert "litellm" not in sys.modules, "litellm loaded at import"
        assert issubclass(ours.OsmosisRolloutModel, sm.LiteLLMModel)
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


def test_litellm_imported_first_is_used_as_is() -> None:
    out = run_python(
        """
        import litellm
        import osmosis_compat.workflow.integrations.strands
        import strands.models.litellm as sm
        assert sm.litellm is litellm
        assert sm.ContextWindowExceededError is litellm.exceptions.ContextWindowExceededError
        print(litellm.suppress_debug_info)
        """
    )
    assert out == "True"


def test_rollouts_of_both_examples_never_load_litellm() -> None:
    out = run_python(
        """
        import asyncio, sys
        sys.path.insert(0, "tests/workflow/integrations/..")
        from tests.workflow.integrations.support import MODERN, load_module, serve_entrypoint, row_messages, dataset_rows
        from osmosis_compat.testing import FakeWorkflowController
        import tempfile, pathlib

        async def main():
            row = dataset_rows()[0]
            with FakeWorkflowController().serve() as controller:
                for name in ("strands_calculator", "openai_agents_calculator"):
                    module = load_module(MODERN / f"{name}.py", name)
                    with serve_entrypoint(module, pathlib.Path(tempfile.mkdtemp())) as server:
                        record = await controller.run_rollout(
                            server.url, rollout_id=name, initial_messages=row_messages(row), label=row["ground_truth"])
                        assert record.rewards == {"calculator": 1.0}, record.grader
            print("litellm" in sys.modules)

        asyncio.run(main())
        """
    )
    assert out == "False"


def test_tracing_is_disabled_on_import_unless_configured() -> None:
    env = {k: v for k, v in ENV.items() if k != "OPENAI_AGENTS_DISABLE_TRACING"}
    probe = """
        {setup}
        import osmosis_compat.workflow.integrations.openai_agents
        from agents.tracing import get_trace_provider
        provider = get_trace_provider()
        provider._refresh_disabled_flag()
        print(provider._disabled)
        """
    assert run_python(probe.format(setup=""), env) == "True"
    assert run_python(probe.format(setup=""), {**env, "OPENAI_AGENTS_DISABLE_TRACING": "0"}) == "False"
    explicit = "from agents import set_tracing_disabled; set_tracing_disabled(False)"
    assert run_python(probe.format(setup=explicit), env) == "False"
    custom = (
        "from agents import set_trace_processors\n"
        "from agents.tracing.processor_interface import TracingProcessor\n"
        "class Mine(TracingProcessor):\n"
        "    def on_trace_start(self, t): pass\n    def on_trace_end(self, t): pass\n"
        "    def on_span_start(self, s): pass\n    def on_span_end(self, s): pass\n"
        "    def shutdown(self): pass\n    def force_flush(self): pass\n"
        "set_trace_processors([Mine()])"
    )
    assert run_python(probe.format(setup=custom), env) == "False"
