"""Migrated plain programs run on the REAL osmosis-ai (issue 10 items 3 and 5, for ``strands-agent`` /
``openai-agent``): migrated for ``--target 0.2`` and ``--target 0.3``, completed with the grader their OM195/OM295
TODO asks for, served by the real ``create_rollout_server`` / ``LocalBackend`` of osmosis-ai 0.2.31 and 0.3.8 (side
venvs, no osmosis-compat on that interpreter's path: the rewritten code depends on ``osmosis_ai`` only) and driven by
the project's fake controllers (FakeWorkflowController for 0.2.31, FakePollingController for 0.3.8) with the
scripted policy.
"""

from __future__ import annotations

import pytest

from codemods.driver import migrate_source
from tests.codemods._fixtures import FIXTURES
from tests.upstream.servers import UpstreamServer
from tests.upstream.venvs import require_upstream

pytestmark = pytest.mark.upstream

RELEASE = {"0.2": "0.2.31", "0.3": "0.3.8"}
CASES = [("What is 2 + 3?", "5"), ("What is 6 * 7?", "41")]  # a right and a wrong label

GRADER = {
    "0.2": '''

class LabelGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in _answer(sample.messages) else 0.0)
''',
    "0.3": '''

class LabelGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        ctx.set_reward(1.0 if ctx.label and ctx.label in _answer(ctx.sample.messages) else 0.0)
''',
}
COMMON = '''

from osmosis_ai.rollout import Grader, GraderContext
from osmosis_ai.rollout.backend.local import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server


def _answer(messages) -> str:
    for message in reversed(list(messages)):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str) and content:
            return content
        texts = [p.get("text", "") for p in content or [] if isinstance(p, dict)]
        if any(texts):
            return " ".join(texts)
    return ""
'''
SERVING = '''

app = create_rollout_server(backend=LocalBackend(workflow={workflow}, grader=LabelGrader))
'''

PROGRAMS = [
    ("strands_agent/calc_script.py", "CalcScriptWorkflow", ("0.2", "0.3")),  # module-level script, BedrockModel
    ("openai_agent/litellm_model.py", "MainWorkflow", ("0.2", "0.3")),  # LitellmModel → placeholder, one session
    # an agent kept on an object, run in a thread (0.3: refused — an object may build its agent more than once)
    ("strands_agent/calc_class.py", "MainWorkflow", ("0.2",)),
    # 0.3: three solvers in a gather, then a checker: one session, on the checker (the run the workflow ends with);
    # the solvers run on the rollout model without one (a sample source is registered before their calls). The
    # scripted policy answers the checker's "Answers: …" with "OK." — a label only the checker's conversation earns
    ("openai_agent/calc_chain_gather.py", "MainWorkflow", ("0.3",)),
]
# labels per program (default: CASES): what the sample's last answer must contain
LABELS = {"openai_agent/calc_chain_gather.py": [("What is 2 + 3?", "OK."), ("What is 6 * 7?", "41")]}
CASES_BY_TARGET = [(f, w, t) for f, w, targets in PROGRAMS for t in targets]


async def _rewards(path, target: str, cases=CASES) -> list:
    from osmosis_compat.testing import FakePollingController, FakeWorkflowController

    rewards = []
    with UpstreamServer(path, RELEASE[target]) as server:
        if target == "0.2":
            with FakeWorkflowController().serve() as controller:
                for i, (prompt, truth) in enumerate(cases):
                    record = await controller.run_rollout(
                        server.url, rollout_id=f"plain-{i}", label=truth, timeout=60,
                        initial_messages=[{"role": "user", "content": prompt}])
                    assert len(record.rewards) == 1, record
                    rewards.append(next(iter(record.rewards.values())))
        else:
            controller = FakePollingController()
            with controller.serve():
                for i, (prompt, truth) in enumerate(cases):
                    record = await controller.run_rollout(
                        server.url, rollout_id=f"plain-{i}", label=truth,
                        initial_messages=[{"role": "user", "content": prompt}])
                    assert record.status == "success", record
                    rewards.append(record.reward)
            await controller.aclose()
    return rewards


@pytest.mark.parametrize("fixture, workflow, target", CASES_BY_TARGET, ids=[f"{f}-{t}" for f, _, t in CASES_BY_TARGET])
async def test_migrated_plain_program_earns_its_rewards_on_the_real_release(tmp_path, fixture, workflow, target):
    require_upstream(RELEASE[target])
    result = migrate_source((FIXTURES / fixture).read_text(), filename=fixture.rsplit("/", 1)[1], target=target)
    assert f"class {workflow}(AgentWorkflow)" in result.new_text
    assert "osmosis_compat" not in result.new_text
    todo = next(t for t in result.todos if t.code in ("OM195", "OM295"))
    assert ("ctx.set_reward" in todo.reason) == (target == "0.3")  # the grader TODO speaks the target's API
    if target == "0.3":
        assert "OsmosisMemorySession(name=" not in result.new_text  # 0.3 sessions have no name
    path = tmp_path / f"plain_{workflow.lower()}_{target.replace('.', '')}.py"
    path.write_text(result.new_text + COMMON + GRADER[target] + SERVING.format(workflow=workflow))
    assert await _rewards(path, target, LABELS.get(fixture, CASES)) == [1.0, 0.0]


def test_a_target_03_workflow_gives_its_one_session_to_the_run_it_ends_with():
    # before: refused ("needs 3 sessions"); 0.3 keeps one sample per rollout, so one session, created first
    result = migrate_source((FIXTURES / "openai_agent" / "calc_chain_gather.py").read_text(), target="0.3")
    assert "class MainWorkflow" in result.new_text and result.new_text.count("OsmosisMemorySession()") == 1
    assert result.new_text.count("session=session") == 1
    checker_run = next(line for line in result.new_text.splitlines() if "Runner.run(checker" in line)
    assert "session=session" in checker_run
    assert not [t for t in result.todos if t.code == "OM290"]


