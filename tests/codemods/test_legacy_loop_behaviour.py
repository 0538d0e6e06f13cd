"""Issue 5 item 5 for ``legacy-loop``: a migrated loop earns the rewards the original earned.

The original module is served as it was (``create_app``, legacy protocol) and driven by ``FakeTrainGate``; the
migrated text of the same module is imported from a temp file and its ``app`` (``create_rollout_server``, workflow
protocol) is driven by ``FakeWorkflowController`` — both with the deterministic ``ScriptedPolicy``. The rewrite
(seed example: Strands tools, turn limit, grader) and the wrap (adapter) are both checked.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest

from codemods.driver import migrate_source
from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, serve_app
from tests.codemods._fixtures import FIXTURES

SEED = FIXTURES / "legacy_loop" / "seed_complete_example.py"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "legacy" / "calculator_agent.py"
_counter = itertools.count()

# (prompt, ground truth): right answers, a wrong label, a multi-step chain
SYSTEM = {"role": "system", "content": "You are a calculator. Use the tools."}
CASES = [
    ("What is 2 + 3?", "5"),
    ("Compute (2 + 3) * 4", "20"),
    ("What is 6 * 7?", "41"),
    ([SYSTEM, {"role": "user", "content": "What is 3 * 3?"}], "9"),
]


def _messages(prompt) -> list:
    return prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]


def _load(text: str, tmp_path: Path):
    name = f"_migrated_legacy_loop_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def _legacy_rewards(module, cases, max_turns: int = 10) -> list:
    rewards = []
    with FakeTrainGate().serve() as gate, serve_app(module.app) as server:
        for i, (prompt, truth) in enumerate(cases):
            record = await gate.run_rollout(
                server.url, rollout_id=f"legacy-{i}", messages=_messages(prompt),
                metadata={"ground_truth": truth}, max_turns=max_turns,
            )
            assert record.status == "COMPLETED", record.callback
            rewards.append(record.reward)
    return rewards


async def _workflow_rewards(module, cases) -> list:
    rewards = []
    with FakeWorkflowController().serve() as controller, serve_app(module.app) as server:
        for i, (prompt, truth) in enumerate(cases):
            record = await controller.run_rollout(
                server.url, rollout_id=f"wf-{i}", initial_messages=_messages(prompt), label=truth,
            )
            assert len(record.rewards) == 1, record
            rewards.append(next(iter(record.rewards.values())))
    return rewards


@pytest.mark.parametrize("strategy", ["auto", "wrap"])
async def test_migrated_seed_example_earns_the_same_rewards(tmp_path, strategy):
    text = SEED.read_text()
    result = migrate_source(text, strategy=strategy)
    assert ("OM301" if strategy == "auto" else "OM302") in {e.code for e in result.edits}
    original = _load(text, tmp_path)
    migrated = _load(result.new_text, tmp_path)
    expected = await _legacy_rewards(original, CASES)
    assert expected == [1.0, 1.0, 0.0, 1.0]  # the cases exercise both outcomes
    assert await _workflow_rewards(migrated, CASES) == expected


async def test_rewritten_workflow_keeps_tool_names_schemas_and_turn_limit(tmp_path):
    migrated = _load(migrate_source(SEED.read_text()).new_text, tmp_path)
    original_tools = {t["function"]["name"]: t["function"] for t in migrated.TOOLS}
    for fn in (migrated.add, migrated.multiply):
        spec = fn.tool_spec
        assert spec["description"] == original_tools[spec["name"]]["description"]
        assert spec["inputSchema"]["json"] == original_tools[spec["name"]]["parameters"]
    # one model call allowed: the tool runs, the loop stops before answering — as the legacy loop with max_turns=1
    migrated.calculator_agent_config.max_turns = 1
    with FakeWorkflowController().serve() as controller, serve_app(migrated.app) as server:
        record = await controller.run_rollout(
            server.url, rollout_id="one-turn", initial_messages=[{"role": "user", "content": "What is 2 + 3?"}],
            label="5",
        )
    assert len(controller.chat_requests("one-turn")) == 1
    assert list(record.rewards.values()) == [0.0]
    # the original stops after that model call too, then crashes in its reward (`ground_truth in None`: the last
    # assistant message is a tool call); the grader reads the last assistant *text* and scores 0.0 (docs/migrate.md)
    original = _load(SEED.read_text(), tmp_path)
    with FakeTrainGate().serve() as gate, serve_app(original.app) as server:
        legacy = await gate.run_rollout(
            server.url, rollout_id="one-turn", messages=[{"role": "user", "content": "What is 2 + 3?"}],
            metadata={"ground_truth": "5"}, max_turns=1,
        )
    assert len(gate.chat_requests("one-turn")) == 1
    assert legacy.status == "ERROR" and "NoneType" in legacy.callback["error_message"]


async def test_migrated_examples_legacy_agent_earns_the_same_rewards(tmp_path):
    text = EXAMPLE.read_text()
    result = migrate_source(text)
    original = _load(text, tmp_path)
    migrated = _load(result.new_text, tmp_path)
    cases = [*CASES, ("What is 8 / 2?", "4")]
    expected = await _legacy_rewards(original, cases)
    assert await _workflow_rewards(migrated, cases) == expected


async def test_rewritten_variants_pydantic_dispatcher_sync_tools_earn_the_same_rewards(tmp_path):
    # pydantic schemas, an if/elif dispatcher with positional/keyword argument passing, sync tools, range(6)
    text = (FIXTURES / "legacy_loop" / "calculator_variants.py").read_text()
    result = migrate_source(text)
    assert "OM301" in {e.code for e in result.edits}
    original = _load(text, tmp_path)
    migrated = _load(result.new_text, tmp_path)
    expected = await _legacy_rewards(original, CASES)
    assert expected == [1.0, 1.0, 0.0, 1.0]
    assert await _workflow_rewards(migrated, CASES) == expected
