"""Smoke test that migrated code really runs: fixtures migrated by osmosis-migrate are served as workflows and
driven over the 0.2.x workflow protocol by the fake controller with the scripted policy (real uvicorn, real
Strands / OpenAI Agents). The behaviour-equivalence suite against the originals lives with the examples."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from codemods.driver import migrate_source
from tests.codemods._fixtures import FIXTURES

# a grader and the serving lines: the plain scripts had neither (docs/migrate.md, "Serving lines")
SERVING = '''

from osmosis_ai.rollout import Grader, GraderContext, LocalBackend, create_rollout_server


class LastMessageHasFive(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            ctx.set_sample_reward(sample_id, 1.0 if "5" in str(sample.messages[-1]) else 0.0)


backend = LocalBackend(workflow={workflow}, grader=LastMessageHasFive)
app = create_rollout_server(backend=backend)
'''


def _load_migrated(tmp_path, fixture: str, workflow: str):
    text = migrate_source((FIXTURES / fixture).read_text()).new_text + SERVING.format(workflow=workflow)
    name = "migrated_" + fixture.replace("/", "_").removesuffix(".py")
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.backend.artifact_root = tmp_path / "artifacts"
    return module


@pytest.mark.parametrize(
    "fixture, workflow",
    [
        ("strands_agent/simple.py", "SolveWorkflow"),  # module-level model + agent moved into run()
        ("strands_agent/sync_tools_script.py", "RunOnceWorkflow"),  # asyncio.run(agent.invoke_async(...))
        ("openai_agent/litellm_model.py", "MainWorkflow"),  # LitellmModel → placeholder, session added
    ],
)
async def test_migrated_fixture_earns_its_reward(tmp_path, fixture, workflow):
    from osmosis_compat.testing import FakeWorkflowController, serve_app

    module = _load_migrated(tmp_path, fixture, workflow)
    with FakeWorkflowController().serve() as controller, serve_app(module.app) as server:
        record = await controller.run_rollout(
            server.url,
            rollout_id=f"migrated-{workflow}",
            initial_messages=[{"role": "user", "content": "What is 2 + 3?"}],
            label="5",
        )
    assert record.completion is not None and record.completion.get("status") == "success", record.completion
    assert list(record.rewards.values()) == [1.0], record.grader
    assert record.chat_requests  # the model calls went to the controller, not to a fixed model
